"""Statements prepared once per PostgreSQL connection, for the queries every HIT request runs."""

import itertools
import weakref
from collections.abc import Callable


class PreparedStatement:
    """`sql` prepared once per PostgreSQL connection, then run by name: PostgreSQL spends
    longer parsing and planning the HIT requests' statements than running them
    (benchmarks/hit_page_bench.py, benchmarks/load).

    The PREPARE goes with the first EXECUTE, in one round trip. Each PREPARE takes a new
    name, and a connection's statement is recorded once it has run and forgotten when a run
    fails, so a statement left by a failed attempt is neither prepared twice nor run. A
    pooler that hands one server session to several clients (pgbouncer in transaction mode)
    loses prepared statements: with one, set DISABLE_SERVER_SIDE_CURSORS as Django asks,
    and the statement is sent in full. Other databases get it in full too (SQLite keeps
    its own statement cache).
    """

    def __init__(self, name: str, sql: Callable[[], str]):
        self.name = name
        self.sql = sql
        self._runs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # raw connection -> EXECUTE ...
        self._serial = itertools.count()

    def execute(self, cursor, params: list) -> None:
        database = cursor.db
        if database.vendor != "postgresql" or database.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS"):
            cursor.execute(self.sql(), params)
            return
        raw = database.connection
        run = self._runs.get(raw)
        if run is None:
            name = f"{self.name}_{next(self._serial)}"
            run = f"EXECUTE {name} ({', '.join(['%s'] * len(params))})"
            cursor.execute(f"PREPARE {name} AS {numbered(self.sql())}; {run}", params)
            self._runs[raw] = run
            return
        try:
            cursor.execute(run, params)
        except Exception:
            self._runs.pop(raw, None)
            raise


def numbered(sql: str) -> str:
    """The %s placeholders of `sql` as PREPARE's $1, $2, ..."""
    first, *rest = sql.split("%s")
    return first + "".join(f"${index}{part}" for index, part in enumerate(rest, start=1))
