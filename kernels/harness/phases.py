"""The two dynamic phases of an evaluation, each in fresh sandbox processes used once.

**Correctness**: every small case twice (NaN-poisoned outputs, then random finite ones and
another heap perturbation: the bits must agree), then every large case (each typical shape;
the timed one on every distribution) reordered by a secret permutation and checked on a
secret sample of its independent positions.

**Timing**: the candidate's process and one process per baseline take turns, call for call,
on the same inputs (:func:`kernels.harness.timing.interleave`). Before every candidate call
its inputs are reordered again by a secret permutation (all of them for a compute-bound
workload, a secret eighth for a memory-bound one) and its outputs poisoned; after it, its
guard words, the runner's report of the state it left, and a secret sample of its outputs
are checked against the reference, and a few secretly chosen calls in full.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kernels.harness import calm
from kernels.harness import cases as C
from kernels.harness.arena import POISON_WORD, Arena
from kernels.harness.process import busy_threads
from kernels.harness.verdicts import reply_problem
from kernels.harness.verify import compare


@dataclass
class Ctx:
    """What both phases need: the workload, the target, the runnable candidate, settings."""

    wl: object
    tgt: object
    runnable: object
    params: dict
    settings: object
    tol: object
    box: object
    rng: np.random.Generator
    threads_declared: int | None = None


@dataclass
class PhaseResult:
    verdict: tuple[str, str] | None = None
    rows: list = field(default_factory=list)
    details: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    samples: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)


def _poison(arr: np.ndarray, rng, streams=None) -> None:
    word = 0x7FC00000 | int(rng.integers(1, 1 << 22)) if rng is not None else POISON_WORD
    raw = arr.reshape(-1).view(np.uint32)
    if streams is not None and raw.flags.c_contiguous:
        streams.fill(raw, word)
    else:
        raw.fill(word)


def _scribble(arr: np.ndarray, rng) -> None:
    """Fresh uniform garbage in [-1000, 1000) over an output before a call: drawn as float32
    straight into the buffer (a float64 draw and a cast cost 10x as much on a 64 MB output,
    a fifth of a whole softmax evaluation)."""
    if arr.dtype == np.float32 and arr.flags.c_contiguous:
        flat = arr.reshape(-1)
        rng.random(out=flat, dtype=np.float32)
        flat *= np.float32(2e3)
        flat -= np.float32(1e3)
    else:
        arr[...] = rng.uniform(-1e3, 1e3, arr.shape).astype(np.float32)


# --------------------------------------------------------------------------- correctness

def correctness(ctx: Ctx, small: list[C.Case], large: list[C.Case]) -> PhaseResult:
    wl, out = ctx.wl, PhaseResult()
    in_shapes, out_shapes = {}, {}
    for case in small:
        for name, arr in case.inputs.items():
            in_shapes[f"{case.id}:{name}"] = arr.shape
        for name, shp in C.out_shapes(wl, case.shape).items():
            out_shapes[f"{case.id}:{name}"] = shp
    slots = {}   # a large case's shape → its buffers' prefix (one slot per shape, exact size)
    for case in large:
        prefix = slots.setdefault(case.shape.label(), f"L{len(slots)}")
        for name, arr in case.view.base.inputs.items():
            in_shapes[f"{prefix}:{name}"] = arr.shape
        for name, shp in C.out_shapes(wl, case.shape).items():
            out_shapes[f"{prefix}:{name}"] = shp
    with Arena("inputs", in_shapes) as inputs, Arena("outputs", out_shapes) as outputs:
        for case in small:
            for name, arr in case.inputs.items():
                inputs.array(f"{case.id}:{name}")[...] = arr
        proc = ctx.tgt.start(ctx.runnable, inputs=inputs, outputs=outputs, box=ctx.box, settings=ctx.settings,
                             workload=wl, params=ctx.params)
        out.details["isolation"] = list(getattr(proc, "isolation", []))
        try:
            if not proc.ready.ok:
                out.verdict = _start_problem(proc, "while loading the kernel", inputs, outputs)
                return out
            records = {}
            for case in small:
                records[case.id] = rec = _run_twice(ctx, proc, case, f"{case.id}:", inputs, outputs)
                if rec.get("verdict"):
                    out.verdict = rec["verdict"]
                    return out
            for case in large:
                prefix = slots[case.shape.label()]
                case.view.write_inputs({n: inputs.array(f"{prefix}:{n}") for n in case.view.base.inputs})
                records[case.id] = rec = _run_twice(ctx, proc, case, f"{prefix}:", inputs, outputs)
                if rec.get("verdict"):
                    out.verdict = rec["verdict"]
                    return out
        finally:
            exit_ = proc.close()
            out.details.update(_exit_details(exit_))
    out.verdict = _judge(wl, small + large, records, ctx.tol)
    out.rows = _rows(small + large, records)
    return out


def _run_twice(ctx: Ctx, proc, case: C.Case, prefix: str, inputs: Arena, outputs: Arena) -> dict:
    wl = ctx.wl
    names = list(C.out_shapes(wl, case.shape))
    buffers = {n: outputs.array(prefix + n) for n in names}
    tokens = ctx.tgt.call_tokens(wl, case.shape, case.scalars if case.view is None else case.view.base.scalars,
                                 inputs={n: inputs.offset(prefix + n) for n in
                                         (case.inputs if case.view is None else case.view.base.inputs)},
                                 outputs={n: outputs.offset(prefix + n) for n in names}, params=ctx.params)
    runs, problems = [], []
    for attempt, perturb in enumerate((0x5A, 0xC3)):
        for arr in buffers.values():
            _poison(arr, ctx.rng) if attempt == 0 else _scribble(arr, ctx.rng)
        reply = proc.call(tokens, perturb=perturb, ncalls=1, nargs=len(wl.args))
        where = f" (in case {case.label()}, call {attempt + 1})"
        bad = reply_problem(reply, proc, when="during correctness checks", where=where, inputs=inputs,
                            outputs=outputs)
        if bad:
            return {"verdict": bad}
        state = ctx.tgt.call_problems(reply, proc, inputs=inputs, outputs=outputs,
                                      threads_declared=ctx.threads_declared)
        if state:
            return {"verdict": (state[0][0], f"On {case.label()}: {state[0][1]}.")}
        problems = [f"memory around output {n} was written (out of bounds)"
                    for n in names if not outputs.guards_intact(prefix + n)]
        if problems:
            return {"problems": problems}
        if case.view is None:
            runs.append({n: a.copy() for n, a in buffers.items()})
        else:
            runs.append({n: a.view(np.uint32).copy() for n, a in buffers.items()})
    same = all(np.array_equal(runs[0][n].view(np.uint32), runs[1][n].view(np.uint32)) for n in names)
    rec = {"problems": [], "deterministic": same}
    if case.view is None:
        rec["outputs"], rec["second"] = runs[0], (None if same else runs[1])
    else:
        positions = C.sample_positions(case.view, ctx.rng, per_dim=24)
        rec["positions"] = positions
        rec["outputs"] = {n: case.view.presented(n, runs[0][n].view(np.float32), positions) for n in names}
        rec["second"] = None if same else {n: case.view.presented(n, runs[1][n].view(np.float32), positions)
                                           for n in names}
        if case.view.perm:
            third = _third_call(ctx, proc, case, prefix, inputs, outputs, tokens, buffers)
            if third.get("verdict") or third.get("problems"):
                return third
            rec["third"] = third
    return rec


def _third_call(ctx, proc, case, prefix, inputs, outputs, tokens, buffers) -> dict:
    """A third call on the same buffers with two secret positions swapped: a kernel that
    remembers an earlier answer (keyed on a pointer, a few elements, a call count) returns it."""
    wl = ctx.wl
    view = case.view.shuffled(ctx.rng, 0.0)   # two positions swapped: the smallest change there is
    view.write_inputs({n: inputs.array(prefix + n) for n in view.base.inputs}, since=case.view)
    for arr in buffers.values():
        _poison(arr, ctx.rng)
    reply = proc.call(tokens, perturb=0, ncalls=1, nargs=len(wl.args))
    bad = reply_problem(reply, proc, when="during correctness checks", where=f" (in case {case.label()}, call 3)",
                        inputs=inputs, outputs=outputs)
    if bad:
        return {"verdict": bad}
    names = list(buffers)
    problems = [f"memory around output {n} was written (out of bounds)"
                for n in names if not outputs.guards_intact(prefix + n)]
    if problems:
        return {"problems": problems}
    positions = C.sample_positions(view, ctx.rng, changed=view.changed(case.view), per_dim=16)
    return {"view": view, "positions": positions,
            "outputs": {n: np.ascontiguousarray(view.presented(n, a, positions)) for n, a in buffers.items()}}


def _expected(case: C.Case, name: str, rec: dict, tol) -> np.ndarray:
    if case.view is None:
        return case.reference[name]
    return case.view.expected(name, tol, rec["positions"] if case.view.perm else None)


# An output that misses a relative-RMSE tolerance with finite values still passes where its
# error is within this many times what the case's own data lets float32 reach
# (cases.sensitivity): such an input cannot hold any kernel to the tolerance, and the report
# says so ("ill_conditioned"). On well-conditioned data the sensitivity is a few float32 ulps,
# far below any tolerance, so nothing is widened there.
ILL_CONDITIONED_FACTOR = 1.0


def _compared(wl, case, name, got, expected, tol) -> dict:
    report = compare(got, expected, tol)
    err = report.get("rel_rmse")
    if report["passed"] or tol.rel_rmse is None or err is None or not np.isfinite(err) or report.get("nonfinite"):
        return report
    try:
        sens = C.sensitivity(wl, case).get(name)
    except Exception:   # the data could not be measured (a memory cap, say): judged as compared
        return report
    if sens is None or not np.isfinite(sens) or err > ILL_CONDITIONED_FACTOR * sens:
        return report
    return {**report, "passed": True, "why": "",
            "ill_conditioned": {"sensitivity": sens, "bound": ILL_CONDITIONED_FACTOR * sens,
                                "note": (f"relative RMSE {err:.3g} exceeds {tol.rel_rmse:g}, but these inputs move the "
                                         f"answer by {sens:.3g} at float32's rounding; within "
                                         f"{ILL_CONDITIONED_FACTOR:g}x of that, no float32 kernel could do better")}}


def _judge(wl, cases, records, tol) -> tuple[str, str] | None:
    for case in cases:
        rec = records.get(case.id)
        if rec is None:
            return "crashed", f"The sandbox child skipped case {case.label()}."
        if rec["problems"]:
            return "wrong", f"On {case.label()}: {rec['problems'][0]}."
    for case in cases:
        rec = records[case.id]
        for name, got in rec["outputs"].items():
            report = _compared(wl, case, name, got, _expected(case, name, rec, tol), tol)
            case.reports[name] = report
            if not report["passed"]:
                return "wrong", f"Wrong on {case.label()}, output {name}: {report['why']}."
    for case in cases:
        rec = records[case.id]
        for name, got in (rec.get("second") or {}).items():
            report = _compared(wl, case, name, got, _expected(case, name, rec, tol), tol)
            if not report["passed"]:
                return "wrong", (f"Wrong on {case.label()} when called again with other bytes in its output "
                                 f"buffer (output {name}: {report['why']}).")
    for case in cases:
        third = records[case.id].get("third")
        for name, got in (third or {}).get("outputs", {}).items():
            report = _compared(wl, case, name, got, third["view"].expected(name, tol, third["positions"]), tol)
            if not report["passed"]:
                return "wrong", (f"Wrong on {case.label()} after two slices of its inputs swapped places between calls "
                                 f"(output {name}: {report['why']}): the kernel returned an answer it remembered.")
    if wl.deterministic:
        for case in cases:
            if not records[case.id].get("deterministic", True):
                return "nondeterministic", (f"Two runs on the same inputs ({case.label()}) gave different bits; "
                                            "the kernel reads memory it never wrote, or races.")
    return None


def _rows(cases, records) -> list:
    rows = []
    for c in cases:
        rec = records.get(c.id, {})
        reports = c.reports
        row = {"id": c.id, "kind": c.kind, "shape": c.shape.label(), "distribution": c.distribution,
               "seed": c.seed if c.view is None else None, "problems": rec.get("problems"),
               "deterministic": rec.get("deterministic"), "sampled": c.view is not None,
               "outputs": {n: {k: v for k, v in r.items() if k != "shape"} for n, r in reports.items()}}
        row["passed"] = bool(rec) and not rec.get("problems") and bool(reports) and \
            all(r["passed"] for r in reports.values())
        rows.append(row)
    return rows


def _start_problem(proc, when, inputs, outputs) -> tuple[str, str]:
    if getattr(proc, "load_error", None):
        return "crashed", f"The kernel's executable could not be loaded {when}: {proc.load_error}."
    bad = reply_problem(proc.ready, proc, when=when, where="", inputs=inputs, outputs=outputs)
    return bad or ("crashed", f"The sandbox process did not start {when}.")


def _exit_details(exit_) -> dict:
    return {"exit": exit_.describe(), "stderr_tail": exit_.stderr[-2000:], "stdout_tail": exit_.stdout[-2000:],
            "output_truncated": exit_.stdout_truncated or exit_.stderr_truncated}


# --------------------------------------------------------------------------- timing

SLOT_BYTES = 16 << 20      # short kernels are called in batches over this much data
MAX_SLOTS = 8
FULL_CHECKS = 2            # calls per session checked in full (secretly chosen)


def timing(ctx: Ctx, shape, baselines: list) -> PhaseResult:
    """One timing session at ``shape`` against ``baselines`` (kernels.spec.Baseline)."""
    from kernels.harness import fill
    from kernels.harness.timing import Impl, interleave
    wl, s, out = ctx.wl, ctx.settings, PhaseResult()
    dist = wl.distributions[0]
    reorder = C.can_reorder(wl, shape)
    bases = [C.base_set(wl, shape, dist, i) for i in range(1 if reorder else C.POOL)]
    for b in bases:
        b.full_reference(ctx.tol)
    out_names = list(C.out_shapes(wl, shape))
    per_slot = sum(a.nbytes for a in bases[0].inputs.values()) + \
        sum(4 * int(np.prod(v)) for v in C.out_shapes(wl, shape).values())
    nslots = int(max(1, min(MAX_SLOTS, SLOT_BYTES // max(per_slot, 1))))
    in_shapes = {f"s{i}:{n}": a.shape for i in range(nslots) for n, a in bases[0].inputs.items()}
    out_shapes = {f"s{i}:{n}": shp for i in range(nslots) for n, shp in C.out_shapes(wl, shape).items()}
    streams = fill.streams()
    fraction = 1.0 if wl.flop_bound else 0.125
    views = []
    # A memory-bound kernel's slots are near copies of one common order (each call's data
    # differs from the last call's, and from the slot before it, in a secret eighth of its
    # positions): a cache keyed on anything short of every input returns a stale answer.
    # A compute-bound one gets a fresh order every call: nothing to cache, nothing to update.
    common = C.View.identity(bases[0]).shuffled(ctx.rng) if reorder else None
    with Arena("inputs", in_shapes) as inputs, Arena("outputs", out_shapes) as outputs:
        for i in range(nslots):
            v = common.shuffled(ctx.rng, fraction) if reorder else \
                C.View.identity(bases[int(ctx.rng.integers(len(bases)))])
            v.write_inputs({n: inputs.array(f"s{i}:{n}") for n in v.base.inputs})
            views.append(v)
        procs = []
        cand = ctx.tgt.start(ctx.runnable, inputs=inputs, outputs=outputs, box=ctx.box, settings=s,
                             workload=wl, params=ctx.params)
        procs.append(cand)
        try:
            if not cand.ready.ok:
                out.verdict = _start_problem(cand, "while loading the kernel for timing", inputs, outputs)
                return out
            servers, notes = _start_baselines(ctx, baselines, inputs, shape, nslots, streams)
            procs += [p for p, _ in servers]
            out.notes += notes
            out.details["blas"] = next((p.info.get("blas") for p, _ in servers if p.info.get("blas")), [])
            tokens = " ".join(ctx.tgt.call_tokens(
                wl, shape, bases[0].scalars, inputs={n: inputs.offset(f"s{i}:{n}") for n in bases[0].inputs},
                outputs={n: outputs.offset(f"s{i}:{n}") for n in out_names}, params=ctx.params)
                for i in range(nslots))
            state = {"calls": 0, "verdict": None, "checked": 0, "full": 0, "max_err": 0.0, "call_s": 0.0}
            full_at = set(ctx.rng.choice(np.arange(3, 3 + 4 * s.min_calls), size=FULL_CHECKS, replace=False).tolist())
            flush = _cache_flusher(s.cold_cache)

            def candidate_call():
                nonlocal common
                changed = []
                # half the calls of a memory-bound kernel (secretly which) change each slot's
                # data by the smallest step there is, two positions swapped: a cache keyed on
                # most but not all of the inputs recomputes whenever a whole eighth moves (the
                # move always reaches a key), but returns its stale answer when two unkeyed
                # positions swap
                small = reorder and fraction < 1.0 and bool(ctx.rng.integers(2))
                if reorder and not small:
                    common = common.shuffled(ctx.rng, fraction)
                for i, v in enumerate(views):
                    if reorder:
                        if small:
                            nv = v.shuffled(ctx.rng, 0.0)
                        elif fraction < 1.0:
                            nv = common.shuffled(ctx.rng, fraction)
                        else:
                            nv = v.shuffled(ctx.rng)
                    else:
                        nv = C.View.identity(bases[int(ctx.rng.integers(len(bases)))])
                    nv.write_inputs({n: inputs.array(f"s{i}:{n}") for n in nv.base.inputs},
                                    since=v if (reorder and nv.base is v.base) else None)
                    if reorder:
                        diff = nv.changed(v)
                        if i and not small:   # (a small step is checked where it moved: every one of its positions)
                            prev = nv.changed(views[i - 1])
                            diff = {d: np.union1d(diff[d], prev[d]) for d in diff}
                        changed.append(diff)
                    else:
                        changed.append(None)
                    views[i] = nv
                    for n in out_names:
                        _poison(outputs.array(f"s{i}:{n}"), ctx.rng, streams)
                flush()
                reply = cand.call(tokens, ncalls=nslots, nargs=len(wl.args))
                state["calls"] += 1
                state["call_s"] += reply.seconds or 0.0   # warm-up calls too: the CPU time counts them
                bad = reply_problem(reply, cand, when="while being timed", where=f" (timed call {state['calls']})",
                                    inputs=inputs, outputs=outputs)
                if bad is None:
                    problems = ctx.tgt.call_problems(reply, cand, inputs=inputs, outputs=outputs,
                                                     threads_declared=ctx.threads_declared)
                    if problems:
                        bad = (problems[0][0], f"While being timed at {shape}: {problems[0][1]}.")
                if bad is None:
                    bad = _check_timed(ctx, views, changed, outputs, out_names, state, full_at, shape)
                if bad:
                    state["verdict"] = bad
                    return None
                seconds = reply.device_seconds if reply.device_seconds is not None else reply.seconds
                return seconds / nslots

            impls = [Impl("candidate", candidate_call, before=None)]
            for proc, b in servers:
                impls.append(Impl(b, _server_call(proc, nslots, flush), probe=(b == "copy")))
            cpu0 = cand.cpu()
            pids = [p.pid for p in procs if p.pid]
            host0 = calm.host_sample(pids)
            samples = interleave(impls, rng=ctx.rng, min_calls=max(s.min_calls, ctx.tgt.min_timed_calls),
                                 max_calls=max(s.max_calls, ctx.tgt.min_timed_calls), budget_s=s.timing_budget_s,
                                 target_rel_err=s.target_rel_err)
            host1 = calm.host_sample(pids)
            cpu1 = cand.cpu()
            if state["verdict"]:
                out.verdict = state["verdict"]
                return out
            if samples is None:
                out.verdict = ("crashed", "A baseline's process failed while being timed.")
                return out
            # the CPU time is read around the whole session, so it is set against the wall time of
            # every candidate call in it, the untimed warm-up calls included
            wall = state["call_s"]
            cpu_s = (cpu1["ns"] - cpu0["ns"]) / 1e9 if cpu0 and cpu1 else None
            out.details.update(
                timed_calls=state["calls"], slots=nslots, checked_calls=state["checked"], full_checks=state["full"],
                cpu={"cpu_per_wall": (cpu_s / wall) if cpu_s is not None and wall > 0 else None,
                     "threads": cpu1["threads"] if cpu1 else None, "busy_threads": busy_threads(cpu0, cpu1)},
                verification={"sampled_calls": state["checked"], "full_checks": state["full"],
                              "max_abs_err": state["max_err"], "reordered": reorder,
                              "pool": None if reorder else len(bases)},
                poison_fill="streaming" if streams else "cached",
                others=calm.others_between(host0, host1))
            probes = {k: samples.pop(k) for k in [i.name for i in impls if i.probe]}
            out.samples = samples
            if "copy" in probes:
                out.details["copy_probe_samples"] = probes["copy"]
                out.details["copy_probe_bytes"] = 2 * probe_words(wl, shape, bases[0].inputs) * 4
            return out
        finally:
            for p in procs:
                p.close()


def _server_call(proc, nslots, flush):
    def call():
        flush()
        reply = proc.call("", ncalls=nslots, nargs=0)
        if not reply.ok:
            return None
        return (reply.device_seconds if reply.device_seconds is not None else reply.seconds) / nslots
    return call


def _check_timed(ctx, views, changed, outputs, out_names, state, full_at, shape) -> tuple[str, str] | None:
    for i, v in enumerate(views):
        for n in out_names:
            if not outputs.guards_intact(f"s{i}:{n}"):
                return "wrong", f"While being timed at {shape}: memory around output {n} was written (out of bounds)."
    full = state["calls"] in full_at
    state["full"] += 1 if full else 0
    for i, v in enumerate(views):
        for n in out_names:
            got = outputs.array(f"s{i}:{n}")
            if full or not v.perm:
                report = compare(got, v.expected(n, ctx.tol), ctx.tol)
            else:
                pos = C.sample_positions(v, ctx.rng, changed=changed[i], per_dim=8)
                report = compare(np.ascontiguousarray(v.presented(n, got, pos)), v.expected(n, ctx.tol, pos), ctx.tol)
            state["max_err"] = max(state["max_err"], float(report.get("max_abs_err") or 0.0))
            if not report["passed"]:
                return "wrong", (f"Timed call #{state['calls']} at {shape} produced a wrong output {n} "
                                 f"({report['why']}): a kernel must compute every call, whatever came before.")
    state["checked"] += 1
    return None


PROBE_MIN_WORDS = 8 << 20   # 32 MiB each way: past a last-level cache, so it times memory


def probe_words(wl, shape, inputs: dict) -> int:
    """How many floats the copy probe streams: the largest input into a buffer of the largest
    output's size, but at least PROBE_MIN_WORDS where the input has them. A kernel that reads
    far more than it writes (a reduction, a decode step's matrix-vector products) was compared
    with a copy of its small output's size: the decoder's decode step, 214 MB of weights in,
    a 132 KB copy beside it, which timed its threads' wake-up (0.26 GB/s) rather than memory,
    and read as 14284% of the copy."""
    largest = max(int(a.size) for a in inputs.values())
    out = max(int(np.prod(v)) for v in C.out_shapes(wl, shape).values())
    return min(largest, max(out, PROBE_MIN_WORDS))


def _cache_flusher(cold: bool):
    if not cold:
        return lambda: None
    scratch = np.zeros((256 << 20) // 8, dtype=np.float64)

    def flush():
        np.add(scratch, 1.0, out=scratch)
    return flush


def _start_baselines(ctx, baselines, inputs, shape, nslots, streams) -> tuple[list, list]:
    """A server process per baseline, and the copy probe; notes for those that could not start."""
    from kernels.harness import fill
    from kernels.harness.process import ServerProcess
    wl, s = ctx.wl, ctx.settings
    base = C.base_set(wl, shape, wl.distributions[0], 0)
    slots = [{n: [inputs.offset(f"s{i}:{n}"), list(a.shape)] for n, a in base.inputs.items()} for i in range(nslots)]
    common = {"in_size": inputs.size, "slots": slots, "outputs": {n: list(v) for n, v in C.out_shapes(wl, shape).items()},
              "dims": shape.as_dict(), "scalars": base.scalars, "uid": ctx.box.uid, "gid": ctx.box.gid,
              "home": str(ctx.box.home), "cpu_seconds": int(s.run_timeout * 4) + 10,
              "timer": ctx.tgt.timer}
    started, notes = [], []
    for b in baselines:
        spec = {**common, "role": "baseline", "name": b.name, "fn": b.fn, "options": dict(b.options),
                "requires": b.requires, "user_code": b.user_code}
        proc = ServerProcess(spec, inputs=inputs, box=ctx.box, wall_seconds=s.run_timeout, launcher=s.launcher,
                             name=b.name)
        if proc.ready.ok:
            started.append((proc, b.name))
        else:
            why = proc.failure or proc.ready.text or proc.ready.kind
            verb = "skipped" if b.requires and "not importable" in str(why) else "failed to run"
            notes.append(f"baseline {b.name} {verb}: {why}")
            proc.close()
    lib = fill.library()
    if lib and streams is not None and ctx.tgt.timer == "wall":   # the probe times host memory
        spec = {**common, "role": "probe", "name": "copy",
                "options": {"lib": lib, "words": probe_words(wl, shape, base.inputs)}}
        proc = ServerProcess(spec, inputs=inputs, box=ctx.box, wall_seconds=s.run_timeout, launcher=s.launcher,
                             name="copy")
        if proc.ready.ok:
            started.append((proc, "copy"))
        else:
            proc.close()
    return started, notes
