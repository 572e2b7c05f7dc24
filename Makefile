# INT21 Kernel Factory — the two commands: `make run` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
PY     := $(VENV)/bin/python
PORT   ?= 8000
STAMP  := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench
CHROMIUM ?= /usr/bin/chromium

.PHONY: run test setup migrate bench bench-harness clean prod bench-fleet bench-gpu

$(STAMP): requirements.txt requirements-dev.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	@touch $(STAMP)

# The benchmarks' own requirements, on top of the product's: make bench and make test, not make run.
$(BENCH_STAMP): requirements-bench.txt $(STAMP)
	$(PY) -m pip install --quiet -r requirements-bench.txt
	@touch $(BENCH_STAMP)

# The browser tests drive Debian's Chromium (Playwright, executable_path); installed once.
$(CHROMIUM):
	@command -v apt-get >/dev/null && (apt-get install -y -qq chromium >/dev/null 2>&1 || \
	  (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)) || \
	  echo "could not install Debian's chromium: the browser tests will be skipped"

setup: $(STAMP)

migrate: setup
	$(PY) manage.py migrate --noinput

run: migrate
	@if [ "$${DEBUG:-true}" != "false" ]; then $(PY) manage.py demo; fi
	@PORT=$(PORT) $(PY) manage.py serve --port $(PORT)

test: setup $(BENCH_STAMP) $(CHROMIUM)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest

# Production mode on this host against a running PostgreSQL and Redis: migrate, collect the static
# files, then the Procfile's processes (web, orchestrate, cpu) under honcho. docs/deploy.md.
prod: setup
	@test "$${DEBUG}" = false && test -n "$${DATABASE_URL}" && test -n "$${REDIS_URL}" || \
	  { echo "make prod needs DEBUG=false, DATABASE_URL, REDIS_URL, SECRET_KEY and ALLOWED_HOSTS (docs/deploy.md)"; exit 2; }
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput -v0
	$(VENV)/bin/honcho start -f Procfile -p $(PORT)

# The benchmarks: python -m bench <benchmark> (python -m bench -h lists them).
bench-fleet: setup $(BENCH_STAMP)
	$(PY) -m bench fleet $(BENCH_ARGS)

bench: setup $(BENCH_STAMP)
	$(PY) -m bench peers $(BENCH_ARGS)

# The device campaign (docs/gpu.md): on a GPU host with the image's python3 (torch, CuPy); here
# `make bench-gpu BENCH_ARGS=--dry-run` runs it against a fake device.
GPU_PYTHON ?= $(shell test -x $(PY) && echo $(PY) || command -v python3)
bench-gpu:
	PYTHONPATH=. PYTHONUNBUFFERED=1 $(GPU_PYTHON) -m bench.gpu_campaign $(BENCH_ARGS)

bench-harness: setup $(BENCH_STAMP)
	$(PY) -m bench harness $(BENCH_ARGS)

clean:
	rm -rf $(VENV) var/cache
