"""Control endpoints of the local endpoint: fault switches, simulated participants, bonuses.

For tests and rehearsals only; JSON in and out, no token, no CSRF. Refusals are
`{"code": ..., "message": ...}` with status 400, 404 or 409.

    GET    /localprolific/_control/faults    -> {"faults": [{"kind", "remaining", "latency_ms", "retry_after",
                                                             "operations"}]}
    POST   /localprolific/_control/faults    {"throttle": N, "service_fault": N, "lost_response": N,
                                              "retry_after": S, "latency_ms": M, "latency_calls": K,
                                              "operations": ["studies.create"]}   -> 201 {"faults": [...]}
    DELETE /localprolific/_control/faults    -> 204, every switch cleared

    POST   /localprolific/_control/studies/<study id>/participants   {"participant_id": optional}
           -> 201 {"participant_id", "session_id", "submission_id", "study_id", "status": "ACTIVE", "url"}
              A participant id is 1 to 64 letters, digits, - or _ (400 participant_invalid otherwise);
              without one a new 24-hex-digit id is made.
              `url` is the study URL with {{%PROLIFIC_PID%}}, {{%STUDY_ID%}}, {{%SESSION_ID%}} filled in
              (the session id is the submission id). Sets the cookie `localprolific_participant` (path
              /localprolific/) that the completion page reads. Starting again while ACTIVE answers the
              same submission (200). 409 study_not_active | places_exhausted | already_taken_part.
    POST   /localprolific/_control/submissions/<submission id>/return     -> 200 {"id", "status": "RETURNED", ...}
    POST   /localprolific/_control/submissions/<submission id>/time-out   -> 200 {"id", "status": "TIMED-OUT", ...}
    POST   /localprolific/_control/submissions/<submission id>/partially-approve
           -> 200 {"id", "status": "PARTIALLY APPROVED", ...}   (from AWAITING REVIEW; Prolific does it
              through a completion code set up for partial approval)
    GET    /localprolific/_control/bonuses?study=<study id>
           -> {"bulk_bonuses": [{"id", "study_id", "amount", "fees", "pay_requests", "entries"}],
               "payments": [{"bulk_id", "study_id", "participant_id", "submission_id", "amount", "paid_at"}]}
              amounts in cents; one payment row per participant per pay call.
    GET    /localprolific/_control/charges?study=<study id>
           -> {"studies": [{"study_id", "status", "reward", "fee", "places", "approved", "funded", "charged",
                            "refunded", "reserved"}]}
              What each study cost the workspace, in cents (charges.py): funded when published, charged per
              approved submission, refunded when completed; reserved = funded − charged − refunded.
"""

from django.db import transaction
from django.http import JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from rehearsal.fault_control import fault_switches, faults_control_view, json_object

from . import charges, faults, submissions, wire
from .api import OPERATIONS
from .errors import ParticipantError
from .models import BonusPayment, BulkBonus, Study, Submission

PARTICIPANT_COOKIE = "localprolific_participant"
COOKIE_PATH = "/localprolific/"
FAULT_COUNTS = ("throttle", "service_fault", "lost_response", "latency_ms", "latency_calls", "retry_after")


faults_control = faults_control_view(
    faults, lambda body: fault_switches(body, counts=FAULT_COUNTS, operations=OPERATIONS)
)


@csrf_exempt
@require_POST
def participant_start(request, study_id):
    try:
        participant_id = json_object(request.body).get("participant_id") or None
        if participant_id is not None and not isinstance(participant_id, str):
            raise ValueError("participant_id must be a string.")
    except ValueError as exc:
        return JsonResponse({"code": "invalid_participant", "message": str(exc)}, status=400)
    try:
        with transaction.atomic():
            existed = (
                participant_id is not None
                and Submission.objects.filter(
                    study__study_id=study_id, participant_id=participant_id, status=Submission.Status.ACTIVE
                ).exists()
            )
            submission = submissions.participant_start(
                study_id=study_id, participant_id=participant_id, now=timezone.now()
            )
    except ParticipantError as exc:
        return JsonResponse(exc.as_dict(), status=exc.http_status)
    response = JsonResponse(start_json(submission), status=200 if existed else 201)
    remember_participant(response, submission.participant_id)
    return response


@csrf_exempt
@require_POST
def submission_return(request, submission_id):
    return _release(submission_id, Submission.Status.RETURNED)


@csrf_exempt
@require_POST
def submission_time_out(request, submission_id):
    return _release(submission_id, Submission.Status.TIMED_OUT)


@csrf_exempt
@require_POST
def submission_partially_approve(request, submission_id):
    try:
        with transaction.atomic():
            submission = submissions.submission_partially_approve(submission_id=submission_id, now=timezone.now())
    except ParticipantError as exc:
        return JsonResponse(exc.as_dict(), status=exc.http_status)
    return JsonResponse(wire.submission_short_json(submission))


@require_GET
def bonuses_control(request):
    bulks = BulkBonus.objects.select_related("study").order_by("pk")
    payments = BonusPayment.objects.select_related("bulk__study", "submission").order_by("pk")
    if request.GET.get("study"):
        bulks = bulks.filter(study__study_id=request.GET["study"])
        payments = payments.filter(bulk__study__study_id=request.GET["study"])
    return JsonResponse(
        {
            "bulk_bonuses": [
                {
                    "id": b.bonus_id,
                    "study_id": b.study.study_id,
                    "amount": b.amount,
                    "fees": b.fees,
                    "pay_requests": b.pay_requests,
                    "entries": b.entries,
                }
                for b in bulks
            ],
            "payments": [
                {
                    "bulk_id": p.bulk.bonus_id,
                    "study_id": p.bulk.study.study_id,
                    "participant_id": p.submission.participant_id,
                    "submission_id": p.submission.submission_id,
                    "amount": p.amount,
                    "paid_at": wire.when(p.paid_at),
                }
                for p in payments
            ],
        }
    )


@require_GET
def charges_control(request):
    studies = Study.objects.order_by("pk")
    if request.GET.get("study"):
        studies = studies.filter(study_id=request.GET["study"])
    return JsonResponse({"studies": [charges.study_charges(study) for study in studies]})


def start_json(submission: Submission) -> dict:
    return {
        "participant_id": submission.participant_id,
        "session_id": submission.submission_id,
        "submission_id": submission.submission_id,
        "study_id": submission.study.study_id,
        "status": submission.status,
        "url": submissions.study_url_for(submission),
    }


def remember_participant(response, participant_id: str) -> None:
    response.set_cookie(PARTICIPANT_COOKIE, participant_id, path=COOKIE_PATH, samesite="Lax")


def _release(submission_id: str, outcome: str):
    try:
        with transaction.atomic():
            submission = submissions.participant_release(submission_id=submission_id, outcome=outcome)
    except ParticipantError as exc:
        return JsonResponse(exc.as_dict(), status=exc.http_status)
    return JsonResponse(wire.submission_short_json(submission))
