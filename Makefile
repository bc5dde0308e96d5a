# Salience — the two commands: `make demo` and `make test` (which runs `make lint` first).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: demo test lint venv test-fast bench clean

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

demo: venv
	mkdir -p var && rm -f $(DEMO_DB)
	DATABASE_URL=sqlite:///$(DEMO_DB) CELERY_BROKER_URL= $(PY) manage.py demo --channel $(CHANNEL) $(DEMO_ARGS)

## make lint: ruff (lint and format check), mypy with django-stubs (strict on the pure core,
## the ledger and the marketplaces) and the import-linter contracts; all configured in
## pyproject.toml. mypy's Django plugin imports config.settings: pinned to the development
## defaults, so no service has to run and the shell's deployment variables don't matter.
LINT_ENV := SALIENCE_ENV=development DATABASE_URL=sqlite://:memory: CELERY_BROKER_URL= CACHE_URL=locmemcache:// PROLIFIC_ENVIRONMENT=local

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(LINT_ENV) $(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

## make test: lint, then services on loopback (PostgreSQL, Redis), Chromium, nginx and the whole suite.
test: venv lint
	$(PY) -m tests.services ensure
	$(PY) -m tests.services run -- $(PY) -m pytest $(PYTEST_ARGS)

## make test-fast: the suite on SQLite, without starting services (for quick iteration).
test-fast: venv
	$(PY) -m pytest -m "not browser and not e2e" $(PYTEST_ARGS)

bench: venv
	$(PY) -m tests.services run -- sh -c 'for b in benchmarks/*_bench.py benchmarks/load/run.py; do $(PY) $$b $$( [ $$b = benchmarks/load/run.py ] && echo --repeat 3 ) || exit 1; done'

clean:
	rm -rf var staticfiles .pytest_cache
