"""What both local marketplaces (rehearsal/localturk, rehearsal/localprolific) share about injected
faults: consuming the switches of their Fault model on a call, and the `_control/faults`
endpoint (GET lists the switches, POST adds them as JSON, DELETE clears them)."""

import json
from collections.abc import Callable, Iterable

from django.db.models import F, Q
from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods


def json_object(body: bytes) -> dict:
    """The request body as a JSON object (empty means {}); ValueError with the reason otherwise."""
    try:
        value = json.loads(body or b"{}")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"The body is not JSON: {exc}.") from exc
    if not isinstance(value, dict):
        raise ValueError("The body must be a JSON object.")
    return value


def fault_switches(body: bytes, *, counts: Iterable[str], operations: Iterable[str] | None = None) -> dict:
    """The switches of a POST: whole numbers ≥ 0 for `counts`, and `operations` a list of
    names (of `operations`, when given)."""
    counts = tuple(counts)
    switches = json_object(body)
    unknown = set(switches) - {*counts, "operations"}
    if unknown:
        raise ValueError(f"Unknown switches: {', '.join(sorted(unknown))}.")
    for name in counts:
        value = switches.get(name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise ValueError(f"{name} must be a whole number >= 0.")
    named = switches.get("operations", [])
    if not isinstance(named, list) or not all(isinstance(name, str) for name in named):
        raise ValueError("operations must be a list of operation names.")
    if operations is not None:
        known = tuple(operations)
        strangers = sorted(set(named) - set(known))
        if strangers:
            raise ValueError(f"Unknown operations {', '.join(strangers)}; they are {', '.join(known)}.")
    return switches


def faults_control_view(faults, parse: Callable[[bytes], dict]):
    """The view over a faults module (`inject`, `clear`, `active`) and its switch parser."""

    @csrf_exempt
    @require_http_methods(["GET", "POST", "DELETE"])
    def faults_control(request):
        if request.method == "DELETE":
            faults.clear()
            return HttpResponse(status=204)
        if request.method == "POST":
            try:
                faults.inject(**parse(request.body))
            except ValueError as exc:
                return JsonResponse({"code": "invalid_faults", "message": str(exc)}, status=400)
            return JsonResponse({"faults": faults.active()}, status=201)
        return JsonResponse({"faults": faults.active()})

    return faults_control


def switches_live(fault_model):
    """The switches of `fault_model` (a local endpoint's Fault) not used up yet."""
    return fault_model.objects.filter(Q(remaining__isnull=True) | Q(remaining__gt=0))


def switches_take(fault_model, operation: str):
    """Consume the switches that apply to one call of `operation`: returns the sum of the
    matching latencies and the oldest matching error switch (or None). A call consumes at
    most one error; latency switches without a count apply until cleared."""
    latency, error, consumed = 0, None, False
    for fault in switches_live(fault_model).order_by("pk"):
        if fault.operations and operation not in fault.operations:
            continue
        if fault.kind == fault_model.Kind.LATENCY:
            if fault.remaining is None:
                latency += fault.latency_ms
            elif _consume(fault):
                latency, consumed = latency + fault.latency_ms, True
        elif error is None and _consume(fault):
            error, consumed = fault, True
    if consumed:  # the call that takes a switch's last use deletes it; a call that took none queries no more
        used_up = fault_model.objects.filter(remaining=0)
        if used_up.exists():  # on SQLite even an empty DELETE takes the write lock
            used_up.delete()
    return latency, error


def _consume(fault) -> bool:
    """Take one use of a counted switch; False when a concurrent call took the last one."""
    updated = type(fault).objects.filter(pk=fault.pk, remaining__gt=0).update(remaining=F("remaining") - 1)
    return bool(updated)
