"""A topic's round: its batches of one kind published together (the Likert one built first if
needed), what publishing them would do and cost — with the budget check's verdict, the one the
publish would meet (crowd.work.ledger.budget_preview) — and the words that say what happened;
for the `publish` command, the dashboard's publish page and the loop's first round."""

from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction
from django.db.models import Count, Prefetch

from annotation.batching import likert_tasks_build
from annotation.models import Batch, Campaign, Task, Topic
from crowd.marketplaces.registry import channel_policy
from crowd.work import ledger
from crowd.work.chunks import Dispatch
from crowd.work.publishing import PublishResult, batch_publish, round_publish_check, unpublished_tasks


@dataclass(frozen=True)
class PublishPlan:
    batch: Batch
    hits: int  # tasks without a HIT yet
    cost: Decimal  # their full cost, fees included


def publish_plan(*, batch: Batch) -> PublishPlan:
    """How many HITs publishing `batch` creates and what they cost. Reads only."""
    return PublishPlan(batch=batch, hits=unpublished_tasks(batch).count(), cost=ledger.batch_cost(batch=batch))


def plans_budget_preview(*, campaign: Campaign, plans: list[PublishPlan]) -> ledger.BudgetPreview:
    """What the budget check (ledger.budget_preview) says of publishing `plans` together, in
    the words publishing would refuse them with: the `publish` command's dry run and the
    dashboard's publish page show this."""
    hits = sum(plan.hits for plan in plans)
    cost = sum((plan.cost for plan in plans), ledger.ZERO)
    what = plans[0].batch if len(plans) == 1 else f"{len(plans)} batches of campaign {campaign.slug}"
    return ledger.budget_preview(
        campaign=campaign, cost=cost, what=ledger.publishing_what(hits=hits, what=what), remedy=ledger.PUBLISH_REMEDY
    )


def _topic_batches(*, topic: Topic, kind: str) -> list[Batch]:
    """The topic's batches of `kind` that still have tasks to publish, or were never opened as a
    whole (a Prolific study that failed to open); the Likert one is built if needed."""
    if kind == Batch.Kind.LIKERT and not topic.batches.filter(kind=kind).exists():
        likert_tasks_build(topic=topic, seed=topic.pk)
    unpublished = Prefetch("tasks", queryset=Task.objects.filter(hit__isnull=True))
    batches = topic.batches.filter(kind=kind).exclude(status=Batch.Status.EXPIRED)
    batches = batches.select_related("topic__campaign").prefetch_related(unpublished)
    return [batch for batch in batches.order_by("number") if batch.tasks.all() or batch.status == Batch.Status.CREATED]


def topic_publish_plans(*, topic: Topic, kind: str) -> list[PublishPlan]:
    """What `topic_publish` would do. A Likert batch built for the plan is rolled back."""
    round_publish_check(topic=topic, kind=kind)
    with transaction.atomic():
        plans = [publish_plan(batch=batch) for batch in _topic_batches(topic=topic, kind=kind)]
        transaction.set_rollback(True)
    return plans


def topic_publish(
    *, topic: Topic, kind: str, live: bool = False, dispatch: Dispatch | None = None
) -> list[PublishResult]:
    """Publish the topic's unpublished batches of `kind`; the Likert batch is built first if needed.
    A batch that is out already gives a result with nothing published and its HITs as `already`,
    so a repeated publish can say what is out.

    The Likert batch is shuffled with the topic id as seed, so it is reproducible. With
    `dispatch`, Celery workers take chunks of each batch too (crowd.work.publishing).
    """
    round_publish_check(topic=topic, kind=kind)
    batches = _topic_batches(topic=topic, kind=kind)
    if not batches:
        return round_out(topic=topic, kind=kind)
    return [batch_publish(batch_id=batch.pk, live=live, dispatch=dispatch) for batch in batches]


def round_out(*, topic: Topic, kind: str) -> list[PublishResult]:
    """The topic's batches of `kind` that are out, as the results of a run that found them so."""
    out = topic.batches.filter(kind=kind).exclude(status__in=(Batch.Status.CREATED, Batch.Status.EXPIRED))
    return [
        PublishResult(batch_id=batch_id, published=0, already=hits, cost=ledger.ZERO)
        for batch_id, hits in out.order_by("number").annotate(hits=Count("tasks__hit")).values_list("pk", "hits")
    ]


def round_wording(*, topic: Topic, kind: str, results: list[PublishResult]) -> str:
    """What publishing a topic's round did, in its channel's words, for the command and the
    dashboard: what this run put out and committed, or what was out already."""
    campaign = topic.campaign
    policy = channel_policy(campaign.channel)
    where = f"{policy.label} ({policy.environment_label(campaign.environment)})"
    round_name = f"{Batch.Kind(kind).label} round of topic {topic.key}"
    published = sum(result.published for result in results)
    already = sum(result.already for result in results)
    if published:
        cost = sum((result.cost for result in results), ledger.ZERO)
        before = f"; {policy.tasks_wording(already)} were out before" if already else ""
        done = f"{round_name}: published {policy.tasks_wording(published)} to {where}, {policy.money_wording(cost)} committed{before}."
        return f"{done} {policy.after_publish}".strip()
    if already:
        return f"{round_name} already published: {policy.tasks_wording(already)} on {where}; nothing new to publish."
    return f"{round_name}: nothing to publish."
