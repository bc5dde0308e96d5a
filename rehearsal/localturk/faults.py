"""Injected failures for tests and rehearsals: throttling, service faults, latency.

    from rehearsal.localturk import faults
    faults.inject(throttle=2)                                  # next 2 calls: ThrottlingException
    faults.inject(service_fault=1, operations=["CreateHITWithHITType"])
    faults.inject(latency_ms=300)                              # every call waits, until cleared
    faults.inject(latency_ms=300, latency_calls=5)             # the next 5 calls wait
    faults.clear()

The same switches over HTTP: `POST /localturk/_control/faults` with that JSON
(`{"throttle": N, "service_fault": N, "latency_ms": M, "latency_calls": K, "operations": [...]}`),
`GET` to list them, `DELETE` to clear them. Faults live in the database, so a test
process and a live server share them. A call consumes at most one error (the oldest
matching switch) and waits for the sum of all matching latencies; switches apply only to
the requester API, never to the worker pages.
"""

import time
from dataclasses import dataclass

from django.db import connection

from rehearsal.fault_control import switches_live, switches_take

from .models import Fault

Kind = Fault.Kind


@dataclass(frozen=True)
class Outcome:
    latency_ms: int = 0
    error: str | None = None  # Fault.Kind.THROTTLE or SERVICE_FAULT


def inject(
    *,
    throttle: int = 0,
    service_fault: int = 0,
    latency_ms: int = 0,
    latency_calls: int | None = None,
    operations: list[str] | tuple[str, ...] = (),
) -> None:
    """Make the next `throttle` then `service_fault` matching calls fail, and add latency."""
    operations = list(operations)
    if throttle:
        Fault.objects.create(kind=Kind.THROTTLE, remaining=throttle, operations=operations)
    if service_fault:
        Fault.objects.create(kind=Kind.SERVICE_FAULT, remaining=service_fault, operations=operations)
    if latency_ms:
        Fault.objects.create(kind=Kind.LATENCY, remaining=latency_calls, latency_ms=latency_ms, operations=operations)


def clear() -> None:
    Fault.objects.all().delete()


def active() -> list[dict]:
    return [
        {"kind": f.kind, "remaining": f.remaining, "latency_ms": f.latency_ms, "operations": f.operations}
        for f in switches_live(Fault).order_by("pk")
    ]


SWITCH_SET_SQL = f"EXISTS (SELECT 1 FROM {Fault._meta.db_table})"  # whether any switch is set


def take(operation: str, *, switch_set: bool | None = None) -> Outcome:
    """Consume the switches that apply to one call of `operation`. Most calls meet no switch
    at all: a plain statement says so (SWITCH_SET_SQL), without the ORM's compilation of the
    switches' query; `switch_set` is its answer when the caller read it already (protocol.py
    reads it with the requester, in one statement)."""
    if switch_set is None:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {SWITCH_SET_SQL}")
            switch_set = bool(cursor.fetchone()[0])
    if not switch_set:
        return Outcome()
    latency, error = switches_take(Fault, operation)
    return Outcome(latency_ms=latency, error=error.kind if error else None)


def sleep(milliseconds: int) -> None:
    time.sleep(milliseconds / 1000)
