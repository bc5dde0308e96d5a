"""HTTP adapters of the requester API and of the control switches.

`POST /localturk/` is the MTurk endpoint boto3 talks to (`endpoint_url=".../localturk/"`);
protocol.py does the work. The worker simulator's pages are in worker_views.py.

Control API (local only, for tests and rehearsals; JSON in and out, no CSRF):

    GET    /localturk/_control/faults            -> {"faults": [{"kind", "remaining", "latency_ms", "operations"}]}
    POST   /localturk/_control/faults            {"throttle": N, "service_fault": N, "latency_ms": M,
                                                  "latency_calls": K, "operations": ["CreateHITWithHITType"]}
                                                 -> 201 {"faults": [...]}   (all keys optional; see faults.py)
    DELETE /localturk/_control/faults            -> 204, every switch cleared
    GET    /localturk/_control/workers/<WorkerId> -> {"workerId", "qualifications": {type id: value}}
    PUT    /localturk/_control/workers/<WorkerId> {"qualifications": {"000000000000000000L0": 80,
                                                  "00000000000000000071": {"Country": "IN"}, "<custom id>": 1}}
                                                 -> 200, the worker's values (None removes one; see qualifications.py)

Errors are 400 `{"code": ..., "message": ...}`.
"""

import json
import uuid

from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST

from . import faults, protocol
from .errors import WorkerActionError
from .marketplace import worker_id_check
from .qualifications import worker_qualifications, worker_qualifications_set

FAULT_COUNTS = ("throttle", "service_fault", "latency_ms")


@csrf_exempt
@require_POST
def api(request):
    status, body = protocol.call(
        target=request.headers.get("X-Amz-Target", ""),
        body=request.body,
        authorization=request.headers.get("Authorization", ""),
    )
    response = HttpResponse(json.dumps(body), status=status, content_type=protocol.CONTENT_TYPE)
    response["x-amzn-RequestId"] = str(uuid.uuid4())
    return response


@csrf_exempt
@require_http_methods(["GET", "POST", "DELETE"])
def faults_control(request):
    if request.method == "DELETE":
        faults.clear()
        return HttpResponse(status=204)
    if request.method == "POST":
        try:
            faults.inject(**_fault_switches(request.body))
        except ValueError as exc:
            return JsonResponse({"code": "invalid_faults", "message": str(exc)}, status=400)
        return JsonResponse({"faults": faults.active()}, status=201)
    return JsonResponse({"faults": faults.active()})


@csrf_exempt
@require_http_methods(["GET", "PUT"])
def worker_profile_control(request, worker_id):
    try:
        worker_id_check(worker_id)
        if request.method == "PUT":
            qualifications = _json_object(request.body).get("qualifications")
            if not isinstance(qualifications, dict):
                raise ValueError('Send {"qualifications": {qualification type id: value}}.')
            worker_qualifications_set(worker_id=worker_id, qualifications=qualifications)
    except WorkerActionError as exc:
        return JsonResponse(exc.as_dict(), status=exc.http_status)
    except ValueError as exc:
        return JsonResponse({"code": "invalid_qualifications", "message": str(exc)}, status=400)
    return JsonResponse({"workerId": worker_id, "qualifications": worker_qualifications(worker_id)})


def _fault_switches(body: bytes) -> dict:
    switches = _json_object(body)
    unknown = set(switches) - {*FAULT_COUNTS, "latency_calls", "operations"}
    if unknown:
        raise ValueError(f"Unknown switches: {', '.join(sorted(unknown))}.")
    for name in (*FAULT_COUNTS, "latency_calls"):
        value = switches.get(name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise ValueError(f"{name} must be a whole number >= 0.")
    operations = switches.get("operations", [])
    if not isinstance(operations, list) or not all(isinstance(name, str) for name in operations):
        raise ValueError("operations must be a list of operation names.")
    return switches


def _json_object(body: bytes) -> dict:
    try:
        value = json.loads(body or b"{}")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"The body is not JSON: {exc}.") from exc
    if not isinstance(value, dict):
        raise ValueError("The body must be a JSON object.")
    return value
