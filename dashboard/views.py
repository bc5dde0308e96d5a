"""The researcher's dashboard: campaigns, the create form, the campaign page and its
actions. Thin: find the campaign among those the user may see (others are a 404), call
one job function, render or redirect; errors of the job are shown where they happened."""

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.core.paginator import Page, Paginator
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.access import campaign_for_request
from annotation.campaigns import (
    campaign_create,
    campaign_import_refusal,
    campaign_pause,
    campaign_resume,
    campaign_update,
    campaigns_visible_to,
)
from annotation.importing.importers import ImportFailed, ImportSummary, propositions_import
from annotation.importing.topics import topics_with_likert_built
from annotation.models import Batch, Campaign
from config.errors import ApplicationError
from crowd.channels.prolific.raises import campaign_raises, raise_approve
from crowd.channels.settings import campaign_rewards_fit
from crowd.hit_page.content import hit_content_get
from crowd.hit_page.views import hit_preview_page, sample_content
from crowd.marketplaces.base import PaymentUnit
from crowd.marketplaces.registry import channel_policy, get_marketplace
from crowd.models import HIT
from crowd.work import ledger
from crowd.work.expiry import batch_expire
from crowd.work.progress import campaign_progress, campaigns_overview
from crowd.work.rounds import plans_budget_preview, round_out, round_wording, topic_publish_plans
from dashboard.forms import CampaignForm, CampaignSettingsForm, ImportForm, PublishForm
from ranking.stopping import budget_warning
from ranking.workflow import topic_round_publish

TOPICS_PER_PAGE = 10  # topic cards on a campaign page
BALANCE_SECONDS = 60  # how long a marketplace balance is shown before it is read again


def _campaign(request: HttpRequest, slug: str) -> Campaign:
    return campaign_for_request(request, slug)  # a viewer's POST is a 403 (annotation.access)


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
            raised = campaign_rewards_fit(campaign=campaign)
            messages.success(request, f"Campaign {campaign.name} created. Next: upload its propositions.")
            if raised:
                messages.info(request, raised)
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
                campaign_update(campaign_id=campaign.pk, changes=form.changes, by=request.user)
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
    topics = topics_page(campaign, request.GET.get("page"))
    return render(
        request,
        "dashboard/campaign.html",
        {
            "campaign": campaign,
            "topics_page": topics,
            "topics": campaign_progress(campaign, topics=topics.object_list),
            "money": ledger.campaign_money(campaign=campaign),
            # A channel that pays nobody has no account to show a balance of.
            "balance_shown": channel_policy(campaign.channel).unit != PaymentUnit.NONE,
            "balance": None
            if channel_policy(campaign.channel).unit == PaymentUnit.NONE
            else _balance(campaign, fresh=request.GET.get("balance") == "refresh"),
            "import_form": import_form,
            "import_problems": import_problems or [],
            "import_refusal": campaign_import_refusal(campaign),
            # Places beyond a study's quote, on a channel with studies (no query on the others).
            "raises": campaign_raises(campaign=campaign)
            if "studies" in channel_policy(campaign.channel).page_sections
            else [],
        },
    )


def topics_page(campaign: Campaign, number: str | None) -> Page:
    """A page of the campaign's topics, by key: the campaign page (and its live figures,
    dashboard.progress_views) cost the same queries and rows however many topics there are.
    Each topic comes with `likert_built`, for the card's description form (annotation.topic_descriptions)."""
    topics = topics_with_likert_built(campaign.topics.order_by("key", "pk"))
    return Paginator(topics, TOPICS_PER_PAGE).get_page(number)


@dataclass(frozen=True)
class Balance:
    amount: Decimal
    read_at: datetime


def _balance(campaign: Campaign, *, fresh: bool = False) -> Balance | None:
    """The marketplace account's available balance, as read at most BALANCE_SECONDS ago (one
    account per channel and environment, so campaigns share it) unless `fresh`; None when the
    marketplace cannot say, which is not kept, so the next page asks again."""
    key = f"marketplace-balance:{campaign.channel}:{campaign.environment}"
    kept = None if fresh else cache.get(key)
    if kept is not None:
        return kept
    try:
        balance = Balance(get_marketplace(campaign).balance(), timezone.now())
    except ApplicationError:
        return None
    cache.set(key, balance, BALANCE_SECONDS)
    return balance


@login_required
@require_POST
def upload_propositions(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign(request, slug)
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        return _campaign_page(request, campaign, form)
    data = form.cleaned_data
    upload, topics, obvious = data["file"], data["topics"], data["obvious_traps"]
    traps = data["traps"] if obvious is None else None
    try:
        with transaction.atomic():  # one upload, one transaction: the obvious traps too
            if obvious is not None:
                campaign_update(campaign_id=campaign.pk, changes={"obvious_traps": obvious}, by=request.user)
            summary = propositions_import(
                campaign=campaign,
                source=upload,
                filename=upload.name,
                format=data["format"],
                delimiter=data["delimiter"],
                min_confidence=data["min_confidence"],
                topics_source=topics,
                topics_filename=topics.name if topics else "topics",
                traps_source=traps,
                traps_filename=traps.name if traps else "traps",
                user=request.user,
            )
    except ImportFailed as failure:
        return _campaign_page(request, campaign, form, [failure.message, *failure.details])
    except ApplicationError as refused:
        return _campaign_page(request, campaign, form, [refused.message])
    messages.success(request, _import_message(summary))
    if obvious is not None:
        messages.success(
            request,
            f"Obvious traps: {len(obvious)} sentence{'s' if len(obvious) != 1 else ''} from {data['traps'].name}.",
        )
    for warning in summary.warnings:
        messages.warning(request, warning)
    return _back(campaign)


def _import_message(summary: ImportSummary) -> str:
    topics = "; ".join(
        f"{key}: {counts.kept} kept of {counts.read} read, {counts.below_threshold} below the confidence "
        f"threshold ({summary.min_confidence:g}), {counts.duplicates} duplicate{'s' if counts.duplicates != 1 else ''}"
        + (
            f", {counts.ids_filled} id{'s' if counts.ids_filled != 1 else ''} added to earlier rows"
            if counts.ids_filled
            else ""
        )
        for key, counts in sorted(summary.topics.items())
    )
    traps = sum(counts.kept for counts in summary.traps.values())
    also = f" and {traps} subtle trap{'s' if traps != 1 else ''}" if summary.traps else ""
    return f"Imported {summary.kept} propositions{also} from {summary.filename} ({summary.read_as}): {topics}."


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
            wording = round_wording(topic=topic, kind=Batch.Kind.LIKERT, results=results)
            if any(result.published for result in results):
                messages.success(request, wording)
            else:
                messages.info(request, wording)
            return _back(campaign)
    try:
        plans, problem = topic_publish_plans(topic=topic, kind=Batch.Kind.LIKERT), ""
    except ApplicationError as error:
        plans, problem = [], error.message
    hits = sum(plan.hits for plan in plans)
    out = (
        ""
        if plans or problem
        else round_wording(topic=topic, kind=Batch.Kind.LIKERT, results=round_out(topic=topic, kind=Batch.Kind.LIKERT))
    )
    return render(
        request,
        "dashboard/publish.html",
        {
            "campaign": campaign,
            "topic": topic,
            "form": form,
            "plans": plans,
            "problem": problem,
            "out": out,
            "hits": hits,
            "tasks": channel_policy(campaign.channel).tasks_wording(hits),
            "budget": plans_budget_preview(campaign=campaign, plans=plans),
            "budget_warning": budget_warning(topic),
        },
    )


@login_required
@require_GET
def hit_preview(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    """A HIT of the topic exactly as a worker sees it before accepting: the real page in
    preview mode, with no assignment and no submit token (crowd.hit_page.views).
    `?batch=<id>` chooses one of the topic's batches (default: its Likert batch) and `?task=<n>`
    the batch's n-th task (default: the first). Before the Likert round is built, the first
    HIT its plan would draw."""
    campaign = _campaign(request, slug)
    topic = get_object_or_404(campaign.topics, key=key)
    batch_id, position = request.GET.get("batch", ""), request.GET.get("task", "1")
    if not (batch_id.isdigit() or batch_id == "") or not position.isdigit() or int(position) < 1:
        raise Http404("No such batch or task.")
    batches = topic.batches.all()
    batch = get_object_or_404(batches, pk=batch_id) if batch_id else batches.filter(kind=Batch.Kind.LIKERT).first()
    if batch is None:
        sample = sample_content(topic=topic)
        if sample is None:
            messages.info(request, f"Topic {topic.key} has no propositions to preview yet: upload some first.")
            return _back(campaign)
        return hit_preview_page(sample)
    task = batch.tasks.order_by("position")[int(position) - 1 : int(position)].first()
    content = hit_content_get(task.uuid) if task is not None else None
    if task is None or content is None:
        raise Http404("No such task.")
    return hit_preview_page(
        content, hit_id=HIT.objects.filter(task=task).values_list("hit_id", flat=True).first() or ""
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
def approve_raise(request: HttpRequest, slug: str, raise_id: int) -> HttpResponse:
    """The owner's yes to more places than a study's quote (crowd.channels.prolific.raises)."""
    campaign = _campaign(request, slug)
    try:
        places_raise = raise_approve(campaign=campaign, raise_id=raise_id, by=request.user)
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        policy = channel_policy(campaign.channel)
        messages.success(
            request,
            f"Approved: study {places_raise.study} goes to {places_raise.places_to} places "
            f"({policy.money_wording(places_raise.cost)} more) at the next sync.",
        )
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
