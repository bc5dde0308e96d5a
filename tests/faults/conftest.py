"""Fixtures for fault injection: a Redis that crashes and comes back on the same port, Celery
workers that a test starts, kills and starts again, and row locks held from a second
database connection so that a worker's task stops exactly where the test wants it. The
tests enqueue every sync themselves (no beat), so they know which run met the fault.

Workers need PostgreSQL (row locks, a second process on the test database) and
redis-server: outside CI a test without them is skipped, with CI=true it fails, as in
tests/conftest.py.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import psycopg2
import pytest
import redis
from django.db import connection

from config.celery import app
from crowd.marketplaces.mturk import client as mturk
from tests.conftest import CI, celery_connections_reset
from tests.services import free_port, redis_options

WORKER_APP = "tests.faults.worker_app"
# The worker's database sessions carry this name, so a test can tell them from its own.
WORKER_DB_APPLICATION = "salience-faults-worker"
WAIT_LIMIT = 60  # seconds before a wait gives up; a passing wait takes a few


def _unavailable(message: str) -> None:
    if CI:
        pytest.fail(message)
    pytest.skip(message)


def wait_until(condition: Callable[[], object], *, what: str, within: float = WAIT_LIMIT):
    """Poll `condition` until it returns something true, and return that; fail after `within` s."""
    deadline = time.monotonic() + within
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.1)


# ---- Redis ---------------------------------------------------------------------------------


class RedisServer:
    """redis-server on one loopback port for the whole test, without persistence: a crash
    loses every queued and unacknowledged message, as a restart without AOF does."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        with open(self.workdir / f"redis-{self.starts}.log", "wb") as log:
            self.process = subprocess.Popen(
                [shutil.which("redis-server"), *redis_options(self.port, self.workdir)],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        try:
            wait_until(
                lambda: self.process.poll() is not None or _pings(client), what="redis-server to start", within=20
            )
        finally:
            client.close()
        if self.process.poll() is not None:
            pytest.fail(f"redis-server exited: {(self.workdir / f'redis-{self.starts}.log').read_text()[-2000:]}")

    def crash(self) -> None:
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)


def _pings(client: redis.Redis) -> bool:
    try:
        return client.ping()
    except redis.ConnectionError:
        return False


@pytest.fixture
def fault_redis(tmp_path):
    """A Redis of this test's own, running; `.crash()` and `.start()` it again."""
    if shutil.which("redis-server") is None:
        _unavailable("redis-server is not installed: run `python -m tests.services ensure`")
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


# ---- Celery workers ------------------------------------------------------------------------


class CeleryWorker:
    """`celery worker --concurrency=2` (as deployed) in its own process group, logging to a file."""

    def __init__(self, *, env: dict, workdir: Path, number: int):
        self.env = env
        self.hostname = f"faults{number}@localhost"
        self.log_path = workdir / f"worker-{number}.log"
        self.process: subprocess.Popen | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def start(self) -> "CeleryWorker":
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    WORKER_APP,
                    "worker",
                    "--concurrency=2",
                    "--loglevel=INFO",
                    "-n",
                    self.hostname,
                    "--without-gossip",
                    "--without-mingle",
                ],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        wait_until(lambda: self.process.poll() is not None or "ready." in self.log(), what="the worker to start")
        if self.process.poll() is not None:
            pytest.fail("the Celery worker did not start:\n" + self.log()[-3000:])
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def children(self) -> set[int]:
        """Pids of the main process's children: the pool processes."""
        path = Path(f"/proc/{self.pid}/task/{self.pid}/children")
        return {int(pid) for pid in path.read_text().split()} if path.exists() else set()

    def kill(self) -> None:
        """SIGKILL the whole worker, main process and pool, as a lost machine would."""
        os.killpg(self.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.pid, signal.SIGKILL)
            self.process.wait()

    def executing(self, task_id: str) -> int | None:
        """The pid of the pool process running `task_id` now, by the worker's remote control."""
        replies = app.control.inspect(destination=[self.hostname], timeout=1.0).active() or {}
        for task in replies.get(self.hostname, []):
            if task["id"] == task_id and task.get("worker_pid"):
                return task["worker_pid"]
        return None

    def idle(self) -> bool:
        """Nothing queued in Redis, and nothing running, reserved or scheduled here."""
        client = redis.Redis.from_url(self.env["CELERY_BROKER_URL"])
        try:
            if client.llen("celery"):
                return False
        finally:
            client.close()
        inspector = app.control.inspect(destination=[self.hostname], timeout=1.0)
        for replies in (inspector.active(), inspector.reserved(), inspector.scheduled()):
            if replies is None or replies.get(self.hostname):
                return False
        return True


@pytest.fixture
def worker_database_url(transactional_db) -> str:
    """This test's database as a worker process reaches it; PostgreSQL only."""
    if connection.vendor != "postgresql":
        _unavailable("a Celery worker needs PostgreSQL: run the suite with `make test`")
    database = connection.settings_dict
    return (
        f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}"
        f"?application_name={WORKER_DB_APPLICATION}"
    )


@pytest.fixture
def start_worker(worker_database_url, fault_redis, local_endpoint, settings, tmp_path):
    """`start_worker(**environment)`: a running worker on `fault_redis`, this test's database
    and the live server's local MTurk endpoint; the test process enqueues on the same Redis.
    Every worker is stopped afterwards."""
    previous = {"broker_url": app.conf.broker_url, "task_always_eager": app.conf.task_always_eager}
    app.conf.update(broker_url=fault_redis.url, task_always_eager=False)
    celery_connections_reset(app)
    workers: list[CeleryWorker] = []

    def start(**environment: str) -> CeleryWorker:
        env = dict(
            os.environ,
            DATABASE_URL=worker_database_url,
            CELERY_BROKER_URL=fault_redis.url,
            SITE_URL=local_endpoint,
            MTURK_LOCAL_ENDPOINT_URL=settings.MTURK_LOCAL_ENDPOINT_URL,
            **environment,
        )
        workers.append(CeleryWorker(env=env, workdir=tmp_path, number=len(workers) + 1))
        return workers[-1].start()

    try:
        yield start
    finally:
        for worker in workers:
            worker.stop()
        # Sessions of killed processes may still wait on a lock: end them before the flush.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s"
                " AND datname = current_database()",
                [WORKER_DB_APPLICATION],
            )
        app.conf.update(**previous)
        celery_connections_reset(app)


@contextmanager
def broker_unreachable():
    """Celery in this process publishes to a Redis that is not there, as during an outage."""
    previous = {"broker_url": app.conf.broker_url, "task_always_eager": app.conf.task_always_eager}
    app.conf.update(broker_url=f"redis://127.0.0.1:{free_port()}/0", task_always_eager=False)
    celery_connections_reset(app)
    try:
        yield
    finally:
        app.conf.update(**previous)
        celery_connections_reset(app)


# ---- Row locks -----------------------------------------------------------------------------


class RowLocks:
    """Row locks held by a second connection to the test database until `release()`."""

    def __init__(self, settings_dict: dict):
        self.connection = psycopg2.connect(
            dbname=settings_dict["NAME"],
            user=settings_dict["USER"],
            password=settings_dict["PASSWORD"] or None,
            host=settings_dict["HOST"],
            port=settings_dict["PORT"],
        )

    def hold(self, model, pks) -> None:
        """SELECT … FOR UPDATE the rows of `model` with these primary keys."""
        with self.connection.cursor() as cursor:
            cursor.execute(f'SELECT 1 FROM "{model._meta.db_table}" WHERE id = ANY(%s) FOR UPDATE', [list(pks)])
            assert cursor.rowcount == len(pks), f"{model.__name__} {pks}: not every row exists"

    def release(self) -> None:
        self.connection.rollback()

    def close(self) -> None:
        self.connection.close()


def worker_sessions_waiting() -> int:
    """How many of the worker's database sessions wait for a lock (live or orphaned)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND wait_event_type = 'Lock'"
            " AND datname = current_database()",  # not another pytest-xdist runner's database
            [WORKER_DB_APPLICATION],
        )
        return cursor.fetchone()[0]


@pytest.fixture
def row_locks(start_worker):
    """Released (and closed) before the workers stop, so none waits on it at teardown."""
    locks = RowLocks(connection.settings_dict)
    yield locks
    locks.close()


# ---- The local MTurk endpoint -------------------------------------------------------------


@pytest.fixture
def local_endpoint(live_server, settings):
    """The local MTurk endpoint and our HIT pages on the live server; Celery as configured
    (eager without a worker)."""
    settings.MTURK_ENVIRONMENT = "local"
    settings.SITE_URL = live_server.url
    settings.MTURK_LOCAL_ENDPOINT_URL = f"{live_server.url}/localturk/"
    return live_server.url


def endpoint_hit_urls() -> list[str]:
    """The ExternalURL of every HIT the local endpoint holds, read with the app's own client."""
    client = mturk.client_create("local")
    questions = [hit["Question"] for page in client.get_paginator("list_hits").paginate() for hit in page["HITs"]]
    return [re.search(r"<ExternalURL>(.*?)</ExternalURL>", question).group(1) for question in questions]
