"""The participant's side of a session (Prolific or a participant link), mounted at /s/
(crowd/channels/urls.py). How a participant arrives is their channel's
(crowd/channels/<channel>/views.py); from then on every channel's session is the same.

A session page shows "Task 3 of 10" above the ordinary HIT page, framed from our own
origin, with the hold's assignmentId, the participant's workerId and turkSubmitTo = the
session's address. The HIT page stores the answer and posts its copy to
`<session>/mturk/externalSubmit` (`answer_copy`), which counts it and moves the whole
window on to the next task, or to the channel's completion step after the last one.
"""

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from config.errors import ApplicationError, NotFound, TooBusy
from crowd.hit_page.params import HitParams
from crowd.marketplaces.registry import channel_policy
from crowd.models import WorkSession
from crowd.sessions import holds
from crowd.sessions.messages import message_page

# ---- The session ---------------------------------------------------------------------------------


@require_GET
def session_page(request: HttpRequest, key) -> HttpResponse:
    try:
        session = holds.session_get(key)
    except NotFound as error:
        return message_page(request, "Unknown session", error.message, 404)
    if not holds.session_is_confirmed(session):  # opened before arrivals were checked with Prolific
        return message_page(request, "Cannot continue", _unconfirmed(session), 403)
    if holds.worker_turned_away(campaign=session.campaign, worker=session.worker):
        return render(request, "session/unavailable.html", status=403)
    if session.status == WorkSession.Status.ABANDONED:
        return message_page(request, "This session has ended", "You returned this study or ran out of time. Thank you.")
    if session.status == WorkSession.Status.ACTIVE and holds.consent_due(session):
        return _consent_page(request, session)
    try:
        hold = holds.session_next(session) if session.status == WorkSession.Status.ACTIVE else None
    except TooBusy as busy:  # an open link's caps (holds._link_caps_check)
        response = message_page(request, "Please try again in a few minutes", busy.message, busy.http_status)
        response["Retry-After"] = str(busy.retry_after)
        return response
    if hold is None and session.status == WorkSession.Status.ACTIVE:
        return _nothing_left(request, session)
    if hold is None:
        return _completion(request, session)
    progress = holds.progress(session)
    submit_to = request.build_absolute_uri(reverse("sessions:session", args=[session.key])).rstrip("/")
    query = HitParams(
        assignment_id=hold.assignment_id,
        hit_id=hold.task.hit.hit_id,
        worker_id=session.worker.external_id,
        turk_submit_to=submit_to,
    ).query_string()
    return render(
        request,
        "session/frame.html",
        {
            "session": session,
            "progress": progress,
            "percent": round(100 * progress.done / progress.target),
            "task_url": f"{reverse('hit:page', args=[hold.task.uuid])}?{query}",
            "task_title": session.campaign.title_for(hold.task.kind),  # a Likert or an ordering task's own
            "alive_url": reverse("sessions:alive", args=[session.key]) if session.link_id else "",
            "alive_seconds": max(15, holds.link_idle_seconds(session.campaign) // 3),
        },
    )


@require_POST
def session_consent(request: HttpRequest, key) -> HttpResponse:
    """The consent page's answer: agreeing records the time and the text's version (the page's
    `consent` field) and goes on to the task; anything else, or an agreement to a text changed
    since the page was shown, shows the page again. No task is handed out here."""
    try:
        session = holds.session_get(key)
    except NotFound as error:
        return message_page(request, "Unknown session", error.message, 404)
    if request.POST.get("agree") != "yes":
        return _consent_page(request, session, error="Tick the box to agree, or close this page if you do not.")
    if session.status == WorkSession.Status.ACTIVE and holds.session_is_confirmed(session):
        holds.session_consent(session, digest=request.POST.get("consent", ""))
        if holds.consent_due(session):
            return _consent_page(request, session, error=CONSENT_CHANGED)
    return HttpResponseRedirect(reverse("sessions:session", args=[session.key]))


CONSENT_CHANGED = "The study information changed while this page was open: please read it again."


def _consent_page(request: HttpRequest, session: WorkSession, *, error: str = "") -> HttpResponse:
    if session.study is not None:
        decline = "If you do not agree, please return the study on Prolific; returning does not affect your record."
    else:
        decline = "If you do not agree, just close this page: no answer of yours is recorded."
    context = {
        "session": session,
        "text": session.campaign.consent_text,
        "digest": holds.consent_digest(session.campaign.consent_text),
        "asked_again": bool(session.consent_digest),  # agreed before, to a text changed since
        "decline": decline,
        "error": error,
    }
    return render(request, "session/consent.html", context, status=400 if error else 200)


@csrf_exempt
@xframe_options_sameorigin
@require_POST
def answer_copy(request: HttpRequest, key) -> HttpResponse:
    """Where the HIT page posts its copy of the answer (its turkSubmitTo). The session key in
    the address is the participant's secret; the hold proves the task was handed to them."""
    try:
        session = holds.session_get(key)
        holds.hold_submit(session=session, assignment_id=request.POST.get("assignmentId", "").strip())
    except ApplicationError as error:
        back = reverse("sessions:session", args=[key])
        return render(request, "session/not_counted.html", {"error": error, "back": back}, status=error.http_status)
    return render(request, "session/saved.html", {"next": reverse("sessions:session", args=[session.key])})


@csrf_exempt
@require_POST
def session_alive(request: HttpRequest, key) -> HttpResponse:
    """The session page's heartbeat (static/js/session-alive.js): keeps the task's place while
    the page is open. 204, or 410 when there is no place left to keep; the key is the secret."""
    try:
        session = holds.session_get(key)
    except NotFound:
        return HttpResponse(status=404)
    return HttpResponse(status=204 if holds.session_alive(session) else 410)


# ---- Endings ------------------------------------------------------------------------------------


def _completion(request: HttpRequest, session: WorkSession) -> HttpResponse:
    """The channel's completion step; the Prolific completion code appears only here, and only
    for a confirmed session that finished its tasks."""
    if not holds.completion_due(session):
        return message_page(request, "Cannot continue", _unconfirmed(session), 403)
    completion_url = channel_policy(session.campaign.channel).session_completion_url(session)
    if completion_url is not None:
        return HttpResponseRedirect(completion_url)
    done = holds.progress(session).done
    return render(request, "session/finished.html", {"session": session, "done": done})


def _nothing_left(request: HttpRequest, session: WorkSession) -> HttpResponse:
    if session.study is not None:
        text = (
            "All tasks of this study are taken at the moment, so there is nothing for you to do. "
            "Please return the study on Prolific; returning does not affect your record."
        )
    else:
        text = "There are no tasks for you right now. Please come back later through the same link."
    return message_page(request, "No tasks available", text)


def _unconfirmed(session: WorkSession) -> str:
    return channel_policy(session.campaign.channel).session_unconfirmed_wording
