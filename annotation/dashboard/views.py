"""The researcher's dashboard: campaigns, the create form, the campaign page and its
actions. Thin: find the campaign among those the user may see (others are a 404), call
one job function, render or redirect; errors of the job are shown where they happened."""

from decimal import Decimal

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.campaigns import (
    campaign_create,
    campaign_pause,
    campaign_resume,
    campaign_update,
    campaigns_visible_to,
)
from annotation.dashboard.forms import CampaignForm, CampaignSettingsForm, ImportForm, PublishForm
from annotation.importing.importers import ImportFailed, ImportSummary, propositions_import
from annotation.models import Batch, Campaign
from config.errors import ApplicationError
from crowd.marketplaces.registry import channel_policy, get_marketplace
from crowd.work import ledger
from crowd.work.expiry import batch_expire
from crowd.work.progress import campaign_progress, campaigns_overview
from crowd.work.publishing import topic_publish_plans
from ranking.workflow import topic_round_publish


def _campaign(request: HttpRequest, slug: str) -> Campaign:
    return get_object_or_404(campaigns_visible_to(request.user), slug=slug)


def _back(campaign: Campaign) -> HttpResponse:
    return redirect("dashboard:campaign", slug=campaign.slug)


@login_required
@require_GET
def campaign_list(request: HttpRequest) -> HttpResponse:
    overviews = campaigns_overview(campaigns_visible_to(request.user).order_by("-created_at"))
    return render(request, "dashboard/campaign_list.html", {"overviews": overviews})


@login_required
@require_http_methods(["GET", "POST"])
def create_campaign(request: HttpRequest) -> HttpResponse:
    form = CampaignForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            campaign = campaign_create(owner=request.user, **form.cleaned_data)
        except ApplicationError as error:
            form.add_error(None, error.message)
        else:
            messages.success(request, f"Campaign {campaign.name} created. Next: upload its propositions.")
            return _back(campaign)
    return render(request, "dashboard/campaign_form.html", {"form": form})


@login_required
@require_http_methods(["GET", "POST"])
def campaign_settings(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign(request, slug)
    form = CampaignSettingsForm(request.POST or None, campaign=campaign)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                campaign_update(campaign_id=campaign.pk, changes=form.changes)
            except ApplicationError as error:
                form.add_error(None, error.message)
                status = error.http_status
            else:
                messages.success(request, "Settings saved.")
                return _back(campaign)
    return render(request, "dashboard/campaign_settings.html", {"campaign": campaign, "form": form}, status=status)


@login_required
@require_GET
def campaign_page(request: HttpRequest, slug: str) -> HttpResponse:
    return _campaign_page(request, _campaign(request, slug), ImportForm())


def _campaign_page(
    request: HttpRequest, campaign: Campaign, import_form: ImportForm, import_problems: list[str] | None = None
) -> HttpResponse:
    return render(
        request,
        "dashboard/campaign.html",
        {
            "campaign": campaign,
            "topics": campaign_progress(campaign),
            "money": ledger.campaign_money(campaign=campaign),
            "balance": _balance(campaign),
            "import_form": import_form,
            "import_problems": import_problems or [],
        },
    )


def _balance(campaign: Campaign) -> Decimal | None:
    """The marketplace account's available balance; None when the marketplace cannot say."""
    try:
        return get_marketplace(campaign).balance()
    except ApplicationError:
        return None


@login_required
@require_POST
def upload_propositions(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign(request, slug)
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        return _campaign_page(request, campaign, form)
    upload, topics = form.cleaned_data["file"], form.cleaned_data["topics"]
    try:
        summary = propositions_import(
            campaign=campaign,
            source=upload,
            filename=upload.name,
            topics_source=topics,
            topics_filename=topics.name if topics else "topics",
            user=request.user,
        )
    except ImportFailed as failure:
        return _campaign_page(request, campaign, form, [failure.message, *failure.details])
    messages.success(request, _import_message(summary))
    for warning in summary.warnings:
        messages.warning(request, warning)
    return _back(campaign)


def _import_message(summary: ImportSummary) -> str:
    topics = "; ".join(
        f"{key}: {counts.kept} kept of {counts.read} read, {counts.below_threshold} below the confidence "
        f"threshold, {counts.duplicates} duplicate{'s' if counts.duplicates != 1 else ''}"
        for key, counts in sorted(summary.topics.items())
    )
    return f"Imported {summary.kept} propositions from {summary.filename} ({topics})."


@login_required
@require_http_methods(["GET", "POST"])
def publish_likert_round(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    """A preview of the HITs and their cost; publishing after confirmation."""
    campaign = _campaign(request, slug)
    topic = get_object_or_404(campaign.topics, key=key)
    form = PublishForm(request.POST if request.method == "POST" else None, campaign=campaign)
    if request.method == "POST" and form.is_valid():
        try:
            results = topic_round_publish(topic=topic, kind=Batch.Kind.LIKERT, live=form.needs_typed_confirmation)
        except ApplicationError as error:
            form.add_error(None, error.message)
        else:
            published = sum(result.published for result in results)
            cost = sum((result.cost for result in results), Decimal("0.00"))
            messages.success(
                request,
                f"Published {published} Likert HITs of topic {topic.key} to the "
                f"{channel_policy(campaign.channel).environment_label(campaign.environment)}; ${cost} committed.",
            )
            return _back(campaign)
    try:
        plans, problem = topic_publish_plans(topic=topic, kind=Batch.Kind.LIKERT), ""
    except ApplicationError as error:
        plans, problem = [], error.message
    hits = sum(plan.hits for plan in plans)
    cost = sum((plan.cost for plan in plans), Decimal("0.00"))
    money = ledger.campaign_money(campaign=campaign)
    return render(
        request,
        "dashboard/publish.html",
        {
            "campaign": campaign,
            "topic": topic,
            "form": form,
            "plans": plans,
            "problem": problem,
            "hits": hits,
            "cost": cost,
            "money": money,
            "after": money.committed + cost,
        },
    )


@login_required
@require_POST
def pause_campaign(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign(request, slug)
    try:
        campaign_pause(campaign_id=campaign.pk)
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, "Paused: no further batches are published. HITs already out stay open.")
    return _back(campaign)


@login_required
@require_POST
def resume_campaign(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign(request, slug)
    try:
        campaign_resume(campaign_id=campaign.pk)
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, "Resumed: every topic moves on as soon as its current batch is complete.")
    return _back(campaign)


@login_required
@require_POST
def expire_batch(request: HttpRequest, slug: str, batch_id: int) -> HttpResponse:
    campaign = _campaign(request, slug)
    batch = get_object_or_404(Batch.objects.select_related("topic"), pk=batch_id, topic__campaign=campaign)
    try:
        result = batch_expire(batch_id=batch.pk)
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(
            request,
            f"Expired {result.expired} open HIT{'s' if result.expired != 1 else ''} of {batch}. "
            "Workers who accepted one before can still submit it.",
        )
    return _back(campaign)
