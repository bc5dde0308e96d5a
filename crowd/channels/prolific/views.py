"""Where a Prolific participant arrives (the study URL, mounted at /s/prolific/): checked
with Prolific before a place is taken (crowd.channels.prolific.study_sync.study_arrive)."""

import re

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_GET

from config.client_address import client_address
from config.errors import ApplicationError, TooBusy
from crowd.channels.prolific import study_sync
from crowd.marketplaces.base import MarketplaceUnavailable
from crowd.marketplaces.prolific.participants import RETRY_AFTER_SECONDS, UNREACHABLE, arrival_address_check
from crowd.models import Study
from crowd.sessions.messages import message_page

PROLIFIC_ID = re.compile(r"[A-Za-z0-9]{1,40}")


@require_GET
def prolific_arrival(request: HttpRequest) -> HttpResponse:
    """Prolific's study URL: PROLIFIC_PID, STUDY_ID and SESSION_ID in the query. A place is
    taken only once Prolific lists that submission (crowd.channels.prolific.study_sync.study_arrive)."""
    pid = request.GET.get("PROLIFIC_PID", "").strip()
    study_id = request.GET.get("STUDY_ID", "").strip()
    session_id = request.GET.get("SESSION_ID", "").strip()
    if not (PROLIFIC_ID.fullmatch(pid) and PROLIFIC_ID.fullmatch(study_id) and PROLIFIC_ID.fullmatch(session_id)):
        return message_page(
            request,
            "This link is incomplete",
            "Please open the study from Prolific: the address needs your Prolific ID, the study and the session.",
            status=400,
        )
    try:
        arrival_address_check(address=client_address(request))
    except TooBusy as busy:
        return _try_again(request, busy)
    study = Study.objects.select_related("topic__campaign").filter(study_id=study_id).first()
    if study is None:
        return message_page(request, "Unknown study", "There is no such study here. Please return it on Prolific.", 404)
    try:
        session = study_sync.study_arrive(study=study, participant_id=pid, session_id=session_id)
    except TooBusy as busy:  # the calls kept for arrivals this minute are used up
        return _try_again(request, busy)
    except MarketplaceUnavailable:
        response = message_page(request, "Please try again in a minute", UNREACHABLE, 503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    except ApplicationError as refused:
        return message_page(request, "Cannot start", refused.message, refused.http_status)
    return HttpResponseRedirect(reverse("sessions:session", args=[session.key]))


def _try_again(request: HttpRequest, busy: TooBusy) -> HttpResponse:
    response = message_page(request, "Please try again in a minute", busy.message, busy.http_status)
    response["Retry-After"] = str(busy.retry_after)
    return response
