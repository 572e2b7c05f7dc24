"""The GPU campaign: everything the issue asks an H200 to show, in one call of under 9 minutes.

    python -m bench.gpu_campaign [--out DIR] [--state DIR] [--budget 510] [--fla-wheel PATH]
                                 [--only STEP ...] [--fresh] [--dry-run]
    python -m bench.gpu_campaign --summarize FILE.json     (the markdown for docs/benchmarks.md)

Steps, in order (each one's result is written the moment it finishes; a second call skips
the steps done (status ok) and runs the rest, so a killed call loses one step at most):

- ``environment``: GPU, driver, toolchains, packages, both NVIDIA targets' fingerprints (and the
  fla wheel installed first, when ``--fla-wheel`` names one);
- ``ceilings``: copy bandwidth and cuBLAS fp32 / TF32 at 4096^3, measured now;
- ``direct.*``: template points of both targets, checked against the reference and timed in
  one session with the baselines and a copy of the same bytes (bench/gpu_direct.py): KDA at
  (1, 8192, 16, 128, 128) and (8, 4096, 32, 128, 128) vs fla, softmax and rmsnorm at 4096^2
  and 8192^2, fp32 matmul at 4096^3 (vs cuBLAS), TF32 matmul (vs cuBLAS TF32);
- ``gpu_tests``: the targets' and the chunked KDA's tests, whose GPU-only cases run here;
- ``evaluator.ptx``: whether the sandboxed evaluator runs a PTX candidate on this host;
- ``swarm.<workload>.<target>``: a short swarm run through the sandboxed evaluator;
- ``summary``: the issue's figures, each against its goal.

Output: ``gpu-campaign.json`` and ``gpu-campaign.log`` in ``--state`` (default
var/gpu-campaign, kept between calls on the same machine), copied to ``--out`` (default $OUT,
else bench/results) after every step. ``--dry-run`` uses a fake device (no GPU needed): every
point is still compiled and audited, the step and resume machinery and the JSON shape are
real, the times are made up and marked ``fake_device``. docs/gpu.md says how to run it.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import gpu_direct  # noqa: E402
from kernels import targets, workloads  # noqa: E402
from kernels.spec import Shape, Tolerance  # noqa: E402

GOALS = {"kda_vs_fla": 1.59, "rowwise_of_copy": 0.90, "matmul_vs_cublas": 0.90}
GPU_TESTS = ["tests/targets/test_cuda_target.py", "tests/targets/test_ptx_target.py",
             "tests/targets/test_ptx_hostile.py", "tests/workloads/test_kda_chunked.py"]
KDA_SERVING = ["1x8192x16x128x128", "8x4096x32x128x128"]
SWARMS = [("softmax", "cuda"), ("softmax", "ptx"), ("rmsnorm", "cuda"), ("rmsnorm", "ptx"),
          ("matmul", "cuda"), ("matmul", "ptx"), ("kda", "cuda")]


class Log:
    def __init__(self, path: Path):
        self.path = path

    def __call__(self, *parts) -> None:
        line = " ".join(str(p) for p in parts)
        print(line, flush=True)
        with open(self.path, "a") as f:
            f.write(line + "\n")


class Campaign:
    """The ordered steps, the state file, the clock."""

    def __init__(self, args):
        self.args = args
        self.dry = args.dry_run
        self.state_dir = Path(args.state)
        self.out_dir = Path(args.out) if args.out else None
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.json_path = self.state_dir / "gpu-campaign.json"
        if args.fresh:
            for p in (self.json_path, self.state_dir / "gpu-campaign.log"):
                p.unlink(missing_ok=True)
        self.log = Log(self.state_dir / "gpu-campaign.log")
        self.state = json.loads(self.json_path.read_text()) if self.json_path.exists() else {
            "campaign": "gpu", "started": _now(), "dry_run": self.dry, "calls": [], "steps": {}}
        self.state["calls"].append({"at": _now(), "argv": sys.argv[1:]})
        self.started = time.monotonic()
        self.device = gpu_direct.FakeDevice() if self.dry else None

    def left(self) -> float:
        return self.args.budget - (time.monotonic() - self.started)

    def dev(self):
        if self.device is None:
            self.device = gpu_direct.CupyDevice()
        return self.device

    def save(self) -> None:
        tmp = self.json_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=1, default=str))
        os.replace(tmp, self.json_path)
        if self.out_dir and self.out_dir.resolve() != self.state_dir.resolve():
            self.out_dir.mkdir(parents=True, exist_ok=True)
            for p in (self.json_path, self.log.path):
                shutil.copyfile(p, self.out_dir / p.name)

    def run(self, steps) -> dict:
        self.log(f"=== GPU campaign {'(dry run, fake device) ' if self.dry else ''}at {_now()}; "
                 f"budget {self.args.budget:.0f} s; state {self.json_path}")
        for name, planned, fn in steps:
            if self.args.only and not any(name.startswith(o) for o in self.args.only):
                continue
            done = self.state["steps"].get(name)
            if done and done["status"] == "ok" and name != "summary":   # a skip is tried again
                self.log(f"--- {name}: done in an earlier call ({done['status']}), skipped")
                continue
            if self.left() < planned:
                self.log(f"--- {name}: not started, {self.left():.0f} s left of the budget (needs ~{planned} s); "
                         "a second call runs it")
                continue
            self.log(f"--- {name} (~{planned} s, {self.left():.0f} s left)")
            t0 = time.monotonic()
            try:
                result = fn(self)
                status = result.pop("_status", "ok") if isinstance(result, dict) else "ok"
            except Exception as exc:
                result, status = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-4000:]}, \
                    "failed"
                self.log(f"    FAILED: {result['error']}")
            self.state["steps"][name] = {"status": status, "seconds": round(time.monotonic() - t0, 1),
                                         "finished": _now(), "result": result}
            self.log(f"    {name}: {status} in {time.monotonic() - t0:.1f} s")
            self.save()
        self.state["finished"] = _now()
        self.save()
        return self.state


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _shape(wl, text: str) -> Shape:
    return wl.shape_from_text(text)


# --------------------------------------------------------------------------- steps

def step_environment(c: Campaign) -> dict:
    out = {"python": sys.version.split()[0], "executable": sys.executable, "host": platform.node(),
           "cwd": str(ROOT)}
    if c.args.fla_wheel:
        r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-compile",
                            c.args.fla_wheel], capture_output=True, text=True, timeout=120)
        out["fla_wheel"] = {"path": c.args.fla_wheel, "rc": r.returncode, "tail": (r.stdout + r.stderr)[-1000:]}
    versions = {}
    for mod in ("numpy", "cupy", "torch", "triton", "fla", "optuna"):
        try:
            versions[mod] = getattr(__import__(mod), "__version__", "?")
        except Exception as exc:
            versions[mod] = f"not importable ({type(exc).__name__})"
    out["versions"] = versions
    if not c.dry:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        out["nvidia_smi"] = smi.stdout.strip() or smi.stderr.strip()
    for name in ("cuda", "ptx"):
        tgt = targets.get(name)
        out[name] = {"available": tgt.available(), "can_run": tgt.can_run(), "fingerprint": tgt.fingerprint()}
    c.log(f"    {json.dumps(out['versions'])}; GPU: {out['cuda']['fingerprint'].get('gpu')}")
    return out


def step_gpu_tests(c: Campaign) -> dict:
    if c.dry:
        return {"_status": "ok", "dry_run": "not run: they need the GPU (CI runs their CPU parts)", "files": GPU_TESTS}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *GPU_TESTS]
    try:
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=max(30, min(120, c.left() - 150)),
                           env=env)
        tail, rc = (r.stdout + r.stderr)[-6000:], r.returncode
    except subprocess.TimeoutExpired as exc:
        tail, rc = f"timed out: {(exc.stdout or b'')[-3000:]!r}", None
    summary = next((ln for ln in reversed(tail.splitlines()) if " passed" in ln or " failed" in ln), "")
    c.log(f"    {summary}")
    return {"_status": "ok" if rc == 0 else "failed", "rc": rc, "summary": summary, "tail": tail}


def step_ceilings(c: Campaign) -> dict:
    out = gpu_direct.ceilings(c.dev())
    c.log(f"    {json.dumps(out)}")
    return out


def _direct(c: Campaign, wl_name: str, shapes: list[str], targets_: tuple, extra: int, **kw) -> dict:
    wl = workloads.get(wl_name)
    check = [s for s in (list(wl.shapes.awkward) + list(wl.shapes.minimal))][:3]
    points_filter = kw.pop("points_filter", None)
    out = {}
    for text in shapes:
        shape = _shape(wl, text)
        pts = {t: gpu_direct.sample_points(wl, t, shape, 1 if c.dry else extra, f"campaign:{wl_name}:{t}")
               for t in targets_ if t in wl.templates}
        for t, extra_fn in (kw.pop("pinned", None) or {}).items():   # points worth measuring every time
            tpl = wl.template(t)
            for p in extra_fn(shape):
                p = {**tpl.space.default(), **p}
                if not tpl.space.violations(p, [shape]) and p not in pts[t]:
                    pts[t].append(p)
        if points_filter:
            pts = {t: [p for p in ps if points_filter(t, p)] for t, ps in pts.items()}
        c.log(f"  {wl_name} at {text}: {sum(map(len, pts.values()))} points")
        res = gpu_direct.sweep(c.dev(), wl, shape, pts, check, log=c.log, **kw)
        for t, b in res["best"].items():
            if isinstance(b, dict):
                c.log(f"    best {t}: {b['median_ms']:.4f} ms, {b['params']}, vs {_fmt(b['vs'])}"
                      + (f", {100 * b['of_copy']:.0f}% of the copy" if b.get("of_copy") else ""))
        out[text] = res
    return out


def _fmt(d: dict) -> str:
    return ", ".join(f"{k} {v:.2f}x" for k, v in d.items())


def _small(c: Campaign, real: list[str], dry: list[str]) -> list[str]:
    return dry if c.dry else real


def _one_read(shape) -> list[dict]:
    """The PTX block variant's rows that fit one unrolled trip (KEEP: the row is read once)."""
    cols = shape["cols"]
    return [{"ALGO": "block", "KEEP": 1, "VEC": 4, "BLOCK": b, "UNROLL": u, "LOAD": ld, "STORE": st}
            for b in (256, 512, 1024) for u in (1, 2, 4) if 4 * b * u == cols for ld in (0, 1) for st in (0, 1)]


def step_softmax(c):
    return _direct(c, "softmax", _small(c, ["4096x4096", "8192x8192"], ["64x256"]), ("cuda", "ptx"), 10,
                   pinned={"ptx": _one_read})


def step_rmsnorm(c):
    return _direct(c, "rmsnorm", _small(c, ["4096x4096", "8192x8192"], ["64x256"]), ("cuda", "ptx"), 10,
                   pinned={"ptx": _one_read})


def step_matmul(c):
    keep = lambda t, p: t != "ptx" or p.get("PREC") == 3  # noqa: E731  (fp32 accuracy only)
    return _direct(c, "matmul", _small(c, ["4096x4096x4096"], ["64x64x64"]), ("cuda", "ptx"), 8,
                   points_filter=keep,
                   baselines=[("cupy", "kernels.workloads.matmul.baselines:cupy_matmul"),
                              ("torch_cuda", "kernels.workloads.matmul.baselines:torch_cuda_matmul")])


def step_matmul_tf32(c):
    wl = workloads.get("matmul")
    shape = "64x64x64" if c.dry else "4096x4096x4096"
    tf32 = [p for p in gpu_direct.sample_points(wl, "ptx", _shape(wl, shape), 30, "campaign:tf32")
            if p.get("PREC") == 1][: 2 if c.dry else 8]
    if not tf32:
        tf32 = [{**wl.template("ptx").space.default(), "PREC": 1}]
    res = gpu_direct.sweep(c.dev(), wl, _shape(wl, shape), {"ptx": tf32}, list(wl.shapes.awkward)[:2],
                           tolerance=Tolerance(rel_rmse=2e-3), log=c.log,
                           baselines=[("torch_cuda_tf32", "kernels.workloads.matmul.baselines:torch_cuda_matmul_tf32")])
    return {shape: res}


def step_kda(c):
    wl = workloads.get("kda")
    chunked = lambda t, p: p.get("ALGO") == "chunked"  # noqa: E731
    return _direct(c, "kda", _small(c, KDA_SERVING, ["1x64x2x16x16"]), ("cuda",), 8, points_filter=chunked,
                   rounds=20, budget_s=4.0, cross_check="fla_chunk_kda",
                   baselines=[(b.name, b.fn) for b in wl.baselines["cuda"]])


def step_evaluator_ptx(c: Campaign) -> dict:
    from kernels.harness.evaluator import EvalSettings, Evaluator
    tpl = workloads.get("softmax").template("ptx")
    src, params = tpl.seeds()[0]
    try:
        o = Evaluator(EvalSettings(timing=False, run_timeout=60)).evaluate(src, params, "softmax", "ptx")
        status, reason = o.status, o.reason
    except Exception as exc:
        status, reason = "raised", f"{type(exc).__name__}: {exc}"
    c.log(f"    the ptx softmax seed through the evaluator: {status}: {reason[:200]}")
    return {"status": status, "reason": reason, "runs_ptx": status == "ok"}


def _swarm(c: Campaign, wl_name: str, target: str) -> dict:
    from swarm.events import ListSink
    from swarm.executors import LocalExecutor
    from swarm.generation import Engine
    from swarm.knowledge import InMemoryKnowledge
    from swarm.store import InMemoryStore
    from swarm.types import Budget, Goal
    if target == "ptx" and not c.dry:
        probe = c.state["steps"].get("evaluator.ptx", {}).get("result", {})
        if not probe.get("runs_ptx"):
            return {"_status": "skipped", "why": "the evaluator does not run PTX candidates here yet: "
                                                 f"{probe.get('status')}: {str(probe.get('reason'))[:300]}"}
    wl = workloads.get(wl_name)
    shape = wl.shapes.typical[0].label()
    metric = "time" if wl_name == "kda" else "speedup"     # kda: fla compiles per child; timed directly instead
    settings = {"run_timeout": 90.0, "timing_budget_s": 0.5, "seeds": 3}
    if wl_name == "kda":
        settings["baselines"] = ()
    n = 3 if c.dry else 4
    goal = Goal(workload=wl_name, target=target, shapes=[shape], metric=metric, population=3, seed=1, cold=True,
                budget=Budget(evaluations=n, wall_seconds=22, stagnation_generations=None),
                eval_settings=settings, confirm_top=1)
    store = InMemoryStore()
    engine = Engine(store, LocalExecutor(), InMemoryKnowledge(), ListSink(), fingerprint=f"campaign-{target}")
    rid = engine.start(goal)
    engine.run(rid)
    rows = [{"params": x.params, "agent": x.agent, "status": x.result.status, "score": x.result.score,
             "median_ms": x.result.median_ms, "speedup": x.result.speedup, "reason": x.result.reason[:200]}
            for x in sorted(store.candidates(rid), key=lambda x: x.id) if x.result is not None]
    best_id = store.load_run(rid).best_id
    best = next((r for x, r in zip(sorted(store.candidates(rid), key=lambda x: x.id), rows) if x.id == best_id), None)
    c.log(f"    {len(rows)} evaluated, statuses {sorted({r['status'] for r in rows})}; best {best and best['params']} "
          f"score {best and best['score']}")
    return {"shape": shape, "metric": metric, "evaluated": rows, "best": best}


def step_summary(c: Campaign) -> dict:
    return summarize(c.state)


def summarize(state: dict) -> dict:
    """The issue's figures from the steps' results, each beside its goal (None: not measured)."""
    steps = {k: v.get("result", {}) for k, v in state.get("steps", {}).items() if v.get("status") == "ok"}
    out = {"goals": GOALS, "kda": {}, "rowwise": {}, "matmul": {}, "ptx_vs_cuda": {}}
    for text, res in steps.get("direct.kda", {}).items():
        b = res.get("best", {}).get("cuda")
        if b:
            out["kda"][text] = {"median_ms": b["median_ms"], "vs_fla": b["vs"].get("fla_chunk_kda"),
                                "vs_fla_bf16": b["vs"].get("fla_chunk_kda_bf16"), "params": b["params"]}
    for wl in ("softmax", "rmsnorm"):
        for text, res in steps.get(f"direct.{wl}", {}).items():
            best = res.get("best", {})
            out["rowwise"][f"{wl} {text}"] = {t: {"of_copy": b.get("of_copy"), "vs": b["vs"]}
                                             for t, b in best.items() if isinstance(b, dict)}
            if best.get("ptx_vs_cuda"):
                out["ptx_vs_cuda"][f"{wl} {text}"] = best["ptx_vs_cuda"]
    for text, res in steps.get("direct.matmul", {}).items():
        best = res.get("best", {})
        out["matmul"]["fp32 " + text] = {t: {"vs_cublas": b["vs"].get("cupy"), "tflops": b["tflops"]}
                                          for t, b in best.items() if isinstance(b, dict)}
        if best.get("ptx_vs_cuda"):
            out["ptx_vs_cuda"][f"matmul {text}"] = best["ptx_vs_cuda"]
    for text, res in steps.get("direct.matmul_tf32", {}).items():
        b = res.get("best", {}).get("ptx")
        if b:
            out["matmul"]["tf32 " + text] = {"vs_cublas_tf32": b["vs"].get("torch_cuda_tf32"), "tflops": b["tflops"]}
    out["ceilings"] = steps.get("ceilings")
    return out


def markdown(state: dict) -> str:
    """The GPU section's lines for docs/benchmarks.md."""
    s = summarize(state)
    fp = state.get("steps", {}).get("environment", {}).get("result", {}).get("cuda", {}).get("fingerprint", {})
    lines = [f"GPU campaign of {state.get('started', '?')[:10]} on {fp.get('gpu')} (driver {fp.get('driver')}, "
             f"{fp.get('compiler')}){' — DRY RUN, times are fake' if state.get('dry_run') else ''}.", "",
             f"Ceilings measured in the same call: {json.dumps(s.get('ceilings'))}", "",
             "| figure | measured | goal |", "|---|---|---|"]
    for text, k in s["kda"].items():
        lines.append(f"| KDA {text}, best chunked vs fla chunk_kda (fp32 / bf16 inputs) | "
                     f"{_x(k['vs_fla'])} / {_x(k['vs_fla_bf16'])} | >= {GOALS['kda_vs_fla']}x |")
    for key, per in s["rowwise"].items():
        for t, v in per.items():
            lines.append(f"| {key} {t}: share of the copy bandwidth | {_pct(v['of_copy'])} | >= 90% |")
    for key, per in s["matmul"].items():
        if key.startswith("fp32"):
            for t, v in per.items():
                lines.append(f"| matmul {key} {t} vs cuBLAS | {_x(v['vs_cublas'])} ({v['tflops']:.1f} TFLOP/s) | >= 0.9x |")
        else:
            lines.append(f"| matmul {key} PTX mma vs cuBLAS TF32 | {_x(per['vs_cublas_tf32'])} | report |")
    for key, v in s["ptx_vs_cuda"].items():
        lines.append(f"| {key}: PTX seeds' best vs CUDA seeds' best | {_x(v)} | report |")
    return "\n".join(lines)


def _x(v):
    return "—" if v is None else f"{v:.2f}x"


def _pct(v):
    return "—" if v is None else f"{100 * v:.0f}%"


def plan() -> list:
    """(name, seconds a step needs to be started, step). The issue's figures first, then the
    tests, then the swarm runs: a call cut short by its budget leaves the least for the next."""
    steps = [("environment", 10, step_environment), ("ceilings", 15, step_ceilings),
             ("direct.kda", 120, step_kda), ("direct.softmax", 30, step_softmax),
             ("direct.rmsnorm", 30, step_rmsnorm), ("direct.matmul", 40, step_matmul),
             ("direct.matmul_tf32", 25, step_matmul_tf32), ("gpu_tests", 100, step_gpu_tests),
             ("evaluator.ptx", 20, step_evaluator_ptx)]
    steps += [(f"swarm.{w}.{t}", 30, (lambda w, t: lambda c: _swarm(c, w, t))(w, t)) for w, t in SWARMS]
    return steps + [("summary", 0, step_summary)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "bench" / "results"),
                    help="where the JSON and the log are copied after every step (default $OUT, else bench/results)")
    ap.add_argument("--state", default=str(ROOT / "var" / "gpu-campaign"),
                    help="where the campaign keeps its state between calls (default var/gpu-campaign)")
    ap.add_argument("--budget", type=float, default=510.0, help="seconds for this call (default 510: under 9 min)")
    ap.add_argument("--fla-wheel", default=None, help="a fla-core wheel to pip-install first (no index, no deps)")
    ap.add_argument("--only", nargs="*", default=None, help="run only the steps whose names start so")
    ap.add_argument("--fresh", action="store_true", help="forget earlier calls' results")
    ap.add_argument("--dry-run", action="store_true", help="a fake device: compiles everything, times nothing")
    ap.add_argument("--summarize", default=None, help="print the docs/benchmarks.md lines of a campaign JSON")
    args = ap.parse_args(argv)
    if args.summarize:
        print(markdown(json.loads(Path(args.summarize).read_text())))
        return 0
    # CUPY_CACHE_DIR stays as it is: this process (root on the device) and the sandbox children
    # (nobody) must not share one; kernels/harness/sandbox.py gives the children their own.
    campaign = Campaign(args)
    state = campaign.run(plan())
    campaign.log(markdown(state))
    failed = [k for k, v in state["steps"].items() if v["status"] == "failed"]
    campaign.log(f"=== done: {len(state['steps'])} steps recorded, failed: {failed or 'none'}; "
                 f"{campaign.json_path} (copied to {campaign.out_dir})")
    campaign.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
