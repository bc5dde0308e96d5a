"""The campaign's channel page and its participant links, for researchers. Thin: find the
campaign among those the user may see (others are a 404), call crowd.channels or
crowd.channels.links.links, render."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.access import campaign_for_request, user_may_edit
from annotation.campaigns import campaign_has_published
from annotation.models import Campaign
from config.errors import ApplicationError, NotFound
from config.site_address import site_url_loopback_warning
from config.spreadsheets import SpreadsheetWriter
from crowd.channels import settings as channels
from crowd.channels.links import codes, links
from crowd.marketplaces.prolific.filters import eligibility_choices
from crowd.models import HIT, ParticipantLink
from crowd.sessions import holds
from crowd.work import ledger
from dashboard.channel_forms import ChannelForm, CodesForm, IdleForm, LinksForm


def _campaign(request: HttpRequest, slug: str) -> Campaign:
    return campaign_for_request(request, slug)  # a viewer's POST is a 403 (annotation.access)


# ---- Channel and participant links ----------------------------------------------------------------


@login_required
@require_GET
def campaign_channel(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign(request, slug)
    return _channel_page(request, campaign)


def _channel_page(
    request, campaign, *, channel_form=None, links_form=None, codes_form=None, idle_form=None, status=200
) -> HttpResponse:
    """`codes_form`: (link id, a refused CodesForm) to show beside that link."""
    if channel_form is None:
        choices = eligibility_choices()
        channel_form = ChannelForm(initial=ChannelForm.initial_for(campaign, choices), choices=choices)
    may_edit = user_may_edit(request.user, campaign)
    return render(
        request,
        "crowd/channel.html",
        {
            "campaign": campaign,
            "channel_form": channel_form,
            "links_form": links_form or LinksForm(initial={"kind": ParticipantLink.Kind.PERSONAL}),
            "published": campaign_has_published(campaign),
            "published_on": _published_on(campaign),
            # A personal link is its participant's identity: its address only for editors.
            "links": [
                (
                    link,
                    links.link_url(link) if may_edit else None,
                    codes.code_rule_wording(link),
                    _codes_form(link, codes_form),
                )
                for link in campaign.participant_links.all()
            ],
            "idle_form": idle_form or IdleForm(initial={"idle_minutes": _idle_minutes(campaign.link_idle_seconds)}),
            "may_edit": may_edit,
            "site_warning": site_url_loopback_warning(),
            "participants": links.participants(campaign=campaign),
            "held": links.held_places(campaign=campaign),
            "link_caps": {
                "per_address": settings.LINK_SESSIONS_PER_ADDRESS,
                "per_link": settings.LINK_SESSIONS_PER_LINK,
                "idle_minutes": holds.link_idle_seconds(campaign) / 60,
                "idle_own": campaign.link_idle_seconds is not None,
                "idle_default_minutes": settings.LINK_IDLE_RELEASE_SECONDS / 60,
            },
            "studies": ledger.campaign_studies(campaign=campaign),
        },
        status=status,
    )


def _codes_form(link: ParticipantLink, refused: tuple[int, CodesForm] | None) -> CodesForm | None:
    """An open link's codes form: as refused, or as the link stands."""
    if link.kind != ParticipantLink.Kind.OPEN:
        return None
    if refused is not None and refused[0] == link.pk:
        return refused[1]
    return CodesForm(initial={"codes": link.codes_allowed, "code_pattern": link.code_pattern}, prefix=f"link{link.pk}")


def _idle_minutes(seconds: int | None) -> int | None:
    return None if seconds is None else seconds // 60


def _published_on(campaign) -> list[str]:
    """The channels the campaign's HITs were published on, read from the HITs themselves."""
    channels_used = (
        HIT.objects.filter(task__batch__topic__campaign=campaign)
        .order_by("channel")
        .values_list("channel", flat=True)
        .distinct()
    )
    return [Campaign.Channel(channel).label for channel in channels_used]


@login_required
@require_POST
def campaign_channel_set(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign(request, slug)
    form = ChannelForm(request.POST, choices=eligibility_choices())
    if not form.is_valid():
        return _channel_page(request, campaign, channel_form=form, status=400)
    try:
        saved = channels.channel_settings_set(campaign=campaign, **form.cleaned_data)
    except ApplicationError as error:
        form.add_error(None, error.message)
        # Shown as stored: a refused change must not appear on the page as if it were made.
        return _channel_page(request, _campaign(request, slug), channel_form=form, status=error.http_status)
    messages.success(request, "Channel settings saved.")
    raised = {
        name: getattr(saved, name)
        for name in ("likert_reward", "comparison_reward")
        if getattr(saved, name) != getattr(campaign, name)
    }
    if raised:
        messages.info(request, channels.rewards_fit_wording(campaign=saved, changes=raised))
    return redirect("crowd:campaign-channel", slug=campaign.slug)


@login_required
@require_POST
def links_new(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign(request, slug)
    form = LinksForm(request.POST)
    if not form.is_valid():
        return _channel_page(request, campaign, links_form=form, status=400)
    try:
        made = links.links_issue(
            campaign=campaign,
            kind=form.cleaned_data["kind"],
            labels=form.cleaned_data["lines"],
            created_by=request.user,
            code_rule=form.cleaned_data["code_rule"],
        )
    except ApplicationError as error:
        form.add_error(None, error.message)
        return _channel_page(request, campaign, links_form=form, status=error.http_status)
    messages.success(request, f"{len(made)} link{'s' if len(made) != 1 else ''} created.")
    return redirect("crowd:campaign-channel", slug=campaign.slug)


@login_required
@require_POST
def link_revoke(request: HttpRequest, slug: str, link_id: int) -> HttpResponse:
    campaign = _campaign(request, slug)
    link = get_object_or_404(campaign.participant_links, pk=link_id)
    stopped = links.link_revoke(link=link)
    messages.success(request, f"Link revoked{f'; {stopped} session(s) stopped' if stopped else ''}.")
    return redirect("crowd:campaign-channel", slug=campaign.slug)


@login_required
@require_POST
def link_codes(request: HttpRequest, slug: str, link_id: int) -> HttpResponse:
    """Which codes an open link lets in (crowd.channels.links.codes)."""
    campaign = _campaign(request, slug)
    link = get_object_or_404(campaign.participant_links, pk=link_id, kind=ParticipantLink.Kind.OPEN)
    form = CodesForm(request.POST, prefix=f"link{link.pk}")
    if not form.is_valid():
        return _channel_page(request, campaign, codes_form=(link.pk, form), status=400)
    codes.link_codes_set(link=link, rule=form.cleaned_data["code_rule"])
    messages.success(request, f"{link}: {codes.code_rule_wording(link)} let in from now on.")
    return redirect("crowd:campaign-channel", slug=campaign.slug)


@login_required
@require_POST
def campaign_idle(request: HttpRequest, slug: str) -> HttpResponse:
    """The campaign's idle window on participant links (crowd.sessions.holds.link_idle_set)."""
    campaign = _campaign(request, slug)
    form = IdleForm(request.POST)
    if not form.is_valid():
        return _channel_page(request, campaign, idle_form=form, status=400)
    campaign = holds.link_idle_set(campaign=campaign, minutes=form.cleaned_data["idle_minutes"])
    minutes = holds.link_idle_seconds(campaign) // 60
    messages.success(request, f"An idle place is now released after {minutes} minute{'s' if minutes != 1 else ''}.")
    return redirect("crowd:campaign-channel", slug=campaign.slug)


@login_required
@require_POST
def hold_release(request: HttpRequest, slug: str, hold_id: int) -> HttpResponse:
    """Free a participant's held place now (crowd.sessions.holds.hold_release); a place already
    free or answered is said so, and nothing changes."""
    campaign = _campaign(request, slug)
    try:
        released = holds.hold_release(campaign=campaign, hold_id=hold_id, by=request.user.get_username())
    except NotFound as error:
        raise Http404(error.message) from None
    except ApplicationError as error:
        messages.warning(request, error.message)
    else:
        messages.success(
            request,
            f"Place released: {released.task.batch.topic.key} · task {released.task.position} is free for the next "
            "participant. An answer its participant still sends counts only if the task still needs it.",
        )
    return redirect("crowd:campaign-channel", slug=campaign.slug)


@login_required
@require_GET
def links_csv(request: HttpRequest, slug: str) -> HttpResponse:
    """Every link with its address, to mail out: label, kind, URL, revoked, and the version of the
    consent text its participants last agreed to (links.link_consent_versions). Editors only: a
    personal link is its participant's identity."""
    campaign = campaign_for_request(request, slug, edit=True)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-links.csv"'
    writer = SpreadsheetWriter(response)
    writer.writerow(["label", "kind", "url", "revoked", "consent_version"])
    versions = links.link_consent_versions(campaign=campaign)
    for link in campaign.participant_links.all():
        revoked = "yes" if link.revoked else ""
        writer.writerow([link.label, link.kind, links.link_url(link), revoked, versions.get(link.pk, "")])
    return response
