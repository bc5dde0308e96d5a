"""HTTP adapters of the requester API and of the control switches.

`POST /localturk/` is the MTurk endpoint boto3 talks to (`endpoint_url=".../localturk/"`);
protocol.py does the work. The worker simulator's pages are in worker_views.py.

Control API (local only, for tests and rehearsals; JSON in and out, no CSRF):

    GET    /localturk/_control/faults            -> {"faults": [{"kind", "remaining", "latency_ms", "operations"}]}
    POST   /localturk/_control/faults            {"throttle": N, "service_fault": N, "latency_ms": M,
                                                  "latency_calls": K, "operations": ["CreateHITWithHITType"]}
                                                 -> 201 {"faults": [...]}   (all keys optional; see faults.py)
    DELETE /localturk/_control/faults            -> 204, every switch cleared
    GET    /localturk/_control/calls             -> {"calls", "in_flight", "peak_in_flight", "cpu_ms_per_call",
                                                  "operations": {name: {"calls", "cpu_ms_per_call", "queries_per_call"}}, "pid"}
                                                 (this process's figures; see meter.py)
    DELETE /localturk/_control/calls             -> 204, the figures back to zero
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

from rehearsal.fault_control import fault_switches, faults_control_view, json_object

from . import faults, protocol
from .errors import WorkerActionError
from .marketplace import worker_id_check
from .meter import meter
from .qualifications import worker_qualifications, worker_qualifications_set

FAULT_COUNTS = ("throttle", "service_fault", "latency_ms")


@csrf_exempt
@require_POST
def api(request):
    target = request.headers.get("X-Amz-Target", "")
    with meter.call(target.rpartition(".")[2]):
        status, body = protocol.call(
            target=target, body=request.body, authorization=request.headers.get("Authorization", "")
        )
    response = HttpResponse(json.dumps(body), status=status, content_type=protocol.CONTENT_TYPE)
    response["x-amzn-RequestId"] = str(uuid.uuid4())
    return response


@csrf_exempt
@require_http_methods(["GET", "DELETE"])
def calls_control(request):
    if request.method == "DELETE":
        meter.reset()
        return HttpResponse(status=204)
    return JsonResponse(meter.figures())


faults_control = faults_control_view(faults, lambda body: fault_switches(body, counts=(*FAULT_COUNTS, "latency_calls")))


@csrf_exempt
@require_http_methods(["GET", "PUT"])
def worker_profile_control(request, worker_id):
    try:
        worker_id_check(worker_id)
        if request.method == "PUT":
            qualifications = json_object(request.body).get("qualifications")
            if not isinstance(qualifications, dict):
                raise ValueError('Send {"qualifications": {qualification type id: value}}.')
            worker_qualifications_set(worker_id=worker_id, qualifications=qualifications)
    except WorkerActionError as exc:
        return JsonResponse(exc.as_dict(), status=exc.http_status)
    except ValueError as exc:
        return JsonResponse({"code": "invalid_qualifications", "message": str(exc)}, status=400)
    return JsonResponse({"workerId": worker_id, "qualifications": worker_qualifications(worker_id)})
