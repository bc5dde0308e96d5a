# Salience — the two commands: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: demo test venv test-fast bench clean

$(VENV)/.installed: requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

## make demo: a whole campaign on the embedded default (SQLite, eager Celery, local MTurk).
## make demo CHANNEL=prolific|links: the same campaign on the local Prolific endpoint or on
## participant links, worked in sessions.
DEMO_DB := $(CURDIR)/var/demo.sqlite3
CHANNEL ?= mturk
DEMO_COMMAND := $(if $(filter mturk,$(CHANNEL)),demo,session_demo --channel $(CHANNEL))

demo: venv
	mkdir -p var && rm -f $(DEMO_DB)
	DATABASE_URL=sqlite:///$(DEMO_DB) CELERY_BROKER_URL= $(PY) manage.py $(DEMO_COMMAND) $(DEMO_ARGS)

## make test: services on loopback (PostgreSQL, Redis), Chromium, then the whole suite.
test: venv
	$(PY) -m tests.services ensure
	$(PY) -m tests.services run -- $(PY) -m pytest $(PYTEST_ARGS)

## make test-fast: the suite on SQLite, without starting services (for quick iteration).
test-fast: venv
	$(PY) -m pytest -m "not browser and not e2e" $(PYTEST_ARGS)

bench: venv
	$(PY) -m tests.services run -- sh -c 'for b in benchmarks/*_bench.py benchmarks/load/run.py; do $(PY) $$b $$( [ $$b = benchmarks/load/run.py ] && echo --repeat 3 ) || exit 1; done'

clean:
	rm -rf var staticfiles .pytest_cache
