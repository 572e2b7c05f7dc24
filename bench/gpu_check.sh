#!/usr/bin/env bash
# The CUDA target on a real GPU (prepared for an H200, driver 580 / CUDA 13.0), in about
# 7 minutes. Writes everything to a log under $OUT (the device runner's folder) or
# bench/results/, and one JSON per evaluation beside it. Installs nothing: the device
# machine has no network. It uses .venv when that has NumPy and CuPy, else the system
# python3 (on the H200 image: /opt/torch/.venv with NumPy, CuPy 14, torch 2.11).
#
#   1. the interpreter, the device files, who we are;
#   2. nvidia-smi, and what the target sees (compiler, CuPy, GPU, fingerprint);
#   3. the sandbox child's isolation with CUDA: a context made before / after dropping to
#      nobody in a new network namespace (what kernels/harness/child.py does as root);
#   4. every workload's CUDA seed through the evaluator: `manage.py evaluate --target cuda
#      --json` when Django (and Celery, which int21web imports) are importable, else the same
#      Evaluator called directly, all seeds in one process (one fork server);
#   5. the runner alone, with what budget is left: each seed compiled and run through
#      kernels.targets.cuda_runner in a plain child (no isolation, no evaluator wiring),
#      judged by the evaluator's own checks, then timed against the baselines.
#
# Usage: bash bench/gpu_check.sh     (GPU_CHECK_BUDGET=seconds to change the 420 s budget;
#        GPU_CHECK_PYTHON=path to choose the interpreter)
set -uo pipefail
cd "$(dirname "$0")/.."
START=$SECONDS
BUDGET=${GPU_CHECK_BUDGET:-420}
DEST="${OUT:-bench/results}"
mkdir -p "$DEST"
STAMP=$(date +%Y%m%d-%H%M%S)
LOG="$DEST/gpu_check-$STAMP.log"
RESULTS="$DEST/gpu_check-$STAMP-evaluate.jsonl"   # one line per evaluation ($OUT brings back 8 files at most)
SEEDS=$(mktemp /tmp/int21-seeds-XXXXXX)
exec > >(tee -a "$LOG") 2>&1
left() { echo $(( BUDGET - (SECONDS - START) )); }
cap() { local l; l=$(left); (( l < 1 )) && l=1; (( l < $1 )) && echo "$l" || echo "$1"; }   # min(left, $1), at least 1
say() { echo; echo "=== $* ($(( SECONDS - START )) s)"; }
export PYTHONUNBUFFERED=1

say "1. environment"
date -u
if [ -n "${GPU_CHECK_PYTHON:-}" ]; then
  PY=$GPU_CHECK_PYTHON
elif [ -x .venv/bin/python ] && .venv/bin/python -c "import numpy, cupy" 2>/dev/null; then
  PY=.venv/bin/python
else
  PY=$(command -v python3)
fi
echo "python: $PY ($("$PY" -c 'import sys; print(sys.version.split()[0], sys.executable)'))"
"$PY" -m pip list 2>/dev/null | grep -iE "^(cupy|cupy-cuda\S*|torch|numpy|django|celery|threadpoolctl) " || true
DJANGO=0
[ -z "${GPU_CHECK_NO_DJANGO:-}" ] && "$PY" -c "import django, celery, dj_database_url, sqlparse, asgiref" 2>/dev/null \
  && DJANGO=1
echo "Django + Celery importable: $DJANGO"
echo "uid $(id -u), repo $(pwd) ($(stat -c '%A %U' .))"
ls -l /dev/nvidia* 2>&1 | head -12
df -h /dev/shm /tmp 2>&1 | tail -2
# One CuPy kernel cache for every child (CuPy compiles its own fill/compare/reduction kernels
# with NVRTC; without it each sandbox child, whose default cache is its fresh working folder,
# compiles them again). The children run as nobody, hence 1777. sandbox.minimal_env passes it on.
export CUPY_CACHE_DIR=/tmp/int21-cupy-cache
mkdir -p "$CUPY_CACHE_DIR" && chmod 1777 "$CUPY_CACHE_DIR"

say "2. GPU and target"
timeout 30 nvidia-smi || echo "nvidia-smi failed"
command -v nvcc && nvcc --version | tail -2 || echo "no nvcc on PATH (the target looks under CUDA_HOME and /usr/local/cuda, else NVRTC)"
timeout "$(cap 60)" env PYTHONPATH=. "$PY" - <<'EOF'
import json
from kernels.targets.cuda import CudaTarget
t = CudaTarget()
print("available:", t.available())
print("can_run:  ", t.can_run())
print("fingerprint:", json.dumps(t.fingerprint()))
EOF

say "3. CUDA in an isolated child (new network namespace, uid 65534), context made before / after the drop"
for when in before after; do
  timeout "$(cap 60)" env PYTHONPATH=. "$PY" - "$when" <<'EOF'
import sys
when = sys.argv[1]
import cupy as cp
from kernels.harness.child import isolate
if when == "before":
    cp.cuda.runtime.free(0)
applied = isolate({})
try:
    a = cp.arange(1 << 20, dtype=cp.float32)
    print(f"context {when} the drop: {applied}: ok, sum {float((a * 2).sum()):.0f}")
except Exception as exc:
    print(f"context {when} the drop: {applied}: FAILED {type(exc).__name__}: {exc}")
EOF
done

say "4. the evaluator on every CUDA seed"
timeout "$(cap 30)" env PYTHONPATH=. "$PY" - > "$SEEDS" <<'EOF'
from kernels import workloads
for name in workloads.names():
    try:
        tpl = workloads.get(name).template("cuda")
    except Exception:
        continue
    for variant, rel in tpl.variants.items():
        params = tpl.space.default()
        if tpl.variant_param:
            params[tpl.variant_param] = variant
        flags = " ".join(f"--param {k}={v}" for k, v in params.items())
        print(f"{name}\t{variant}\t{tpl.folder / rel}\t{flags}")
EOF
cat "$SEEDS"
EVAL_SHARE=${GPU_CHECK_EVAL_SECONDS:-270}   # of the budget, for this step
if [ "$DJANGO" = 1 ]; then
  while IFS=$'\t' read -r wl variant src flags; do
    (( $(left) < 30 )) && { echo "budget spent: skipping $wl/$variant and the rest"; break; }
    # shellcheck disable=SC2086
    timeout "$(cap 150)" "$PY" manage.py evaluate --workload "$wl" --target cuda --source "$src" $flags --json \
      > "$SEEDS.json" 2> "$SEEDS.stderr"
    echo "$wl/$variant: exit $?; $(tail -c 600 "$SEEDS.stderr")"
    "$PY" -c "import json,sys; o=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); print(o['status'], o['reason']); \
print(json.dumps({'workload': sys.argv[2], 'variant': sys.argv[3], **o}), file=open(sys.argv[4], 'a'))" \
      "$SEEDS.json" "$wl" "$variant" "$RESULTS" || echo "$wl/$variant: no JSON"
  done < "$SEEDS"
else
  echo "(no Django here: the Evaluator itself, as manage.py evaluate calls it, all seeds in one process)"
  timeout "$(cap "$EVAL_SHARE")" env PYTHONPATH=. "$PY" - "$SEEDS" "$RESULTS" \
      "$(( $(cap "$EVAL_SHARE") - 15 ))" <<'EOF'
import json, sys, time, traceback
from pathlib import Path
from kernels import workloads
from kernels.harness.evaluator import EvalSettings, Evaluator
seeds, results, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
deadline = time.monotonic() + seconds
progress = lambda st: print(f"    {st.name:<12} {st.status:<7} {st.seconds:6.1f} s  {st.summary[:300]}", flush=True)
ev = Evaluator(EvalSettings(run_timeout=60), on_stage=progress)   # a hung kernel costs 60 s, not 180
summary = []
for line in open(seeds):
    wl_name, variant, src, flags = line.rstrip("\n").split("\t")
    label = f"{wl_name}/{variant}"
    if time.monotonic() > deadline - 25:
        print(f"{label}: skipped (budget)"); summary.append((label, "skipped")); continue
    params = {}
    for a in flags.split():
        if a != "--param":
            k, v = a.split("=", 1)
            params[k] = int(v) if v.lstrip("-").isdigit() else v
    print(f"{label} {params}", flush=True)
    t0 = time.monotonic()
    try:
        out = ev.evaluate(Path(src).read_text(), params, wl_name, "cuda").to_json()
    except Exception:
        traceback.print_exc(); summary.append((label, "raised")); continue
    with open(results, "a") as f:
        f.write(json.dumps({"workload": wl_name, "variant": variant, **out}) + "\n")
    print(f"  => {out['status']}: {out['reason']}  ({time.monotonic() - t0:.1f} s)")
    wl = workloads.get(wl_name)
    bench = next((s for s in out.get("stages", []) if s.get("name") == "benchmark"), {})
    shape = (bench.get("details") or {}).get("shape")
    for impl, t in (out.get("timings") or {}).items():
        gbs = ""
        if shape and t.get("median_ms"):
            from kernels.spec import Shape
            sh = Shape.of(**shape)
            gbs = (f"  {wl.bytes_moved(sh) / (t['median_ms'] / 1e3) / 1e9:7.0f} GB/s"
                   f"  {wl.flops(sh) / (t['median_ms'] / 1e3) / 1e9:8.0f} GFLOP/s at {sh}")
        print(f"    {impl:<12} median {t['median_ms']:.4f} ms  min {t['min_ms']:.4f}  IQR {t['iqr_ms']:.4f}  n={t['n']}{gbs}")
    if out.get("speedup"):
        print("    speedup of the candidate over: " + ", ".join(f"{k} {v:.2f}x" for k, v in out["speedup"].items()))
    summary.append((label, out["status"]))
print("\nevaluator summary:", json.dumps(summary))
EOF
  echo "evaluator step exit code: $?"
fi

say "5. the runner alone (compile, correctness on small shapes, timing at the typical shape)"
(( $(left) < 30 )) && { say "budget spent; done; log at $LOG"; exit 0; }
CUPY_CACHE_DIR=/tmp/int21-cupy-cache-root timeout "$(cap 240)" env PYTHONPATH=. DEADLINE="$(( $(left) - 10 ))" "$PY" - <<'EOF'
import json, os, subprocess, sys, tempfile, time
from pathlib import Path
import numpy as np
from kernels import workloads
from kernels.harness import sandbox
from kernels.harness.evaluator import EvalSettings, Evaluator, _Case, _judge_correctness
from kernels.harness.timing import summarize
from kernels.harness.verify import compare
from kernels.targets.base import CompileFailure
from kernels.targets.cuda import CudaTarget

deadline = time.monotonic() + float(os.environ["DEADLINE"])
CHILD = r'''
import json, os, sys
from kernels.targets import cuda_runner
out = open(sys.argv[2], "w", buffering=1)
emit = lambda kind, **f: out.write(json.dumps({"kind": kind, **f}) + "\n")
emit("hello")
cuda_runner.run(json.load(open(sys.argv[1])), emit)
emit("done")
'''
tgt = CudaTarget()
summary = []
for name in workloads.names():
    try:
        wl = workloads.get(name)
        tpl = wl.template("cuda")
    except Exception as exc:
        print(f"{name}: skipped ({exc})"); continue
    for variant in tpl.variants:
        label = f"{name}/{variant}"
        if time.monotonic() > deadline - 20:
            print(f"{label}: skipped (budget)"); summary.append((label, "skipped")); continue
        try:
            source = tpl.source(variant)
        except OSError as exc:
            print(f"{label}: seed missing ({exc})"); continue
        params = tpl.space.default()
        if tpl.variant_param:
            params[tpl.variant_param] = variant
        art = tgt.compile(source, params, {"arch": "sm_90"})
        if isinstance(art, CompileFailure):
            print(f"{label}: COMPILE FAILED {art.reason}"); summary.append((label, "compile_error")); continue
        audit = tgt.audit(art, {})
        print(f"{label}: resources {json.dumps(art.resources)}; audit {'ok' if audit.ok else audit.problems}")
        ev = Evaluator(EvalSettings(seeds=2))
        ev._target, ev._params = "cuda", params
        work = Path(tempfile.mkdtemp(prefix="int21-gpucheck-"))
        (work / "kernel.cubin").write_bytes(Path(art.path).read_bytes())
        cases = ev._cases(wl)
        for c in cases:
            ev._materialise(wl, c, work)
        tcase = _Case("timing", "typical", wl.shapes.typical[0], wl.distributions[0], 9001)
        ev._materialise(wl, tcase, work)
        tcase.alt = _Case("timingb", "typical", tcase.shape, wl.distributions[0], 9002)
        ev._materialise(wl, tcase.alt, work, derive_from=tcase)
        plan = {"target": "cuda", "artifact": "kernel.cubin", "entry": "kernel",
                "args": [{"name": a.name, "kind": a.kind} for a in wl.args],
                "cases": [ev._plan_case(wl, c) for c in cases],
                "timing": {"case": ev._plan_case(wl, tcase),
                           "baselines": [{"name": b.name, "fn": b.fn, "requires": b.requires}
                                         for b in wl.baselines.get("cuda", ()) if b.default],
                           "min_calls": 100, "max_calls": 300, "budget_seconds": 2.0, "warmup": 3}}
        (work / "plan.json").write_text(json.dumps(plan))
        t0 = time.monotonic()
        try:
            proc = subprocess.run([sys.executable, "-c", CHILD, "plan.json", "records.jsonl"], cwd=work,
                                  capture_output=True, text=True, timeout=max(10, min(120, deadline - time.monotonic())),
                                  env={**os.environ, "PYTHONPATH": os.getcwd()})
        except subprocess.TimeoutExpired:
            print("  CHILD TIMED OUT"); summary.append((label, "timed_out")); continue
        records = [json.loads(l) for l in (work / "records.jsonl").read_text().splitlines()] \
            if (work / "records.jsonl").exists() else []
        run = sandbox.ProcessResult(proc.returncode, False, time.monotonic() - t0, proc.stdout, proc.stderr,
                                    records=records)
        dev = next((r for r in records if r["kind"] == "device"), {})
        print(f"  device {dev.get('gpu')} {dev.get('sm')} kernel attributes {dev.get('kernel')} "
              f"({time.monotonic() - t0:.1f} s in the child)")
        if proc.returncode != 0:
            print(f"  CHILD FAILED rc={proc.returncode}: {proc.stderr[-1500:]}")
            summary.append((label, "crashed")); continue
        verdict = _judge_correctness(wl, cases, run, wl.tolerance, work)
        print(f"  correctness on {len(cases)} cases: {verdict or 'passed'}")
        timing = next((r for r in records if r["kind"] == "timing"), None)
        if timing:
            ok = {key: all(compare(np.load(work / p), case.reference[n], wl.tolerance)["passed"]
                           for n, p in timing.get(key, {}).items()) and bool(timing.get(key))
                  for key, case in (("outputs", tcase), ("outputs_b", tcase.alt))}
            print(f"  timing problems {timing.get('problems')} mismatch_at {timing.get('mismatch_at_call')} "
                  f"calls {timing.get('timed_calls')} verified {ok} notes {timing.get('notes')}")
            for impl, s in timing.get("samples", {}).items():
                t = summarize(s)
                gbs = wl.bytes_moved(tcase.shape) / (t["median_ms"] / 1e3) / 1e9
                print(f"    {impl:<12} median {t['median_ms']:.4f} ms  min {t['min_ms']:.4f}  n={t['n']}  "
                      f"{gbs:.0f} GB/s at {tcase.shape}")
        summary.append((label, verdict[0] if verdict else "ok"))
print("\nrunner summary:", json.dumps(summary))
EOF
echo "runner check exit code: $?"

say "6. python -m bench gpu (the peers report's GPU section: CUDA kernels vs CuPy/cuBLAS and torch)"
if (( $(left) > 60 )); then   # framework-free: runs where Django is not installed
  timeout "$(cap 300)" env PYTHONPATH=. "$PY" -m bench gpu --quick --out "$DEST" \
    || echo "bench gpu exit code: $?"
else
  echo "budget spent: bench gpu not run"
fi

say "done; log at $LOG, evaluations in $RESULTS"
