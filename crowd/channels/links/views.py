"""A participant link's page (mounted at /s/l/<token>/): the participant's progress and a
button to start or resume; an open link asks for the participant's code first."""

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from config.client_address import client_address
from config.errors import ApplicationError, TooBusy
from crowd.channels.links import codes, links
from crowd.models import ParticipantLink
from crowd.sessions import holds
from crowd.sessions.messages import message_page

CODE_REFUSED = (
    "Sorry, this code is not one the researcher gave out for this study. Check it (letters and digits as "
    "written; capitals do not matter) and try again, or ask the researcher who invited you."
)


@require_http_methods(["GET", "POST"])
def link_page(request: HttpRequest, token: str) -> HttpResponse:
    """A participant link: the participant's progress, and a button to start (or resume)."""
    link = ParticipantLink.objects.select_related("campaign", "worker").filter(token=token).first()
    if link is None:
        return message_page(request, "Unknown link", "This link does not exist. Check the address you were given.", 404)
    if link.revoked:
        return message_page(request, "This link was withdrawn", "The researcher has closed this link. Thank you.", 410)
    error = ""
    status = 400
    code = ""
    worker = link.worker
    if request.method == "POST":
        if link.kind == ParticipantLink.Kind.OPEN:
            code = request.POST.get("code", "").strip()
            if not codes.code_valid(code):
                error = "Enter the participant code you were given: letters, digits, dots, dashes or underscores."
            elif not codes.code_let_in(link=link, code=code):
                error = CODE_REFUSED
                status = 403
            else:
                worker = links.open_link_worker(link=link, code=code)
        if not error:
            # A personal link is created with its worker; an open one got it from the code above.
            assert worker is not None, "a personal link has its worker"
            if holds.worker_turned_away(campaign=link.campaign, worker=worker):
                return render(request, "session/unavailable.html", status=403)
            try:
                session = holds.link_session_open(link=link, worker=worker, address=client_address(request))
            except ApplicationError as failure:
                response = message_page(request, "Cannot start", failure.message, failure.http_status)
                if isinstance(failure, TooBusy):
                    response["Retry-After"] = str(failure.retry_after)
                return response
            return HttpResponseRedirect(reverse("sessions:session", args=[session.key]))
    done = 0 if worker is None else worker.assignments.filter(task__batch__topic__campaign=link.campaign).count()
    return render(
        request,
        "session/link.html",
        {
            "link": link,
            "done": done,
            "per_session": link.campaign.tasks_per_session,
            "idle_minutes": holds.link_idle_seconds(link.campaign) // 60,
            "asks_code": link.kind == ParticipantLink.Kind.OPEN,
            "code": code,
            "error": error,
        },
        status=status if error else 200,
    )
