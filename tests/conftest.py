"""Shared fixtures. Services come from `python -m tests.services run`; with CI=true a
missing one is a failure, never a skip."""

import gc
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from tests.factories import CampaignFactory
from tests.services import REDIS_DATABASES, REDIS_DATABASES_PER_RUNNER, free_port, redis_database

CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

# Property tests check what holds, never how fast: with several runners on two cores, drawing
# examples may be slow without anything being wrong (HealthCheck.too_slow, per-example deadlines).
hypothesis_settings.register_profile("salience", deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("salience")


def require_service(variable: str, what: str) -> str:
    """The URL of a service started by the test tooling: fail in CI, skip elsewhere."""
    value = os.environ.get(variable)
    if value:
        return value
    message = f"{what} is not running: run the suite with `make test` ({variable} unset)"
    if CI:
        pytest.fail(message)
    pytest.skip(message)


def pytest_sessionstart(session):
    if CI and not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise pytest.UsageError("CI=true needs PostgreSQL: run the suite through `make test`.")


def pytest_configure(config):
    """Tests sign in hundreds of researchers: Django's default PBKDF2 takes half a second a
    password on a 2-core machine, MD5 none (Django's advice for test runs). The deployment
    tests (tests/attacks/test_production.py) run their own settings and keep the default.

    Under pytest-xdist (`make test` runs two runners) each runner has its own test database
    (pytest-django's suffix) and its own Redis databases, so that Celery workers, queues and
    rate-limit counters of one runner's tests never meet the other's."""
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    _flush_by_delete()
    runner = os.environ.get("PYTEST_XDIST_WORKER", "")
    if runner.startswith("gw") and os.environ.get("SALIENCE_TEST_REDIS_URL"):
        if int(runner[2:]) >= REDIS_DATABASES // REDIS_DATABASES_PER_RUNNER:
            raise pytest.UsageError(f"At most {REDIS_DATABASES // REDIS_DATABASES_PER_RUNNER} runners share one Redis.")
        os.environ["SALIENCE_TEST_REDIS_URL"] = redis_database(
            os.environ["SALIENCE_TEST_REDIS_URL"], REDIS_DATABASES_PER_RUNNER * int(runner[2:])
        )


# What Django's post_migrate makes after every flush, the same each time: kept, so the flush finds them.
FLUSH_KEEPS = frozenset({"django_content_type", "auth_permission"})


def _flush_by_delete() -> None:
    """After each transactional test (`transaction=True`, the live server's, the workers') pytest-django
    empties the database with Django's flush: on PostgreSQL one TRUNCATE of every table, which
    gives each table, index and TOAST table a new file: a quarter of a second on a quiet 2-core
    machine, a second and more under the suite's own load, for tables that hold a few rows.
    DELETE FROM each table empties them as well, in milliseconds: Django runs the flush in one
    transaction and creates PostgreSQL's foreign keys deferred, so the order does not matter.
    The content types and permissions are kept: the flush's post_migrate signal would write the
    same rows again (and still adds any a test removed). This process's flush only (test runs):
    `manage.py flush` and every process a test starts keep TRUNCATE, and a flush that resets
    sequences keeps it too."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences:
            return truncate(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        return [
            f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};"
            for table in tables
            if table not in FLUSH_KEEPS
        ]

    DatabaseOperations.sql_flush = sql_flush


# Tests that start a browser, a Celery worker or a fault (killed workers, Redis restarted) take
# from 10 s to 100 s each: their files are the longest ones.
LONG_MARKERS = ("browser", "e2e", "faults")


def pytest_collection_modifyitems(config, items):
    """The files of long tests first, each file's tests in their own order. `make test` hands
    whole files to its runners in collection order (`--dist loadfile --no-loadscope-reorder`;
    xdist's own order, most tests first, put the one-test browser journeys last), so a long
    file taken at the end no longer leaves the other runners idle while it runs."""
    long_files = {item.path for item in items if any(item.get_closest_marker(name) for name in LONG_MARKERS)}
    items.sort(key=lambda item: item.path not in long_files)


@pytest.fixture(autouse=True)
def _no_submission_rate_limits(settings, request):
    """Simulated crowds submit faster than people, and tests log in wrongly on purpose; the
    limits have their own tests (tests/test_security.py, tests/attacks/test_login_throttle.py,
    marked `rate_limits`), which keep them on."""
    if request.node.get_closest_marker("rate_limits") is None:
        settings.SUBMIT_RATE_PER_WORKER = 0
        settings.SUBMIT_RATE_PER_ADDRESS = 0
        settings.LOGIN_FAILURES_PER_ADDRESS = 0
        settings.LOGIN_FAILURES_PER_USERNAME = 0
        # Simulated crowds share one address too (issue 24: tests/attacks set these themselves).
        settings.LINK_SESSIONS_PER_ADDRESS = 0
        settings.LINK_SESSIONS_PER_LINK = 0
        settings.PROLIFIC_ARRIVALS_PER_ADDRESS = 0
        settings.PROLIFIC_ARRIVAL_CALLS_PER_MINUTE = 0


@pytest.fixture(autouse=True)
def _empty_cache():
    """Django's default cache lasts as long as the process: no test sees what an earlier one
    cached (a marketplace balance, a HIT page)."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def owner(django_user_model):
    """A researcher who owns `campaign`."""
    return django_user_model.objects.create_user("researcher", password="x")


@pytest.fixture
def owner_client(client, owner):
    """The test client, signed in as `owner`."""
    client.force_login(owner)
    return client


@pytest.fixture
def campaign(owner):
    """The owner's draft campaign "loans" (a module that needs another campaign defines its own)."""
    return CampaignFactory(owner=owner, slug="loans", name="Student loans")


@pytest.fixture
def unreachable_endpoint(settings):
    """Campaign pages read the marketplace balance: here from a port nobody listens on (the page
    says "unavailable"). Modules whose pages all read it use it for every test."""
    settings.MTURK_ENVIRONMENT = "local"
    settings.MTURK_LOCAL_ENDPOINT_URL = f"http://127.0.0.1:{free_port()}/localturk/"


@pytest.fixture
def server_threads_joined():
    """Let the live server's request threads end with the test that started them: one still
    serving a kept-alive connection when the session ends would use the test database after
    it is dropped. Connections of failed calls stay referenced from the exception's traceback
    until collected, hence the gc. Threads other tests left behind are not this test's to wait for."""
    before = set(threading.enumerate())
    yield
    started = [t for t in threading.enumerate() if t not in before and t.name.endswith("(process_request_thread)")]
    for thread in started:
        thread.join(timeout=0.1)
    if any(thread.is_alive() for thread in started):
        gc.collect()
        for thread in started:
            thread.join(timeout=10)


def celery_connections_reset(app) -> None:
    """Close this process's broker connections and forget the pools: the app caches its pools
    for the broker it first met and kombu keeps them by URL, so a closed one would refuse every
    later publish (eager calls too) and a later worker test on a Redis at the same URL."""
    from kombu import pools

    pools.reset()
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def redis_url():
    return require_service("SALIENCE_TEST_REDIS_URL", "Redis")


@contextmanager
def celery_worker_started(*, database_url: str, redis_url: str, site_url: str, sync_interval: str):
    """A real Celery worker (with embedded beat, a pass every `sync_interval` seconds) on Redis,
    using `database_url` and serving `site_url`'s HIT pages and local MTurk endpoint; stopped
    at the end."""
    workdir = Path(tempfile.mkdtemp(prefix="salience-celery-"))
    env = dict(
        os.environ,
        DATABASE_URL=database_url,
        CELERY_BROKER_URL=redis_url,
        SITE_URL=site_url,
        MTURK_LOCAL_ENDPOINT_URL=f"{site_url}/localturk/",
        SYNC_INTERVAL_SECONDS=sync_interval,
    )
    log = open(workdir / "worker.log", "wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-B",
            "--concurrency=2",
            "--loglevel=INFO",
            "--schedule",
            str(workdir / "beat-schedule"),
            "--without-gossip",
            "--without-mingle",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while b"ready." not in (workdir / "worker.log").read_bytes():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("Celery worker did not start:\n" + (workdir / "worker.log").read_text()[-3000:])
            time.sleep(0.2)
        yield process
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


def runner_database_url() -> str:
    """The URL of this runner's test database (PostgreSQL: a worker is another process)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        message = "a Celery worker needs PostgreSQL: run the suite with `make test`"
        if CI:
            pytest.fail(message)
        pytest.skip(message)
    database = connection.settings_dict
    return f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}"


@contextmanager
def celery_sending_to(redis_url: str):
    """This process's Celery app enqueues on `redis_url` (not eagerly) until the end."""
    from config.celery import app

    previous = {"broker_url": app.conf.broker_url, "task_always_eager": app.conf.task_always_eager}
    app.conf.update(broker_url=redis_url, task_always_eager=False)
    try:
        yield app
    finally:
        app.conf.update(**previous)
        app.pool.force_close_all()
        celery_connections_reset(app)


@pytest.fixture
def celery_worker_process(redis_url, live_server, settings, transactional_db):
    """A real Celery worker (with embedded beat) on Redis, using this test's database and
    serving the live server's HIT pages and local MTurk endpoint; stopped afterwards."""
    database_url = runner_database_url()
    settings.SITE_URL = live_server.url
    settings.MTURK_LOCAL_ENDPOINT_URL = f"{live_server.url}/localturk/"
    with (
        celery_sending_to(redis_url),
        celery_worker_started(
            database_url=database_url,
            redis_url=redis_url,
            site_url=live_server.url,
            sync_interval=os.environ.get("E2E_SYNC_INTERVAL_SECONDS", "2"),
        ) as process,
    ):
        yield process
