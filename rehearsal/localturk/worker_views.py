"""The worker simulator: MTurk's worker site, small enough to drive by hand or by program.

A person opens /localturk/worker/ and previews, accepts and completes HITs as on MTurk;
the HIT page runs in an iframe and posts its form to /localturk/mturk/externalSubmit.
A program (the simulated crowd) does the same over HTTP with `requests`. No CSRF token is
needed anywhere. The worker is named by `workerId` (query string or form field), else by
the `localturk_worker` cookie, else a new id is made (and set as the cookie). Add
`?format=json` to any URL below for JSON instead of HTML; JSON errors are
`{"code": ..., "message": ...}` with status 400 (bad input), 403 (blocked, not qualified),
404 (unknown HIT or assignment) or 409 (not available, already worked, not open).

    GET  /localturk/worker/?workerId=A...&format=json
         -> 200 {"workerId", "hits": [{"hitId", "title", "description", "reward", "available",
                                        "previewUrl", "acceptUrl"}],
                 "assignments": [{"assignmentId", "hitId", "url", "deadline"}]}   (open ones)
         `hits`: the HITs the worker may take, not those they submitted an assignment of.
    GET  /localturk/worker/preview/<HITId>/      HTML page: the task in an iframe with
         assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE; JSON -> {"hitId", "url"}
    POST /localturk/worker/accept/<HITId>/?format=json    (form or query: workerId)
         -> 200 {"assignmentId", "workerId", "hitId", "url"}; `url` is the ExternalURL with
            assignmentId, hitId, workerId and turkSubmitTo=<origin>/localturk appended.
            Accepting again while the assignment is open returns the same one.
            HTML: redirect to /localturk/worker/work/<AssignmentId>/?workerId=...
    POST /localturk/worker/return/<AssignmentId>/?format=json   (workerId)
    POST /localturk/worker/abandon/<AssignmentId>/?format=json  (workerId)
         -> 200 {"assignmentId", "workerId", "status": "Returned" | "Abandoned"}; the slot is
            free again and the next accept of that HIT receives this AssignmentId.
    POST /localturk/mturk/externalSubmit?format=json   (form: assignmentId + answer fields)
         -> 200 {"assignmentId", "workerId", "hitId", "status": "Submitted"}; a repeat of
            the same submission answers the same. HTML: redirect to the "submitted" page,
            which leads the top window back to the HIT list.
"""

from functools import wraps

from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from . import marketplace, state
from .errors import WorkerActionError
from .models import HIT, Assignment, Message, new_worker_id
from .questions import PREVIEW_ASSIGNMENT_ID, task_url
from .wire import amount

WORKER_COOKIE = "localturk_worker"
# A HIT the worker submitted an assignment of is not listed again: accepting it would be refused
# ("You already worked on this HIT", marketplace.assignment_accept), as on MTurk. One they hold
# open is listed, and accepting it again returns that assignment.
WORKED = tuple(status for status in Assignment.LIVE if status != Assignment.Status.ACCEPTED)


def worker_page(view):
    """Catch the clock up, name the worker, render refusals, remember the worker in a cookie."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        state.tick()
        worker_id = (
            request.GET.get("workerId")
            or request.POST.get("workerId")
            or request.COOKIES.get(WORKER_COOKIE)
            or new_worker_id()
        )
        try:
            marketplace.worker_id_check(worker_id)
            response = view(request, worker_id, *args, **kwargs)
        except WorkerActionError as exc:
            return _error(request, exc)
        response.set_cookie(WORKER_COOKIE, worker_id, samesite="Lax")
        return response

    return wrapper


@require_GET
@worker_page
def worker_home(request, worker_id):
    worked = set(
        Assignment.objects.filter(worker_id=worker_id, status__in=WORKED).values_list("hit_id", flat=True).distinct()
    )
    hits = [hit for hit in marketplace.hits_for_worker(worker_id) if hit.pk not in worked]
    open_assignments = (
        Assignment.objects.select_related("hit")
        .filter(worker_id=worker_id, status=Assignment.Status.ACCEPTED)
        .order_by("deadline")
    )
    if _wants_json(request):
        return JsonResponse(
            {
                "workerId": worker_id,
                "hits": [_hit_json(request, hit) for hit in hits],
                "assignments": [
                    {
                        "assignmentId": a.assignment_id,
                        "hitId": a.hit.hit_id,
                        "url": _task_url(request, a),
                        "deadline": a.deadline.isoformat(),
                    }
                    for a in open_assignments
                ],
            }
        )
    context = {
        "worker_id": worker_id,
        "hits": [(hit, amount(hit.hit_type.reward)) for hit in hits],
        "open_assignments": open_assignments,
        "messages_for_worker": Message.objects.filter(worker_id=worker_id)[:20],
        "submitted": request.GET.get("submitted", ""),
    }
    return render(request, "localturk/worker_list.html", context)


@require_GET
@worker_page
def worker_preview(request, worker_id, hit_id):
    hit = marketplace.hit_for_preview(hit_id=hit_id, worker_id=worker_id)
    url = task_url(
        hit.external_url, assignment_id=PREVIEW_ASSIGNMENT_ID, hit_id=hit.hit_id, submit_to=_submit_to(request)
    )
    if _wants_json(request):
        return JsonResponse({"hitId": hit.hit_id, "url": url})
    context = {"worker_id": worker_id, "hit": hit, "reward": amount(hit.hit_type.reward), "url": url}
    return render(request, "localturk/preview.html", context)


@csrf_exempt
@require_POST
@worker_page
def worker_accept(request, worker_id, hit_id):
    assignment = marketplace.assignment_accept(hit_id=hit_id, worker_id=worker_id)
    if _wants_json(request):
        return JsonResponse(
            {
                "assignmentId": assignment.assignment_id,
                "workerId": worker_id,
                "hitId": hit_id,
                "url": _task_url(request, assignment),
            }
        )
    work = reverse("localturk:worker-work", args=[assignment.assignment_id])
    return redirect(f"{work}?{urlencode({'workerId': worker_id})}")


@require_GET
@worker_page
def worker_work(request, worker_id, assignment_id):
    assignment = marketplace.assignment_open(assignment_id=assignment_id, worker_id=worker_id)
    context = {
        "worker_id": worker_id,
        "assignment": assignment,
        "hit": assignment.hit,
        "reward": amount(assignment.hit.hit_type.reward),
        "url": _task_url(request, assignment),
    }
    return render(request, "localturk/work.html", context)


@csrf_exempt
@require_POST
@worker_page
def worker_return(request, worker_id, assignment_id):
    return _release(request, worker_id, assignment_id, abandon=False)


@csrf_exempt
@require_POST
@worker_page
def worker_abandon(request, worker_id, assignment_id):
    return _release(request, worker_id, assignment_id, abandon=True)


@csrf_exempt
@require_POST
@xframe_options_sameorigin
def external_submit(request):
    """MTurk's externalSubmit: the HIT page's form lands here, inside the worker's iframe."""
    state.tick()
    fields = [(name, value) for name, values in request.POST.lists() for value in values]
    try:
        assignment = marketplace.assignment_submit(fields=fields)
    except WorkerActionError as exc:
        return _error(request, exc)
    if _wants_json(request):
        return JsonResponse(
            {
                "assignmentId": assignment.assignment_id,
                "workerId": assignment.worker_id,
                "hitId": assignment.hit.hit_id,
                "status": assignment.status,
            }
        )
    submitted = reverse("localturk:worker-submitted", args=[assignment.assignment_id])
    return redirect(f"{submitted}?{urlencode({'workerId': assignment.worker_id})}")


@require_GET
@xframe_options_sameorigin
def worker_submitted(request, assignment_id):
    """Shown in the iframe after a submission; sends the top window back to the HIT list."""
    query = {"submitted": assignment_id}
    if request.GET.get("workerId"):
        query["workerId"] = request.GET["workerId"]
    back = f"{reverse('localturk:worker-home')}?{urlencode(query)}"
    return render(request, "localturk/submitted.html", {"assignment_id": assignment_id, "back": back})


def _release(request, worker_id, assignment_id, *, abandon):
    assignment = marketplace.assignment_release(assignment_id=assignment_id, worker_id=worker_id, abandon=abandon)
    if _wants_json(request):
        return JsonResponse({"assignmentId": assignment_id, "workerId": worker_id, "status": assignment.status})
    return redirect(f"{reverse('localturk:worker-home')}?{urlencode({'workerId': worker_id})}")


def _wants_json(request) -> bool:
    return request.GET.get("format") == "json"


def _submit_to(request) -> str:
    """turkSubmitTo: this server's origin and mount point, e.g. http://127.0.0.1:8000/localturk."""
    return request.build_absolute_uri(reverse("localturk:api")).rstrip("/")


def _task_url(request, assignment: Assignment) -> str:
    return task_url(
        assignment.hit.external_url,
        assignment_id=assignment.assignment_id,
        hit_id=assignment.hit.hit_id,
        worker_id=assignment.worker_id,
        submit_to=_submit_to(request),
    )


def _hit_json(request, hit: HIT) -> dict:
    return {
        "hitId": hit.hit_id,
        "title": hit.hit_type.title,
        "description": hit.hit_type.description,
        "reward": amount(hit.hit_type.reward),
        "available": hit.available,
        "previewUrl": request.build_absolute_uri(reverse("localturk:worker-preview", args=[hit.hit_id])),
        "acceptUrl": request.build_absolute_uri(reverse("localturk:worker-accept", args=[hit.hit_id])),
    }


def _error(request, exc: WorkerActionError):
    if _wants_json(request):
        return JsonResponse(exc.as_dict(), status=exc.http_status)
    home = reverse("localturk:worker-home")
    return render(request, "localturk/error.html", {"error": exc, "home": home}, status=exc.http_status)
