"""Generated engines against their peers (a benchmark, not a test; the product never imports it).

    python -m bench engine [--tiny] [--threads 2] [--budget N] [--seeds 2] [--cases prefill,decode128,decode1024]
                           [--out FILE] [--ops DIR]

The issue's model (decoder family, hidden 1024, 16 heads over 4 K/V heads, FFN 2816, 4 layers,
vocabulary 8192) becomes an engine (kernels.engine.service.engine_import: prefill at 1 x 128,
decode after 128 and after 1024, plus the awkward lengths 1 and a prime), each phase is judged
by the harness at every shape against the float64 interpreter, and then each case is timed by
the harness with the engine's program interleaved, call for call, with torch eager (the
model's own problem file), torch.compile, ONNX Runtime and OpenVINO (where it imports) in one
session (each baseline in a process of its own, stopped between its calls: the harness's
timing loop, kernels/harness/timing.interleave). The ONNX export is made here, in the
trusted process, before the timing children start (kernels.engine.service.prepare_peers).

Without ``--budget`` the engine timed is the generated program at its default knobs; with
``--budget N`` each phase is first searched by the swarm (LocalExecutor, N evaluations at the
timed shape, timed against torch eager) and the best point is timed against the peers.
``--tiny`` is a dry run on a small model (hidden 64, 2 layers, vocab 256; prefill 1 x 16,
decode after 16 and after 32), a minute or two.

Writes bench/results/engine-<date>-<host>[-tiny].json and prints a table: per case the
engine's median and IQR, each peer's, the engine's speedup over each and over the best peer,
and the arena's size with and without reuse.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

BENCH_MODEL = "hidden=1024,heads=16,kv_heads=4,ffn=2816,layers=4,vocab=8192"
TINY_MODEL = "hidden=64,heads=4,kv_heads=2,ffn=128,layers=2,vocab=256"
PEERS = ("torch", "torch_compile", "onnxruntime", "openvino")


def cases_for(tiny: bool) -> dict:
    seq, short, long = (16, 16, 32) if tiny else (128, 128, 1024)
    return {"prefill": {"name": f"prefill 1x{seq}", "phase": "prefill", "length": seq},
            "decode128": {"name": f"decode after {short}", "phase": "decode", "length": short},
            "decode1024": {"name": f"decode after {long}", "phase": "decode", "length": long}}


def _versions() -> dict:
    out = {"python": platform.python_version()}
    for name in ("torch", "onnxruntime", "onnxscript", "openvino", "numpy"):
        try:
            out[name] = __import__(name).__version__
        except Exception as exc:   # a peer that does not import is reported, not fatal
            out[name] = f"unavailable ({type(exc).__name__})"
    return out


def _search(wl_name: str, shape, budget: int, seeds: int) -> tuple[str, dict, dict]:
    """The swarm on one phase (in this process's harness calls): (source, params, summary)."""
    from swarm.executors import LocalExecutor
    from swarm.generation import Engine
    from swarm.knowledge import InMemoryKnowledge
    from swarm.events import ListSink
    from swarm.store import InMemoryStore
    from swarm.types import Budget, Goal
    goal = Goal(workload=wl_name, target="cpu", shapes=[shape.label()], population=4, seed=1, cold=True,
                budget=Budget(evaluations=budget, stagnation_generations=6), confirm_top=1,
                eval_settings={"seeds": seeds})
    store = InMemoryStore()
    eng = Engine(store, LocalExecutor(), InMemoryKnowledge(), ListSink(), fingerprint="bench-engine")
    rid = eng.start(goal)
    eng.run(rid)
    cands = {c.id: c for c in store.candidates(rid)}
    best = cands.get(store.load_run(rid).best_id)
    evaluated = [c for c in cands.values() if c.result is not None]
    summary = {"evaluations": len(evaluated), "ok": sum(c.result.status == "ok" for c in evaluated),
               "best_params": best.params if best else None,
               "best_speedup_vs_eager": best.result.speedup if best else None}
    if best is None:
        return None, None, summary
    return best.source, best.params, summary


def run_case(name: str, case: dict, record: dict, args, sources: dict) -> dict:
    from kernels import workloads
    from kernels.harness.evaluator import EvalSettings, Evaluator
    phase = case["phase"]
    wl = workloads.get(record["phases"][phase]["workload"])
    dim = "SEQ" if phase == "prefill" else "PAST"
    shape = next(s for s in wl.shapes.typical if s.as_dict()[dim] == case["length"])
    src, params = sources[phase]
    settings = EvalSettings(seeds=args.seeds, baselines=tuple(PEERS), timing_shape=shape,
                            min_calls=args.min_calls, max_calls=args.max_calls, timing_budget_s=args.timing_budget)
    t0 = time.monotonic()
    out = Evaluator(settings).evaluate(src, params, wl, "cpu")
    row = {"case": name, "name": case["name"], "phase": phase, "length": case["length"], "status": out.status,
           "reason": out.reason, "seconds": round(time.monotonic() - t0, 1), "notes": out.notes,
           "engine": out.timings.get("candidate"),
           "peers": {k: v for k, v in out.timings.items() if k != "candidate"},
           "speedup": out.speedup}
    if out.speedup:
        best_peer = min(row["peers"], key=lambda k: row["peers"][k]["median_ms"])
        row["best_peer"] = best_peer
        row["speedup_over_best_peer"] = out.speedup.get(best_peer)
    bench = out.stage("benchmark")
    if bench is not None:
        row["copy_probe"] = bench.details.get("copy_probe")
        row["host_calm"] = bench.details.get("host_calm")
    sanity = out.stage("sanity")
    if sanity is not None:
        row["roofline"] = {k: v for k, v in sanity.details.items() if k not in ("flags",)}
    return row


def _probe() -> dict:
    """The harness's roofline probe (STREAM copy, FMA peak), measured now."""
    from kernels import targets
    from kernels.harness.roofline import measure_host
    print("roofline probe ...", flush=True)
    data = measure_host(targets.get("cpu").fingerprint())
    return {k: data[k] for k in ("copy_gbs", "triad_gbs", "peak_gflops", "copy_nt_gbs") if k in data}


def _host_defaults() -> dict:
    """The host's measured generator defaults the engine's sources started from (each read
    back from its record: kernels/codegen/gemm_form.py and streaming.py)."""
    from kernels.codegen.gemm_form import NAMES, host_gemm_form
    from kernels.codegen.streaming import host_rows_per_pass
    return {"gemm_form": NAMES[host_gemm_form()],
            "gemv_rows_per_pass": host_rows_per_pass()}


def _limits(probes: dict) -> tuple[float, float]:
    """(FMA peak, copy bandwidth): the higher of the run's probes."""
    return (max(p.get("peak_gflops", 0.0) for p in probes.values()),
            max(p.get("copy_gbs", 0.0) for p in probes.values()))


def table(report: dict) -> str:
    lines = []
    peers = [p for p in PEERS if any(p in c.get("peers", {}) for c in report["cases"])]
    head = f"{'case':<22} {'engine ms':>10} " + " ".join(f"{p + ' ms':>18}" for p in peers) + f" {'vs best':>8}"
    lines.append(head)
    for c in report["cases"]:
        eng = c.get("engine") or {}
        cells = []
        for p in peers:
            t = c["peers"].get(p)
            cells.append(f"{t['median_ms']:>9.3f} ({c['speedup'].get(p, 0):4.2f}x)" if t else f"{'—':>18}")
        vs = c.get("speedup_over_best_peer")
        label = c["name"] + {"groups tuned alone": " (tuned)", "knobs set": " (set)", "searched": " (searched)"}.get(c.get("point"), "")
        lines.append(f"{label:<22} {eng.get('median_ms', float('nan')):>10.3f} " + " ".join(cells)
                     + f" {(f'{vs:.2f}x' if vs else '—'):>8}" + ("" if c["status"] == "ok" else f"  [{c['status']}]"))
    probes = report.get("roofline_probe") or {}
    if probes:
        peak, copy = _limits(probes)
        lines.append(f"roofline probe in this run: FMA peak {peak:.0f} GFLOP/s, copy {copy:.1f} GB/s")
    if report.get("host_defaults"):
        d = report["host_defaults"]
        lines.append(f"this host's probed defaults: deep Linears in {d['gemm_form']}, "
                     f"{'one weight row' if d['gemv_rows_per_pass'] == 1 else str(d['gemv_rows_per_pass']) + ' weight rows'}"
                     " per matrix-vector pass")
    if report.get("omp_wait") == "default":
        lines.append("idle OpenMP threads: libgomp's default (they spin a while), not the harness's passive policy")
        for c in report["cases"]:
            r = c.get("roofline") or {}
            if c.get("phase") == "prefill" and "pct_of_peak_flops_in_run" in c:
                lines.append(f"  {c['name']}: {r['achieved_gflops']:.0f} GFLOP/s, "
                             f"{c['pct_of_peak_flops_in_run']:.0f}% of the FMA peak")
            elif "pct_of_copy_in_run" in c:
                lines.append(f"  {c['name']}: {r['achieved_gbs']:.1f} GB/s, {c['pct_of_copy_in_run']:.0f}% of copy")
    for phase, info in report["engine"]["phases"].items():
        a = info["arena"]
        lines.append(f"{phase}: {info['groups']} groups, arena {a['bytes'] / 1024:.1f} KiB "
                     f"(without reuse {a['bytes_no_reuse'] / 1024:.1f} KiB), source {info['source_bytes'] / 1024:.0f} KiB")
    return "\n".join(lines)


def _overrides(ap, patterns: list[str], space, point: dict) -> dict:
    """The knobs of ``space`` that ``--set PATTERN=VALUE`` changes from ``point``; a value a
    knob cannot take, or a point the space refuses, is an argument error."""
    import fnmatch
    changed = {}
    for spec in patterns:
        pattern, sep, text = spec.partition("=")
        if not sep or not pattern:
            ap.error(f"--set {spec!r}: expected PATTERN=VALUE, e.g. 'G*_GR=1'")
        value = int(text) if text.lstrip("-").isdigit() else text
        for name in fnmatch.filter(space.names, pattern):
            why = space.param(name).check(value)
            if why:
                ap.error(f"--set {spec!r}: {why}")
            if point.get(name) != value:
                changed[name] = value
    bad = space.violations({**point, **changed}) if changed else []
    if bad:
        ap.error(f"--set {patterns}: the point breaks the space: {bad[0]}")
    return changed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tiny", action="store_true", help="a dry run on a small model")
    ap.add_argument("--model", help=f"a decoder family spec (default {BENCH_MODEL})")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--budget", type=int, default=0, help="swarm evaluations per phase before timing (0: defaults)")
    ap.add_argument("--seeds", type=int, default=2, help="correctness seeds per evaluation")
    ap.add_argument("--tune-groups", type=int, default=0, metavar="N",
                    help="tune each fusion group alone at N points first (kernels.engine.tune) and time the "
                         "composed point; the defaults are timed too, in the same run, for the comparison")
    ap.add_argument("--set", action="append", default=[], metavar="PATTERN=VALUE",
                    help="time the defaults with every knob whose name matches PATTERN (fnmatch, e.g. "
                         "'G*_GR=1') set to VALUE, beside the defaults; repeatable")
    ap.add_argument("--cases", default="prefill,decode128,decode1024")
    ap.add_argument("--min-calls", type=int, default=None)
    ap.add_argument("--max-calls", type=int, default=None)
    ap.add_argument("--timing-budget", type=float, default=None, help="seconds of timing per session")
    ap.add_argument("--ops", help="the ops store for the engine's imports (default: a fresh temporary one)")
    ap.add_argument("--omp-wait", choices=("passive", "default"), default="passive",
                    help="idle OpenMP threads in the timing children: passive (the harness's: they sleep at "
                         "once) or default (libgomp's, as a serving process runs: they spin a while); for "
                         "every engine and peer alike")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    args.min_calls = args.min_calls or (5 if args.tiny else 15)
    args.max_calls = args.max_calls or (20 if args.tiny else 60)
    args.timing_budget = args.timing_budget or (0.5 if args.tiny else 5.0)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    if args.omp_wait == "default":
        from kernels.harness import sandbox
        sandbox.OMP_WAIT_POLICY = None
    ops = Path(args.ops or tempfile.mkdtemp(prefix="bench-engine-ops-"))
    ops.mkdir(parents=True, exist_ok=True)
    ops.chmod(0o755)                          # the timing children (other uids) read the stored problems
    os.environ["INT21_OPS_DIR"] = str(ops)
    every = cases_for(args.tiny)
    unknown = [c for c in args.cases.split(",") if c not in every]
    if unknown:
        ap.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(every)}")
    chosen = {c: every[c] for c in args.cases.split(",")}

    from kernels import workloads
    from kernels.engine import service
    model = service.model_from(args.model or (TINY_MODEL if args.tiny else BENCH_MODEL),
                               max_seq=64 if args.tiny else 2048)
    prefill = sorted({c["length"] for c in chosen.values() if c["phase"] == "prefill"}) or [every["prefill"]["length"]]
    decode = [c["length"] for c in every.values() if c["phase"] == "decode"
              if any(x["length"] == c["length"] and x["phase"] == "decode" for x in chosen.values())]
    decode = decode or [every["decode128"]["length"]]
    started = datetime.datetime.now(datetime.timezone.utc)
    name = "bench_tiny" if args.tiny else "bench_engine"
    t0 = time.monotonic()
    print(f"importing the engine ({model.config.to_json()}) into {ops} ...", flush=True)
    record = service.engine_import(model, name=name, prefill_seq=prefill, decode_past=decode,
                                   on_progress=lambda d, t, what: print(f"  {what}", flush=True))
    import_s = round(time.monotonic() - t0, 1)
    print(f"  {import_s}s; exporting the peers' ONNX files ...", flush=True)
    service.prepare_peers(name, every_typical=True)   # every case's shape: none is exported in a timing child
    sources, searches = {}, {}
    for phase, info in record["phases"].items():
        wl = workloads.get(info["workload"])
        sources[phase] = wl.template("cpu").seeds()[0]
        if args.budget:
            print(f"searching {phase} ({args.budget} evaluations) ...", flush=True)
            src, params, summary = _search(info["workload"], wl.shapes.typical[0], args.budget, args.seeds)
            searches[phase] = summary
            if src is not None:
                sources[phase] = (src, params)
    tuned, defaults = {}, dict(sources)
    overrides = {}
    for phase, (src, base) in list(sources.items()):
        changed = _overrides(ap, args.set, workloads.get(record["phases"][phase]["workload"]).template("cpu").space, base)
        if changed:
            sources[phase], overrides[phase] = (src, {**base, **changed}), changed
    if args.set and not overrides:
        ap.error(f"--set {args.set}: no knob of any phase matches (or every match is already that value)")
    if args.tune_groups:
        from kernels.engine import tune
        for phase, info in record["phases"].items():
            if not any(c["phase"] == phase for c in chosen.values()):
                continue
            print(f"tuning each group of {phase} alone ({args.tune_groups} points each) ...", flush=True)
            rep = tune.tune(name, phase, per_group=args.tune_groups, seeds=args.seeds,
                            on_progress=lambda d, t, what: print(f"  {d}/{t} {what}", flush=True) if d % 10 == 0 else None)
            tuned[phase] = {k: rep[k] for k in ("params", "evaluations", "seconds", "per_group")}
            tuned[phase]["groups"] = [{k: r[k] for k in ("ids", "description", "points", "default_ms", "best_ms", "knobs")}
                                      for r in rep["groups"]]
            src, base = sources[phase]
            sources[phase] = (src, {**base, **rep["params"]})
    # the roofline probe in this run, before and after the cases (the harness's cached ceilings
    # are the highest seen on this host, perhaps on another day)
    probes = {"before": _probe()}
    out_cases = []
    for key, case in chosen.items():
        for label, srcs in ((("defaults", defaults),) if args.tune_groups or overrides else ()) + (("chosen", sources),):
            what = ("groups tuned alone" if args.tune_groups else "knobs set" if overrides else label) \
                if label == "chosen" else label
            print(f"{case['name']} ({what}): "
                  "judging and timing beside the peers ...", flush=True)
            c = run_case(key, case, record, args, srcs)
            c["point"] = "defaults" if label == "defaults" or not (args.tune_groups or args.budget or overrides) else (
                "groups tuned alone" if args.tune_groups else "searched" if args.budget else "knobs set")
            out_cases.append(c)
            print(f"  {c['status']}: {c['reason'][:200]}", flush=True)
    probes["after"] = _probe()
    peak, copy = _limits(probes)
    for c in out_cases:
        achieved = (c.get("roofline") or {})
        if peak and achieved.get("achieved_gflops"):
            c["pct_of_peak_flops_in_run"] = round(100 * achieved["achieved_gflops"] / peak, 1)
        if copy and achieved.get("achieved_gbs"):
            c["pct_of_copy_in_run"] = round(100 * achieved["achieved_gbs"] / copy, 1)
    report = {
        "benchmark": "engine", "started": started.isoformat(timespec="seconds"), "tiny": args.tiny,
        "roofline_probe": probes,
        "model": model.to_json(), "threads": args.threads, "omp_wait": args.omp_wait, "cpus": os.cpu_count(), "host": platform.node(),
        "versions": _versions(), "import_seconds": import_s, "budget": args.budget, "searches": searches,
        "tune_groups": args.tune_groups, "tuned": tuned, "set": {"patterns": args.set, "knobs": overrides},
        "engine": {"phases": {p: {k: v for k, v in info.items() if k in ("workload", "groups", "families", "knobs",
                                                                         "source_bytes", "arena", "shapes")}
                              for p, info in record["phases"].items()}},
        "default_point": not args.budget, "cases": out_cases,
        "host_defaults": _host_defaults(),
    }
    stamp = started.strftime("%Y-%m-%d")
    host = platform.node().split(".")[0] or "host"
    path = Path(args.out) if args.out else ROOT / "bench" / "results" / (
        f"engine-{stamp}-{host}{'-tiny' if args.tiny else ''}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1, default=str) + "\n")
    print(table(report))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
