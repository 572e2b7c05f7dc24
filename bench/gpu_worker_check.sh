#!/usr/bin/env bash
# The GPU host's path end to end (docs/deploy.md, "A GPU host"): a `celery -A int21web worker
# -Q target.cuda` process announces its GPU in the worker registry, refuses a concurrency above
# one evaluation per GPU, and evaluates the CUDA candidates of a small run that an orchestrate
# worker drives. Prepared for the device machine (H200 image: python3 with NumPy, CuPy, torch;
# no network, no Redis, no PostgreSQL), so it uses what is there:
#   - Python packages the image lacks come from var/gpu-wheels (carried; made on a networked
#     host with bench/gpu_worker_wheels.sh), installed into /tmp with --no-deps;
#   - the broker is Redis when redis-server exists, else Kombu's filesystem transport (the
#     same tasks, routing and acks; docs/deploy.md says why production uses Redis);
#   - the database is a SQLite file (production uses PostgreSQL; the worker path is the same).
# Writes its log (and the run's summary JSON) under $OUT or bench/results/.
#
# Usage: bash bench/gpu_worker_check.sh      (GPU_WORKER_TARGET=cpu runs the same flow on a CPU host)
set -uo pipefail
cd "$(dirname "$0")/.."
START=$SECONDS
DEST="${OUT:-bench/results}"
mkdir -p "$DEST"
STAMP=$(date +%Y%m%d-%H%M%S)
LOG="$DEST/gpu_worker_check-$STAMP.log"
exec > >(tee -a "$LOG") 2>&1
say() { echo; echo "=== $* ($(( SECONDS - START )) s)"; }
export PYTHONUNBUFFERED=1
TARGET=${GPU_WORKER_TARGET:-cuda}
WORK=$(mktemp -d /tmp/int21-gpu-worker-XXXXXX)
chmod 755 "$WORK"   # the sandbox child may run as nobody
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done; sleep 2;
            for p in "${PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null; done; }
trap cleanup EXIT

say "1. interpreter and packages"
if [ -x .venv/bin/python ] && .venv/bin/python -c "import django, celery, numpy" 2>/dev/null; then
  PY=.venv/bin/python
else
  PY=$(command -v python3)
  if ! "$PY" -c "import django, celery" 2>/dev/null; then
    [ -d var/gpu-wheels ] || { echo "no Django/Celery here and no var/gpu-wheels to install them from"; exit 2; }
    "$PY" -m pip install -q --no-deps --no-index --target "$WORK/site" var/gpu-wheels/*.whl || exit 2
    export PYTHONPATH="$WORK/site${PYTHONPATH:+:$PYTHONPATH}"
  fi
fi
CELERY=("$PY" -m celery)
"$PY" -c 'import sys, django, celery, numpy; print(sys.version.split()[0], "django", django.__version__, "celery", celery.__version__, "numpy", numpy.__version__)'
"$PY" -c 'import cupy; print("cupy", cupy.__version__)' 2>/dev/null || echo "no CuPy"
timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null || echo "no nvidia-smi"

export DEBUG=true INT21_VAR_DIR="$WORK/var" LOG_LEVEL=WARNING
export INT21_WORKER_HEARTBEAT=2 INT21_EVAL_HEARTBEAT=1 INT21_EVAL_STALE=30 INT21_RECOVER_EVERY=5
export CUPY_CACHE_DIR=/tmp/int21-cupy-cache && mkdir -p "$CUPY_CACHE_DIR" && chmod 1777 "$CUPY_CACHE_DIR"
unset DATABASE_URL REDIS_URL
if command -v redis-server >/dev/null; then
  PORT=$(( 20000 + RANDOM % 20000 ))
  setsid redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no >/dev/null 2>&1 &
  PIDS+=($!)
  sleep 1
  export CELERY_BROKER_URL="redis://127.0.0.1:$PORT/0"
else
  export CELERY_BROKER_URL="filesystem://"
fi
echo "broker: $CELERY_BROKER_URL; database: SQLite in $INT21_VAR_DIR"
"$PY" manage.py migrate -v0 || exit 2

if [ "$TARGET" = cuda ]; then
  say "2. a worker asked for two evaluations at once on one GPU is refused"
  timeout 60 "${CELERY[@]}" -A int21web worker -Q target.cuda -n refused@%h -c 2 > "$WORK/refused.log" 2>&1
  echo "exit status $? (78 expected):"; grep -A2 "refuses to start" "$WORK/refused.log" || tail -n 5 "$WORK/refused.log"
fi

say "3. the target.$TARGET worker and an orchestrate worker"
setsid env CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0}" "${CELERY[@]}" -A int21web worker -Q "target.$TARGET" \
  -n "${TARGET}0@%h" -c 1 -l INFO > "$WORK/worker.log" 2>&1 &
PIDS+=($!)
setsid "${CELERY[@]}" -A int21web worker -Q orchestrate -n orchestrate@%h -c 1 -l INFO > "$WORK/orchestrate.log" 2>&1 &
PIDS+=($!)
"$PY" manage.py shell -c "
import time
from int21web.fleet import selectors
deadline = time.monotonic() + 120
while time.monotonic() < deadline and len([w for w in selectors.workers() if w['status'] == 'live']) < 2:
    time.sleep(0.5)
import json
for w in selectors.workers():
    print(w['name'], w['status'], w['queues'], 'concurrency', w['concurrency'])
    print('  fingerprint:', json.dumps(w['fingerprint']))
print('live_worker_for($TARGET):', bool(selectors.live_worker_for('$TARGET')), '-', selectors.live_worker_for('$TARGET').reason)
"

say "4. a small $TARGET run: candidates evaluated by the worker"
timeout 420 "$PY" manage.py shell -c "
import json, time
from int21web.runs import models as m, services
spec = {'workload': 'softmax', 'target': '$TARGET', 'shapes': ['1024x1024'], 'population': 2, 'cold': True,
        'team': ['explorer', 'mutator'], 'budget': {'evaluations': 4, 'stagnation_generations': 0},
        'eval_settings': {'seeds': 2, 'timing_budget_s': 0.5, 'recheck': False}}
g = m.Goal.objects.create(name='gpu worker check', spec=spec)
run_id = services.run_launch(goal_row=g)
t0 = time.monotonic()
while time.monotonic() - t0 < 400:
    run = m.Run.objects.get(pk=run_id)
    if run.state == 'finished':
        break
    time.sleep(1)
print('run', run_id, run.state, run.finish_reason, f'{time.monotonic() - t0:.0f} s')
rows = []
for c in m.Candidate.objects.filter(run_id=run_id).order_by('id'):
    evs = list(c.evaluations.order_by('attempt').values('attempt', 'worker', 'status', 'evaluator_seconds', 'finished_at'))
    r = c.result or {}
    print(f'#{c.id} {c.state} {c.status}: {r.get(\"reason\", \"\")[:160]}')
    print(f'   params {c.params} median {r.get(\"median_ms\")} ms speedup {r.get(\"speedup\")}')
    for e in evs:
        print(f'   attempt {e[\"attempt\"]} on {e[\"worker\"]}: {e[\"status\"]} in {e[\"evaluator_seconds\"]} s')
    rows.append({'id': c.id, 'status': c.status, 'params': c.params, 'result': r,
                 'evaluations': [{k: str(v) for k, v in e.items()} for e in evs]})
done = [r for r in rows if r['evaluations'] and all(e['worker'].startswith('${TARGET}0@') for e in r['evaluations'])]
print(f'{len(done)}/{len(rows)} candidates evaluated by the ${TARGET}0 worker;',
      'statuses', sorted({r['status'] for r in rows}))
json.dump({'run': run_id, 'state': run.state, 'reason': run.finish_reason, 'candidates': rows},
          open('$DEST/gpu_worker_check-$STAMP.json', 'w'), indent=1, default=str)
"
echo "run step exit status $?"

say "5. worker logs (tails)"
tail -n 25 "$WORK/worker.log"; tail -n 10 "$WORK/orchestrate.log"
say "done; log at $LOG"
