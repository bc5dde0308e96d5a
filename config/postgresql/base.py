"""Django's PostgreSQL backend, with a health check that costs no round trip when it need not.

With CONN_HEALTH_CHECKS, Django runs `SELECT 1` before the first query of every request
that reuses a connection: on the HIT pages that is a third of the round trips to the server
(benchmarks/load). A server that ends a session, in a restart, a crash or
pg_terminate_backend, sends an error message and closes the socket, so the socket of a dead
idle connection has something to read; the socket of a live idle one has nothing (the
server speaks only when spoken to, except for notifications, which Salience does not
LISTEN for). So: an idle connection whose socket has nothing to read is usable; anything
else gets Django's SELECT 1, which reads what is there and decides as before.

Only the request-start health check is shortened. `is_usable` after a database error
(`close_if_unusable_or_obsolete`) still asks the server.
"""

import select

from django.db.backends.postgresql.base import DatabaseWrapper as PostgreSQLDatabaseWrapper

TRANSACTION_IDLE = 0  # psycopg2 TRANSACTION_STATUS_IDLE, psycopg 3 TransactionStatus.IDLE


class DatabaseWrapper(PostgreSQLDatabaseWrapper):
    # Set by Django's BaseDatabaseWrapper; django-stubs does not declare them (annotations only,
    # no class attributes).
    health_check_enabled: bool
    health_check_done: bool

    def close_if_health_check_failed(self) -> None:
        if (
            self.connection is not None
            and self.health_check_enabled
            and not self.health_check_done
            and connection_quiet(self.connection)
        ):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()


def connection_quiet(raw) -> bool:
    """True when `raw` (a psycopg connection) is open, idle outside a transaction, and the
    server has sent nothing since the last reply."""
    if raw.closed or raw.info.transaction_status != TRANSACTION_IDLE:
        return False
    poller = select.poll()  # not select.select: a busy process may hold descriptors past 1023
    poller.register(raw.fileno(), select.POLLIN | select.POLLPRI)
    return not poller.poll(0)
