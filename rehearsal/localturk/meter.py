"""What the requester API serves, per process: calls, how many at once, their CPU and queries.

Each call through `views.api` is counted while it is in flight (injected latency included,
as MTurk's own latency would be), and its CPU time (this thread's, `time.thread_time`, so
waiting is not counted) and the SQL statements its thread runs (savepoints included) are
added up per operation. `GET /localturk/_control/calls` reads the
figures of the process that answers; `DELETE` sets them back to zero. Benchmarks print the
CPU per call; tests read the highest number of calls in flight to check a bound — served by
one process (the test's live server), that number is every client's.
"""

import os
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection


class _Meter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.in_flight = 0
            self.peak = 0
            self.calls: dict[str, int] = defaultdict(int)
            self.cpu_seconds: dict[str, float] = defaultdict(float)
            self.queries: dict[str, int] = defaultdict(int)

    @contextmanager
    def call(self, operation: str) -> Iterator[None]:
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        statements = 0

        def counted(execute, sql, params, many, context):
            nonlocal statements
            statements += 1
            return execute(sql, params, many, context)

        started = time.thread_time()
        try:
            with connection.execute_wrapper(counted):
                yield
        finally:
            used = time.thread_time() - started
            with self._lock:
                self.in_flight -= 1
                self.calls[operation] += 1
                self.cpu_seconds[operation] += used
                self.queries[operation] += statements

    def figures(self) -> dict:
        with self._lock:
            calls = sum(self.calls.values())
            cpu = sum(self.cpu_seconds.values())
            return {
                "pid": os.getpid(),
                "calls": calls,
                "in_flight": self.in_flight,
                "peak_in_flight": self.peak,
                "cpu_ms_per_call": round(1000 * cpu / calls, 2) if calls else None,
                "operations": {
                    name: {
                        "calls": count,
                        "cpu_ms_per_call": round(1000 * self.cpu_seconds[name] / count, 2),
                        "queries_per_call": round(self.queries[name] / count, 2),
                    }
                    for name, count in sorted(self.calls.items())
                },
            }


meter = _Meter()
