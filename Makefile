# INT21 Kernel Factory — the two commands: `make run` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
PY     := $(VENV)/bin/python
PORT   ?= 8000
STAMP  := $(VENV)/.installed

.PHONY: run test setup migrate bench bench-harness clean

$(STAMP): requirements.txt requirements-dev.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	@touch $(STAMP)

setup: $(STAMP)

migrate: setup
	$(PY) manage.py migrate --noinput

run: migrate
	@echo "INT21 Kernel Factory at http://127.0.0.1:$(PORT)/ (Ctrl-C stops it)"
	$(PY) manage.py runserver 127.0.0.1:$(PORT)

test: setup
	$(PY) -m pytest

bench: setup
	$(PY) manage.py bench $(BENCH_ARGS)

bench-harness: setup
	$(PY) bench/harness_speed.py

clean:
	rm -rf $(VENV) var/cache
