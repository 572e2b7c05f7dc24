"""Making, checking and stepping engines: the one service under the CLI, the web app and bench.

- ``engine_import(model, name=...)``: the model's phases rendered as problem files
  (:func:`kernels.models.problem.problem_source`), imported through
  :func:`kernels.graph.service.import_problem` at the engine's shapes, and an engine record
  stored. ``model``: a :class:`~kernels.models.decoder.DecoderConfig` (the built-in family,
  seeded weights), a checkpoint directory (safetensors + config.json: the family's problem
  file, with the stored weights then replaced by the checkpoint's and checked again), or a
  KernelBench-format module file (one phase, ``forward``, at the file's shapes).
- **Shapes.** Prefill: ``batch`` × ``seq`` for each ``prefill_seq`` (the first is timed),
  decode: one token after ``past`` cached positions for each ``decode_past``; each phase also
  gets the awkward lengths 1 and the largest prime below its longest (checked by the harness
  on every seed and distribution); ``greedy=(prompt, steps)`` adds what the greedy check
  steps through (prefill at ``prompt``, decode after ``prompt`` … ``prompt + steps - 1``).
  A captured graph is specialised to its shape, so a decode engine runs only at the lengths
  it was imported at (docs/engine.md, open question 1).
- ``engine_check(name)``: each phase's generated program judged by the harness against the
  float64 interpreter of the whole model at every shape (several seeds), not timed.
- ``engine_greedy(name)``: the greedy-decode check (:mod:`kernels.models.greedy`) with the
  engine's phases run through :func:`kernels.harness.call.call_kernel` (the sandboxed runner:
  the generated code never runs in this process) against the torch model stepped the same way.
- ``prepare_peers(name)``: the ONNX export the ONNX Runtime and OpenVINO baselines read, made
  here (trusted: the built-in family's own module) before a timing session.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kernels.engine import store

PHASE_DIM = {"prefill": "SEQ", "decode": "PAST"}


class EngineError(ValueError):
    """The engine could not be made or run; ``failure`` is the import's refusal (JSON) if any."""

    def __init__(self, message: str, failure: dict | None = None):
        super().__init__(message)
        self.failure = failure or {}


@dataclass
class Model:
    """What an engine is made from: ``kind`` decoder | checkpoint | module."""

    kind: str
    config: object = None          # DecoderConfig (decoder, checkpoint)
    checkpoint: Path | None = None
    module: Path | None = None

    def to_json(self) -> dict:
        out = {"kind": self.kind}
        if self.config is not None:
            out["config"] = self.config.to_json()
        if self.checkpoint is not None:
            out["checkpoint"] = str(self.checkpoint)
        if self.module is not None:
            out["module"] = str(self.module)
        return out

    def torch_model(self):
        """The trusted torch model (decoder family and checkpoints only: a module file is the
        user's code and runs only in the sandbox)."""
        from kernels.models.decoder import DecoderLM
        if self.kind == "decoder":
            return DecoderLM(self.config).eval()
        if self.kind == "checkpoint":
            from kernels.models.checkpoint import load_checkpoint
            return load_checkpoint(self.checkpoint, max_seq=self.config.max_seq)
        raise EngineError("a module file's model is the user's code: it runs only in the sandbox, so there is no "
                          "trusted torch model to step beside the engine")


def model_from(family: str | None = None, *, checkpoint=None, module=None, max_seq: int | None = None) -> Model:
    """The model the CLI names: ``--family hidden=64,...`` (``decoder:`` optional),
    ``--checkpoint DIR`` or ``--module FILE.py`` (exactly one)."""
    from dataclasses import replace

    from kernels.models.decoder import ConfigError, DecoderConfig
    given = [x for x in (family, checkpoint, module) if x]
    if len(given) != 1:
        raise EngineError("give exactly one model: a decoder family (hidden=...,heads=...), a checkpoint "
                          "directory or a module file")
    if family:
        try:
            cfg = DecoderConfig.from_text(family)
        except (ConfigError, TypeError, ValueError) as exc:
            raise EngineError(f"the decoder family: {exc}") from None
        return Model("decoder", replace(cfg, max_seq=max_seq) if max_seq else cfg)
    if checkpoint:
        from kernels.models.checkpoint import CheckpointError, read_config
        try:
            cfg = read_config(checkpoint, max_seq=max_seq)
        except CheckpointError as exc:
            raise EngineError(str(exc)) from None
        return Model("checkpoint", cfg, checkpoint=Path(checkpoint).resolve())
    path = Path(module)
    if not path.is_file():
        raise EngineError(f"{module}: no such module file")
    return Model("module", module=path.resolve())


# --------------------------------------------------------------------------- shapes

def prime_below(n: int) -> int | None:
    """The largest prime < n (None below 3)."""
    for k in range(n - 1, 1, -1):
        if all(k % d for d in range(2, int(k ** 0.5) + 1)):
            return k
    return None


def phase_shapes(config, phase: str, typical=None, greedy=None, *, every_step: bool = False
                 ) -> tuple[list[int], list[int]]:
    """(typical lengths, awkward lengths) of ``phase``: the typical ones as given (default
    128 tokens, or what ``max_seq`` allows) plus the greedy check's, then 1 and the largest
    prime below the longest as awkward ones. The greedy check's decode steps are captured at
    the first three cache lengths and the last: the lengths between are served by the unit
    those share (kernels.codegen.dynamic); ``every_step`` captures each one (where they do not
    share one)."""
    limit = config.max_seq if phase == "prefill" else config.max_seq - 1
    typical = list(dict.fromkeys(int(v) for v in (typical or [min(128, limit)])))
    more = []
    if greedy:
        prompt, steps = int(greedy[0]), int(greedy[1])
        pasts = range(prompt, prompt + steps)
        more = [prompt] if phase == "prefill" else \
            list(pasts) if every_step else list(dict.fromkeys([*pasts[:3], pasts[-1]]))
    bad = [v for v in typical + more if v < 1 or v > limit]
    if bad:
        what = "seq" if phase == "prefill" else "past (the cache's length; past + 1 <= max_seq)"
        raise EngineError(f"{phase}: {what} must be in 1..{limit} for max_seq={config.max_seq}, got {bad}")
    longest = max(typical + more)
    awkward = [v for v in dict.fromkeys((1, prime_below(longest))) if v is not None and v not in typical]
    typical += [v for v in more if v not in typical and v not in awkward]
    return typical, awkward


def workload_name(name: str, phase: str) -> str:
    return f"{name}_{phase}"


# --------------------------------------------------------------------------- import

def engine_import(model: Model, *, name: str, batch: int = 1, prefill_seq=None, decode_past=None, greedy=None,
                  ops_dir=None, on_progress=None) -> dict:
    """Import ``model``'s phases and store the engine record (returned). ``on_progress(done,
    total, what)`` hears of each phase's captures. Raises :class:`EngineError`."""
    from kernels.graph import service
    store.path_of(name)   # the name is checked before anything runs
    started = time.monotonic()
    say = on_progress or (lambda *a: None)
    if model.kind == "module":
        phases = {"forward": (model.module.read_text(encoding="utf-8", errors="replace"), [], True, None)}
    else:
        from kernels.models.problem import problem_source
        cfg = model.config
        extra_line = ""
        lm = None
        if model.kind == "checkpoint":
            lm = model.torch_model()
            extra_line = f"\n# Weights: the checkpoint {model.checkpoint.name}, sha256 {_weights_digest(lm)[:24]}\n"
        phases = {}
        lengths_of = {"prefill": prefill_seq, "decode": decode_past}

        def shapes_of(phase, every_step=False):
            typical, awkward = phase_shapes(cfg, phase, lengths_of[phase], greedy, every_step=every_step)
            dim = PHASE_DIM[phase]
            src = problem_source(cfg, phase, batch=batch, **{dim.lower(): typical[0]}) + extra_line
            return src, [{dim: v} for v in typical[1:]], [{dim: v} for v in awkward], lm
        for phase in lengths_of:
            phases[phase] = shapes_of(phase)
    record = {"name": name, "created": time.time(), "model": model.to_json(), "batch": batch,
              "greedy_shapes": list(greedy) if greedy else None, "phases": {}}
    for k, (phase, (src, extra, awkward, lm)) in enumerate(phases.items()):
        wl_name = workload_name(name, phase)

        def progress(done, total, what, _phase=phase, _k=k):
            say(_k * 100 + int(100 * done / max(total, 1)), 100 * len(phases), f"{_phase}: {what}")
        got = service.import_problem(src, name=wl_name, overrides=extra or None, ops_dir=ops_dir,
                                     awkward=awkward, on_progress=progress)
        if got.ok and phase == "decode" and greedy and _uncovered(Path(got.path), greedy):
            # the greedy steps' units did not share one: capture every step instead
            src, extra, awkward, lm = shapes_of(phase, every_step=True)
            got = service.import_problem(src, name=wl_name, overrides=extra or None, ops_dir=ops_dir,
                                         awkward=awkward, on_progress=progress)
        if not got.ok:
            failure = got.failure.to_json() if got.failure else {}
            raise EngineError(f"{phase}: the import failed: {failure.get('reason') or 'unknown reason'}", failure)
        path = Path(got.path)
        if lm is not None:
            _use_checkpoint_weights(path, lm, phase)
        if model.kind != "module":
            _annotate(path, {"phase": phase, "config": model.config.to_json(), "engine": name})
        record["phases"][phase] = phase_summary(path)
    record["seconds"] = round(time.monotonic() - started, 1)
    store.save(record, ops_dir)
    return record


def _uncovered(path: Path, greedy) -> list[int]:
    """The greedy check's decode lengths that the import at ``path`` neither captured nor
    serves through a shared unit."""
    from kernels.graph.workload import Imported
    imp = Imported(path)
    have = {int(s["dims"]["PAST"]) for s in imp.meta["shapes"]}
    ranges = [(r["lo"], r["hi"]) for r in imp.ranges() if r["dim"] == "PAST"]
    prompt, steps = int(greedy[0]), int(greedy[1])
    return [p for p in range(prompt, prompt + steps) if p not in have and not any(lo <= p <= hi for lo, hi in ranges)]


def phase_summary(path: Path) -> dict:
    """What the engine page and ``engine show`` say of one phase's stored import."""
    from kernels.graph import store as ops_store
    meta = ops_store.read_meta(path)
    groups = [g for g in meta["groups"] if g.get("form") != "unfused"]
    families: dict = {}
    for g in groups:
        if g.get("form") != "split":
            families[g["family"]] = families.get(g["family"], 0) + 1
    arena = meta.get("arena") or {}
    return {
        "workload": meta["name"], "digest": meta["digest"], "dims": meta["dims"],
        "shapes": [{"role": s["role"], "dims": s["dims"], "flops": s["flops"], "bytes": s["bytes"]}
                   for s in meta["shapes"]],
        "groups": len([g for g in groups if g.get("form") != "split"]), "families": families,
        "knobs": len(meta["space"]["params"]),
        "source_bytes": (path / "kernel.c").stat().st_size,
        "arena": {k: arena.get(k) for k in ("floats", "bytes", "floats_no_reuse", "bytes_no_reuse")}
                 | {"shapes": [{"dims": a.get("dims"), "bytes": a.get("bytes"), "bytes_no_reuse": a.get("bytes_no_reuse"),
                                "buffers": len(a.get("buffers", []))} for a in arena.get("shapes", [])]},
        # units shared by a range of lengths: the phase runs at every length in lo..hi
        "ranges": [{k: r[k] for k in ("dim", "lo", "hi")} for r in arena.get("shared") or []],
    }


def _weights_digest(lm) -> str:
    h = hashlib.sha256()
    for n, t in lm.state_dict().items():
        h.update(n.encode())
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def _annotate(path: Path, engine: dict) -> None:
    """Mark a stored import as an engine phase (its workload then gets the peers as baselines)."""
    meta = json.loads((path / "meta.json").read_text())
    meta["engine"] = engine
    fd, tmp = tempfile.mkstemp(prefix=".meta.", dir=path)
    with os.fdopen(fd, "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True, allow_nan=False)
    os.replace(tmp, path / "meta.json")
    from kernels import workloads
    workloads.forget(meta["name"])


def _use_checkpoint_weights(path: Path, lm, phase: str) -> None:
    """Replace the seeded weights the capture stored with the checkpoint's (params named
    ``p_phase_lm_<HF name>``, sourced ``phase.lm.<HF name>``), then check the interpreter on
    the new weights against the checkpoint's torch model in float64 at every shape."""
    import torch

    from kernels.graph import interpreter
    from kernels.graph import store as ops_store
    import copy
    state = {k: v.detach().numpy().copy() for k, v in lm.state_dict().items()}
    ref_lm = copy.deepcopy(lm).double()
    meta = ops_store.read_meta(path)
    replaced = []
    for k in range(len(meta["shapes"])):
        graph, params = ops_store.read_shape(path, k)
        for t in graph.params:
            src = (t.source or "").removeprefix("phase.lm.")
            if src in state:
                params[t.name] = np.ascontiguousarray(state[src], dtype=np.float32).reshape(t.shape)
        rng = np.random.default_rng(k)
        feeds = {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in graph.inputs}
        feeds.update(params)
        got = interpreter.run(graph, feeds)
        with torch.inference_mode():
            x = torch.from_numpy(feeds["x"]).double()
            want = ref_lm.prefill(x) if phase == "prefill" else ref_lm.decode(x, torch.from_numpy(feeds["kv"]).double())
        for g, w in zip(got, want):
            w = w.numpy()
            err = float(np.abs(np.asarray(g) - w).max())
            if err > 1e-6 * max(1.0, float(np.abs(w).max())):
                raise EngineError(f"{phase}: the graph with the checkpoint's weights does not compute the checkpoint's "
                                  f"model (max error {err:.3g} at shape {k}); the stored weights were left as captured")
        replaced.append(params)
    for k, params in enumerate(replaced):   # written only once every shape checked out
        np.savez(path / "shapes" / str(k) / "params.npz", **params)
    from kernels import workloads
    workloads.forget(meta["name"])


# --------------------------------------------------------------------------- checks

def engine_check(name: str, *, seeds: int = 2, phases=None, ops_dir=None, on_stage=None) -> dict:
    """Each phase's generated program (its default point) judged by the harness at every
    shape it was imported at, against the float64 interpreter, on ``seeds`` seeds; not timed.
    The report is stored in the record under ``validation`` and returned."""
    from kernels import workloads
    from kernels.harness.evaluator import EvalSettings, Evaluator
    record = store.load(name, ops_dir)
    report = dict(record.get("validation") or {})
    for phase, info in record["phases"].items():
        if phases and phase not in phases:
            continue
        wl = workloads.get(info["workload"])
        src, params = wl.template("cpu").seeds()[0]
        t0 = time.monotonic()
        out = Evaluator(EvalSettings(timing=False, seeds=seeds), on_stage=on_stage).evaluate(src, params, wl, "cpu")
        cases = next((s.details.get("cases", []) for s in out.stages if s.name == "correctness"), [])
        report[phase] = {"status": out.status, "reason": out.reason, "seeds": seeds, "cases": len(cases),
                         "shapes": sorted({str(c.get("shape")) for c in cases if isinstance(c, dict)}),
                         "seconds": round(time.monotonic() - t0, 1)}
    store.update(name, ops_dir, validation=report)
    return report


def _prompt_ids(vocab: int, batch: int, length: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, vocab, size=(batch, length), dtype=np.int64)


def greedy_unavailable(record: dict, *, prompt: int | None = None, steps: int | None = None) -> str | None:
    """Why the greedy-decode check cannot run on an engine (its record), or None."""
    if set(record["phases"]) != {"prefill", "decode"}:
        return "the greedy check needs a prefill and a decode phase"
    if not record.get("greedy_shapes") and not (prompt and steps):
        return "the engine was not imported for a greedy check: import it with --greedy PROMPT,STEPS"
    return None


def engine_greedy(name: str, *, steps: int | None = None, prompt: int | None = None, sources: dict | None = None,
                  ops_dir=None) -> dict:
    """The greedy-decode check: prefill a seeded prompt and decode ``steps`` tokens with the
    engine (each call in the harness's sandbox, the shape's stored weights as buffers) and
    with the torch model, teacher-forced by the torch model. ``sources``: {phase: (source,
    params)} to check instead of the generated defaults (a run's best). Stored under
    ``greedy`` in the record and returned (GreedyReport.to_json)."""
    from kernels import workloads
    from kernels.graph import store as ops_store
    from kernels.graph.workload import Imported
    from kernels.harness.call import KernelCallError, call_kernel
    from kernels.models.greedy import embedder, greedy_check, phase_step, torch_step
    from kernels.spec import Shape
    record = store.load(name, ops_dir)
    why = greedy_unavailable(record, prompt=prompt, steps=steps)
    if why:
        raise EngineError(why)
    model = Model(record["model"]["kind"], checkpoint=record["model"].get("checkpoint"))
    from kernels.models.decoder import DecoderConfig
    model.config = DecoderConfig(**record["model"]["config"])
    lm = model.torch_model()
    if record.get("greedy_shapes"):
        prompt = prompt or record["greedy_shapes"][0]
        steps = steps or record["greedy_shapes"][1]
    batch = record["batch"]
    calls = {}
    for phase, info in record["phases"].items():
        wl = workloads.get(info["workload"])
        imp = Imported(ops_store.lookup(info["workload"], ops_dir))
        src, params = (sources or {}).get(phase) or wl.template("cpu").seeds()[0]
        calls[phase] = (wl, imp, src, params)

    def run(phase, arrays, length):
        wl, imp, src, params = calls[phase]
        dim = PHASE_DIM[phase]
        match = [k for k, s in enumerate(imp.meta["shapes"]) if int(s["dims"][dim]) == length]
        if match:
            k = match[0]
            dims = imp.meta["shapes"][k]["dims"]
        else:   # a length inside a shared unit's range (docs/engine.md, "Any cache length")
            ranges = [r for r in imp.ranges() if r["dim"] == dim and r["lo"] <= length <= r["hi"]]
            if not ranges:
                lengths = sorted(int(s["dims"][dim]) for s in imp.meta["shapes"])
                spans = [f"{r['lo']}..{r['hi']}" for r in imp.ranges() if r["dim"] == dim]
                raise EngineError(f"the {phase} engine was not imported at {dim.lower()}={length} (it has "
                                  f"{lengths}" + (f" and every length in {', '.join(spans)}" if spans else "") + ")")
            k = ranges[0]["members"][0]
            dims = {**imp.meta["shapes"][k]["dims"], dim: length}
        _, weights = imp.shape(k)
        out = call_kernel(src, params, wl, "cpu", arrays={**weights, **arrays}, dims=dims)
        shape = Shape(tuple((d, int(dims[d])) for d in wl.shape_dims))
        assert set(out) == set(wl.out_shapes(shape))
        return out["out0"], out["out1"]

    def prefill(x):
        return run("prefill", {"x": x}, x.shape[1])

    def decode(x, kv):
        return run("decode", {"x": x, "kv": np.ascontiguousarray(kv, dtype=np.float32)}, kv.shape[4])
    t0 = time.monotonic()
    try:
        report = greedy_check(phase_step(prefill, decode), torch_step(lm), _prompt_ids(model.config.vocab, batch, prompt),
                              steps, embed=embedder(lm))
    except KernelCallError as exc:   # the harness refused a call: a failed check, said plainly
        raise EngineError(f"the engine could not be run: {exc}") from None
    data = report.to_json()
    data.update(prompt_length=prompt, decode_steps=steps, seconds=round(time.monotonic() - t0, 1))
    store.update(name, ops_dir, greedy=data)
    return data


def prepare_peers(name: str, *, ops_dir=None, every_typical: bool = False) -> list[str]:
    """Export each phase to ONNX at its timed shape (``every_typical``: at each of its typical
    shapes), with the stored weights, so the ONNX Runtime and OpenVINO baselines in the timing
    child find the file (they only load it; an export there would cost its preparation time).
    Returns the exported paths; a phase whose exporter is missing is skipped (the harness
    then reports the peer as unavailable)."""
    from kernels import workloads
    from kernels.graph import store as ops_store
    from kernels.graph.workload import Imported
    from kernels.models import peers
    record = store.load(name, ops_dir)
    out = []
    for phase, info in record["phases"].items():
        if phase not in peers.PHASE_IO:
            continue
        wl = workloads.get(info["workload"])
        imp = Imported(ops_store.lookup(info["workload"], ops_dir))
        for shape in (wl.shapes.typical if every_typical else wl.shapes.typical[:1]):
            graph, weights = imp.shape(imp.index_of(shape))
            lm = peers.model_from({"phase": phase, "config": record["model"]["config"]}, weights)
            try:
                out.append(str(peers.export_onnx(lm, phase, [t.shape for t in graph.inputs])))
            except ImportError:
                break
    return out
