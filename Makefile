# Salience — `make demo`, `make serve` and `make test` (which runs `make lint` first).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: demo serve test lint venv test-fast bench bench-figures clean

$(VENV)/.installed: requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

## make demo: a whole campaign on the embedded default (SQLite, eager Celery), recruited on
## participant links and worked in sessions by a simulated crowd; CHANNEL=prolific runs it on
## the local Prolific endpoint, CHANNEL=mturk on the local MTurk endpoint (MTurk closed on
## 2026-09-30: rehearsal only). It ends with a link to try a HIT yourself.
DEMO_DB := $(CURDIR)/var/demo.sqlite3
CHANNEL ?= links
PORT ?= 8000

demo: venv
	mkdir -p var && rm -f $(DEMO_DB)
	DATABASE_URL=sqlite:///$(DEMO_DB) CELERY_BROKER_URL= $(PY) manage.py demo --channel $(CHANNEL) --port $(PORT) $(DEMO_ARGS)

## make serve: the app on the embedded default (SQLite in SERVE_DB): migrations, a first login
## if there is none (printed; or DJANGO_SUPERUSER_USERNAME / DJANGO_SUPERUSER_PASSWORD), the
## dashboard, HIT pages and local MTurk and Prolific endpoints on 127.0.0.1:PORT, and the
## campaign loop: a Celery worker with beat if CELERY_BROKER_URL is set, else in-process.
## A rehearsal server: SERVE_HOST=0.0.0.0 lets other machines in (debug is then off); a real study
## runs on the deployment (docker-compose.yml or deploy/onehost/).
SERVE_DB ?= $(CURDIR)/var/salience.sqlite3
SERVE_HOST ?= 127.0.0.1

serve: venv
	mkdir -p var
	DATABASE_URL=sqlite:///$(SERVE_DB) SITE_URL=$${SITE_URL:-http://127.0.0.1:$(PORT)} $(PY) manage.py serve --host $(SERVE_HOST) --port $(PORT)

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
	@$(PY) -c 'import tomllib; c = {k["id"]: k for k in tomllib.load(open("pyproject.toml", "rb"))["tool"]["importlinter"]["contracts"]}; print("layers contract:", len(c["layers"].get("ignore_imports", [])), "exempted import lines (target: 6 at most)")'

## make test: lint, then services on loopback (PostgreSQL, Redis), Chromium, nginx and the whole
## suite but the tests marked `slow` (whole demos of a campaign, the load run, the 200 MB import:
## `make bench` runs them), in TEST_RUNNERS pytest-xdist runners (at most 4: each has its own
## test database and 8 of Redis's 32 databases; TEST_RUNNERS=0 runs in one process). Three on
## two cores: much of a runner's time is spent waiting for the services, browsers and workers it starts.
## Files go to the runners whole, the long ones first (tests/conftest.py orders them: xdist's own
## order, most tests first, left the one-test browser journeys to the end).
TEST_RUNNERS ?= 3

test: venv lint
	$(PY) -m tests.services ensure
	$(PY) -m tests.services run -- $(PY) -m pytest -n $(TEST_RUNNERS) --dist loadfile --no-loadscope-reorder -m "not slow" $(PYTEST_ARGS)

## make test-fast: the suite on SQLite, without starting services (for quick iteration).
test-fast: venv
	$(PY) -m pytest -m "not browser and not e2e" $(PYTEST_ARGS)

## make bench: the tests marked `slow`, then every benchmark at the issues' sizes (make bench-figures).
bench: venv
	$(PY) -m tests.services run -- $(PY) -m pytest -m slow $(PYTEST_ARGS)
	$(MAKE) bench-figures

## make bench-figures: every benchmark, one after another, at the sizes the issues name
## (benchmarks/run_all.py: each prints ours beside its baseline; the load before and after each,
## the commit, one markdown table and the JSON lines go to var/bench/<date>-<commit>/; ~1.5 hours
## on 2 quiet cores, import and e2e reduced: BENCH_ARGS=--full runs their issue sizes too).
## BENCH_ARGS=--quick checks that each still runs (small sizes, ~30 minutes).
bench-figures: venv
	$(PY) -m tests.services run -- $(PY) benchmarks/run_all.py $(BENCH_ARGS)

clean:
	rm -rf var staticfiles .pytest_cache
