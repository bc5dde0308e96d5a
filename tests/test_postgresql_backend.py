"""config/postgresql: the connection health check that skips SELECT 1 on a quiet connection.

What the server last ran for a session is read from pg_stat_activity over a second
connection, so these tests see whether the health check sent a query, not what the
backend says it did.
"""

import time

import psycopg2
import pytest
from django.db import connection, connections

pytestmark = pytest.mark.django_db(transaction=True)  # an idle connection, outside any test transaction


@pytest.fixture
def observer():
    """A second, plain connection to the same server."""
    if connection.vendor != "postgresql":
        pytest.skip("the backend is PostgreSQL's (make test)")
    params = connection.get_connection_params()
    other = psycopg2.connect(**{key: value for key, value in params.items() if key != "cursor_factory"})
    other.autocommit = True
    yield other
    other.close()


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _last_query(observer, pid: int) -> str | None:
    with observer.cursor() as cursor:
        cursor.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return None if row is None else row[0]


def _health_check() -> None:
    """What Django does before a request's first query on a kept connection."""
    connection.health_check_enabled = True
    connection.health_check_done = False
    connection.close_if_health_check_failed()


def test_a_quiet_idle_connection_is_kept_without_a_query(observer):
    pid = _backend_pid()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 'last before the check'")
    _health_check()
    assert connection.connection is not None and connection.health_check_done
    assert _last_query(observer, pid) == "SELECT 'last before the check'"  # no SELECT 1 went out
    assert _backend_pid() == pid


def test_a_connection_inside_a_transaction_gets_the_full_check(observer):
    pid = _backend_pid()
    connection.set_autocommit(False)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 'in a transaction'")
        _health_check()
        assert _last_query(observer, pid) == "SELECT 1"
    finally:
        connection.rollback()
        connection.set_autocommit(True)


def test_a_connection_the_server_ended_is_replaced(observer):
    pid = _backend_pid()
    with observer.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 10
    while _last_query(observer, pid) is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _last_query(observer, pid) is None, "the server did not end the session"
    _health_check()
    assert connection.connection is None  # closed by the check, not by a failing request
    assert _backend_pid() != pid  # the next query opens a new session and succeeds


def test_the_site_uses_this_backend():
    if connection.vendor != "postgresql":
        pytest.skip("the backend is PostgreSQL's (make test)")
    assert type(connections["default"]).__module__ == "config.postgresql.base"
