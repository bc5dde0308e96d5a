"""What a participant sees of the local Prolific: starting a study and the completion page.

GET /localprolific/studies/<study id>/start?participant=<id>
    Starts (or resumes) the participant's submission and redirects to the study URL with
    the placeholders filled in; without `participant` the cookie's participant, else a
    new one. Sets the cookie `localprolific_participant`.
GET /localprolific/submissions/complete?cc=<code>[&participant=<id>][&format=json]
    Prolific's completion redirect. The participant is the `participant` parameter if
    given, else the `localprolific_participant` cookie that starting set (Prolific knows
    its participant by their login). Their ACTIVE submission of the study that has this
    code moves to AWAITING REVIEW (APPROVED if the code auto-approves); a repeat shows
    the same page. The page says "Thanks, your submission is recorded"; with
    format=json: {"id", "participant_id", "study_id", "status"}. A wrong code is 400, no
    study in progress 404.
"""

from django.db import transaction
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET

from . import submissions
from .control_views import PARTICIPANT_COOKIE, remember_participant
from .errors import ParticipantError


@require_GET
def study_start(request, study_id):
    participant_id = request.GET.get("participant") or request.COOKIES.get(PARTICIPANT_COOKIE) or None
    try:
        with transaction.atomic():
            submission = submissions.participant_start(
                study_id=study_id, participant_id=participant_id, now=timezone.now()
            )
    except ParticipantError as exc:
        return _refusal(request, exc)
    response = redirect(submissions.study_url_for(submission))
    remember_participant(response, submission.participant_id)
    return response


@require_GET
def submission_complete(request):
    code = request.GET.get("cc", "")
    participant_id = request.GET.get("participant") or request.COOKIES.get(PARTICIPANT_COOKIE, "")
    try:
        if not code:
            raise ParticipantError("The link has no completion code (cc).", code="code_missing", http_status=400)
        if not participant_id:
            raise ParticipantError(
                "Who are you? Start the study first, or add participant=<id> to the link.",
                code="participant_unknown",
                http_status=400,
            )
        with transaction.atomic():
            submission = submissions.participant_complete(participant_id=participant_id, code=code, now=timezone.now())
    except ParticipantError as exc:
        return _refusal(request, exc)
    if request.GET.get("format") == "json":
        return JsonResponse(
            {
                "id": submission.submission_id,
                "participant_id": submission.participant_id,
                "study_id": submission.study.study_id,
                "status": submission.status,
            }
        )
    return render(request, "localprolific/complete.html", {"submission": submission})


def _refusal(request, exc: ParticipantError):
    if request.GET.get("format") == "json":
        return JsonResponse(exc.as_dict(), status=exc.http_status)
    return render(request, "localprolific/error.html", {"error": exc}, status=exc.http_status)
