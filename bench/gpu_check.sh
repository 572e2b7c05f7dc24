#!/usr/bin/env bash
# The CUDA target on a real GPU (prepared for an H200, driver 580 / CUDA 13.0), in under
# 8 minutes. Writes everything to a log under $OUT (the device runner's folder) or
# bench/results/, and one JSON per evaluation beside it.
#
#   1. a venv with requirements.txt + requirements-gpu.txt (CuPy), if there is none yet;
#   2. nvidia-smi, and what the target sees (compiler, CuPy, GPU, fingerprint);
#   3. the runner alone: every CUDA seed compiled and run through kernels.targets.cuda_runner
#      in a child process on small shapes, judged by the evaluator's own checks, then timed
#      against the baselines at the typical shape (independent of the evaluator's wiring);
#   4. every workload's CUDA seed through `manage.py evaluate --target cuda --json`.
#
# Usage: bash bench/gpu_check.sh     (GPU_CHECK_BUDGET=seconds to change the 450 s budget;
#        GPU_CHECK_NO_INSTALL=1 to leave the venv as it is)
set -uo pipefail
cd "$(dirname "$0")/.."
START=$SECONDS
BUDGET=${GPU_CHECK_BUDGET:-450}
DEST="${OUT:-bench/results}"
mkdir -p "$DEST"
STAMP=$(date +%Y%m%d-%H%M%S)
LOG="$DEST/gpu_check-$STAMP.log"
exec > >(tee -a "$LOG") 2>&1
left() { echo $(( BUDGET - (SECONDS - START) )); }
cap() { local l; l=$(left); (( l < 1 )) && l=1; (( l < $1 )) && echo "$l" || echo "$1"; }   # min(left, $1), at least 1
say() { echo; echo "=== $* ($(( SECONDS - START )) s)"; }

say "1. environment"
PY=.venv/bin/python
if [ -n "${GPU_CHECK_NO_INSTALL:-}" ]; then
  echo "GPU_CHECK_NO_INSTALL set: using .venv as it is"
elif ! [ -x "$PY" ]; then
  timeout "$(cap 60)" python3 -m venv .venv || echo "could not create .venv"
fi
if [ -n "${GPU_CHECK_NO_INSTALL:-}" ]; then
  :
elif ! "$PY" -c "import numpy, django" 2>/dev/null; then
  timeout "$(cap 240)" "$PY" -m pip install -q -r requirements.txt -r requirements-gpu.txt \
    || echo "pip install of requirements.txt + requirements-gpu.txt failed (no registry reachable?)"
elif ! "$PY" -c "import cupy" 2>/dev/null; then
  timeout "$(cap 180)" "$PY" -m pip install -q -r requirements-gpu.txt \
    || echo "pip install of requirements-gpu.txt failed (no registry reachable?)"
fi
"$PY" -m pip list 2>/dev/null | grep -iE "^(cupy|nvidia-|torch|numpy) " || true

say "2. GPU and target"
timeout 30 nvidia-smi || echo "nvidia-smi failed"
command -v nvcc && nvcc --version | tail -2 || echo "no nvcc on PATH (the target falls back to NVRTC)"
timeout "$(cap 60)" env PYTHONPATH=. "$PY" - <<'EOF'
import json
from kernels.targets.cuda import CudaTarget
t = CudaTarget()
print("available:", t.available())
print("can_run:  ", t.can_run())
print("fingerprint:", json.dumps(t.fingerprint(), indent=1))
EOF

say "3. the runner alone (compile, correctness on small shapes, timing at the typical shape)"
timeout "$(cap 240)" env PYTHONPATH=. DEST="$DEST" "$PY" - <<'EOF'
import json, os, subprocess, sys, tempfile, time
from pathlib import Path
from kernels import workloads
from kernels.harness import sandbox
from kernels.harness.evaluator import EvalSettings, Evaluator, _judge_correctness
from kernels.harness.timing import summarize
from kernels.targets.base import CompileFailure
from kernels.targets.cuda import CudaTarget

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
        work = Path(tempfile.mkdtemp(prefix="int21-gpucheck-"))
        (work / "kernel.cubin").write_bytes(Path(art.path).read_bytes())
        cases = ev._cases(wl)
        for c in cases:
            ev._materialise(wl, c, work)
        tcase = ev._cases(wl)[0]
        tcase.id, tcase.shape, tcase.kind = "timing", wl.shapes.typical[0], "typical"
        ev._materialise(wl, tcase, work)
        def launch(c):
            g, b, s = tpl.launch(c.shape, params)
            return {"grid": list(g), "block": list(b), "shared": int(s)}
        plan = {"target": "cuda", "artifact": "kernel.cubin", "entry": "kernel",
                "args": [{"name": a.name, "kind": a.kind} for a in wl.args],
                "cases": [{**ev._plan_case(wl, c), "launch": launch(c)} for c in cases],
                "timing": {"case": {**ev._plan_case(wl, tcase), "launch": launch(tcase)},
                           "baselines": [{"name": b.name, "fn": b.fn, "requires": b.requires}
                                         for b in wl.baselines.get("cuda", ()) if b.default],
                           "min_calls": 100, "max_calls": 300, "budget_seconds": 3.0, "warmup": 3}}
        (work / "plan.json").write_text(json.dumps(plan))
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-c", CHILD, "plan.json", "records.jsonl"], cwd=work,
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": os.getcwd()})
        records = [json.loads(l) for l in (work / "records.jsonl").read_text().splitlines()] \
            if (work / "records.jsonl").exists() else []
        run = sandbox.ProcessResult(proc.returncode, False, time.monotonic() - t0, proc.stdout, proc.stderr,
                                    records=records)
        dev = next((r for r in records if r["kind"] == "device"), {})
        print(f"  device {dev.get('gpu')} {dev.get('sm')} kernel attributes {dev.get('kernel')}")
        if proc.returncode != 0:
            print(f"  CHILD FAILED rc={proc.returncode}: {proc.stderr[-1500:]}")
            summary.append((label, "crashed")); continue
        verdict = _judge_correctness(wl, cases, run, wl.tolerance, work)
        print(f"  correctness on {len(cases)} cases: {verdict or 'passed'}")
        timing = next((r for r in records if r["kind"] == "timing"), None)
        if timing:
            import numpy as np
            from kernels.harness.verify import compare
            ok = all(compare(np.load(work / p), tcase.reference[n], wl.tolerance)["passed"]
                     for n, p in timing.get("outputs", {}).items())
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

say "4. manage.py evaluate --target cuda for every seed"
timeout "$(cap 30)" env PYTHONPATH=. "$PY" - > "$DEST/seeds-$STAMP.txt" <<'EOF'
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
while IFS=$'\t' read -r wl variant src flags; do
  (( $(left) < 30 )) && { echo "budget spent: skipping $wl/$variant and the rest"; break; }
  [ -f "$src" ] || { echo "$wl/$variant: no seed file $src"; continue; }
  json="$DEST/evaluate-$wl-$variant-$STAMP.json"
  if [ -f manage.py ]; then
    # shellcheck disable=SC2086
    timeout "$(cap 150)" "$PY" manage.py evaluate --workload "$wl" --target cuda --source "$src" $flags --json \
      > "$json" 2> "$json.stderr"
  else
    timeout "$(cap 150)" env PYTHONPATH=. "$PY" - "$wl" "$src" $flags > "$json" 2> "$json.stderr" <<'EOF'
import json, sys
from pathlib import Path
from kernels.harness.evaluator import Evaluator
wl, src, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
params = {}
for k, v in (a.split("=", 1) for a in rest if a != "--param"):
    params[k] = int(v) if v.lstrip("-").isdigit() else v
print(json.dumps(Evaluator().evaluate(Path(src).read_text(), params, wl, "cuda").to_json()))
EOF
  fi
  rc=$?
  "$PY" - "$json" "$wl/$variant" "$rc" <<'EOF'
import json, sys
path, label, rc = sys.argv[1:]
try:
    o = json.loads(open(path).read().strip().splitlines()[-1])
except Exception:
    print(f"{label}: no JSON (exit {rc}); stderr: {open(path + '.stderr').read()[-800:]}"); sys.exit()
print(f"{label}: {o['status']}: {o['reason']}")
for name, t in (o.get("timings") or {}).items():
    print(f"    {name:<12} median {t['median_ms']:.4f} ms  n={t['n']}")
EOF
done < "$DEST/seeds-$STAMP.txt"

say "done; log at $LOG"
