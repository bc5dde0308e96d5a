"""Worker-quality report pages for researchers. Thin: find the campaign among those the
user may see (others are a 404), call crowd.quality_report or crowd.worker_quality, render."""

import csv
import json
from typing import cast

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from annotation.campaigns import campaign_has_published, campaigns_visible_to
from annotation.models import Campaign, Topic
from config.errors import ApplicationError
from crowd import channels, links
from crowd.forms import ChannelForm, LinksForm, OverrideForm
from crowd.marketplaces.prolific.filters import campaign_prolific_filters
from crowd.models import HIT, ParticipantLink, Study, WorkerQuality
from crowd.quality_report import (
    PAPER_LIKERT_AGREEMENT,
    PAPER_MAJORITY_AGREEMENT,
    PAPER_RUN_RELIABILITY,
    STABILITY_MAX_ITEMS,
    campaign_quality_report,
    comparable_campaigns,
    worker_quality_csv_rows,
)
from crowd.worker_quality import worker_quality_override


def _campaign(request: HttpRequest, slug: str) -> Campaign:
    return get_object_or_404(campaigns_visible_to(request.user), slug=slug)


def _report_page(request: HttpRequest, campaign: Campaign, topic: Topic | None) -> HttpResponse:
    compare = request.GET.get("compare")
    other = get_object_or_404(comparable_campaigns(campaign, topic), slug=compare) if compare else None
    report = campaign_quality_report(campaign, topic, compare_with=other)
    return render(
        request,
        "quality/report.html",
        {
            "report": report,
            "paper": {
                "likert": PAPER_LIKERT_AGREEMENT,
                "majority": PAPER_MAJORITY_AGREEMENT,
                "runs": PAPER_RUN_RELIABILITY,
            },
            "override_choices": cast(forms.ChoiceField, OverrideForm.base_fields["status"]).choices,
            "stability_max_items": STABILITY_MAX_ITEMS,
        },
    )


@login_required
@require_GET
def campaign_quality(request: HttpRequest, slug: str) -> HttpResponse:
    return _report_page(request, _campaign(request, slug), None)


@login_required
@require_GET
def topic_quality(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    campaign = _campaign(request, slug)
    return _report_page(request, campaign, get_object_or_404(campaign.topics, key=key))


@login_required
@require_GET
def campaign_quality_csv(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign(request, slug)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-worker-quality.csv"'
    csv.writer(response).writerows(worker_quality_csv_rows(campaign))
    return response


@login_required
@require_POST
def worker_override(request: HttpRequest, slug: str, worker_id: int) -> HttpResponse:
    campaign = _campaign(request, slug)
    form = OverrideForm(request.POST)
    back = form.data.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        back = ""
    if not form.is_valid():
        messages.error(request, "Choose a decision and give a reason: it is recorded with your name.")
    else:
        try:
            quality = worker_quality_override(
                campaign_id=campaign.pk,
                worker_id=worker_id,
                status=form.cleaned_data["status"],
                reason=form.cleaned_data["reason"],
                user=request.user,
            )
        except ApplicationError as error:
            messages.error(request, error.message)
        else:
            status = WorkerQuality.Status(quality.status).label
            source = "by override" if quality.override_status else "as computed"
            messages.success(request, f"Worker {quality.worker}: {status} {source}.")
    return redirect(back) if back else redirect("crowd:campaign-quality", slug=campaign.slug)


# ---- Channel and participant links ----------------------------------------------------------------


@login_required
@require_GET
def campaign_channel(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign(request, slug)
    return _channel_page(request, campaign)


def _channel_page(request, campaign, *, channel_form=None, links_form=None, status=200) -> HttpResponse:
    channel_form = channel_form or ChannelForm(
        initial={
            "channel": campaign.channel,
            "environment": campaign.environment,
            "tasks_per_session": campaign.tasks_per_session,
            "prolific_filters": _filters_text(campaign),
        }
    )
    return render(
        request,
        "crowd/channel.html",
        {
            "campaign": campaign,
            "channel_form": channel_form,
            "links_form": links_form or LinksForm(initial={"kind": ParticipantLink.Kind.PERSONAL}),
            "published": campaign_has_published(campaign),
            "published_on": _published_on(campaign),
            "links": [(link, links.link_url(link)) for link in campaign.participant_links.all()],
            "participants": links.participants(campaign=campaign),
            "studies": Study.objects.filter(batch__topic__campaign=campaign).select_related("batch__topic"),
        },
        status=status,
    )


def _published_on(campaign) -> list[str]:
    """The channels the campaign's HITs were published on, read from the HITs themselves."""
    channels_used = HIT.objects.filter(task__batch__topic__campaign=campaign).values_list("channel", flat=True)
    return [Campaign.Channel(channel).label for channel in sorted(set(channels_used))]


def _filters_text(campaign) -> str:
    filters = campaign_prolific_filters(campaign)
    return json.dumps(filters, indent=2) if filters else ""


@login_required
@require_POST
def campaign_channel_set(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign(request, slug)
    form = ChannelForm(request.POST)
    if not form.is_valid():
        return _channel_page(request, campaign, channel_form=form, status=400)
    try:
        channels.channel_settings_set(campaign=campaign, **form.cleaned_data)
    except ApplicationError as error:
        form.add_error(None, error.message)
        # Shown as stored: a refused change must not appear on the page as if it were made.
        return _channel_page(request, _campaign(request, slug), channel_form=form, status=error.http_status)
    messages.success(request, "Channel settings saved.")
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
@require_GET
def links_csv(request: HttpRequest, slug: str) -> HttpResponse:
    """Every link with its address, to mail out: label, kind, URL, revoked."""
    campaign = _campaign(request, slug)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-links.csv"'
    writer = csv.writer(response)
    writer.writerow(["label", "kind", "url", "revoked"])
    for link in campaign.participant_links.all():
        writer.writerow([link.label, link.kind, links.link_url(link), "yes" if link.revoked else ""])
    return response
