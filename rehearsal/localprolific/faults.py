"""Injected failures for tests and rehearsals: throttling, service faults, lost answers, latency.

    from rehearsal.localprolific import faults
    faults.inject(throttle=2)                                   # next 2 calls: 429
    faults.inject(throttle=1, retry_after=3)                    # ... with Retry-After: 3
    faults.inject(service_fault=1, operations=["studies.create"])   # next create: 503
    faults.inject(lost_response=1, operations=["studies.create"])   # created, but the answer is a 504
    faults.inject(latency_ms=300)                               # every call waits, until cleared
    faults.inject(latency_ms=300, latency_calls=5)              # the next 5 calls wait
    faults.clear()

The same switches over HTTP: `POST /localprolific/_control/faults` with that JSON
(`{"throttle": N, "service_fault": N, "lost_response": N, "retry_after": S, "latency_ms": M,
"latency_calls": K, "operations": [...]}`), `GET` to list them, `DELETE` to clear them.
Operation names are api.OPERATIONS (studies.list, studies.create, studies.get, studies.update,
studies.transition, studies.submissions, submissions.list, submissions.get,
submissions.transition, bonuses.create, bonuses.pay). Faults live in the database, so a test
process and a live server share them. A call consumes at most one error (the oldest matching
switch) and waits for the sum of all matching latencies; switches apply only to the
researcher API, never to the participant pages or the control endpoints.
"""

import time
from dataclasses import dataclass

from rehearsal.fault_control import switches_live, switches_take

from .models import Fault

Kind = Fault.Kind


@dataclass(frozen=True)
class Outcome:
    latency_ms: int = 0
    error: str | None = None  # a Fault.Kind other than LATENCY
    retry_after: int | None = None


def inject(
    *,
    throttle: int = 0,
    service_fault: int = 0,
    lost_response: int = 0,
    retry_after: int | None = None,
    latency_ms: int = 0,
    latency_calls: int | None = None,
    operations: list[str] | tuple[str, ...] = (),
) -> None:
    """Make the next `throttle`, then `service_fault`, then `lost_response` matching calls fail."""
    operations = list(operations)
    for kind, count in (
        (Kind.THROTTLE, throttle),
        (Kind.SERVICE_FAULT, service_fault),
        (Kind.LOST_RESPONSE, lost_response),
    ):
        if count:
            Fault.objects.create(
                kind=kind,
                remaining=count,
                operations=operations,
                retry_after=retry_after if kind == Kind.THROTTLE else None,
            )
    if latency_ms:
        Fault.objects.create(kind=Kind.LATENCY, remaining=latency_calls, latency_ms=latency_ms, operations=operations)


def clear() -> None:
    Fault.objects.all().delete()


def active() -> list[dict]:
    return [
        {
            "kind": f.kind,
            "remaining": f.remaining,
            "latency_ms": f.latency_ms,
            "retry_after": f.retry_after,
            "operations": f.operations,
        }
        for f in switches_live(Fault).order_by("pk")
    ]


def take(operation: str) -> Outcome:
    """Consume the switches that apply to one call of `operation`."""
    latency, error = switches_take(Fault, operation)
    if error is None:
        return Outcome(latency_ms=latency)
    return Outcome(latency_ms=latency, error=error.kind, retry_after=error.retry_after)


def sleep(milliseconds: int) -> None:
    time.sleep(milliseconds / 1000)
