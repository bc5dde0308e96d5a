"""Where every topic of a campaign stands, for the dashboard: a few grouped queries per
page, however many topics, batches or HITs there are; the campaign page asks for a page of
topics at a time, so what it reads does not grow with the campaign either.

Counts follow the one rule of what counts (`crowd.models.counted`): an answer is
submitted once its channel confirmed it, and its labels and votes count unless it was
rejected. What our page stored but the channel has not confirmed yet is shown on its own,
as pending; an answer the channel never confirmed (`unverified`) appears nowhere.
"""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from annotation.models import Batch, Campaign, Proposition, Task, TaskItem, Topic
from crowd.models import HIT, Assignment, Comparison, LikertLabel, confirmed, counted
from crowd.work import ledger

PENDING = Assignment.Verification.PENDING


@dataclass(frozen=True)
class Progress:
    done: int
    total: int

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.done / self.total)) if self.total else 0


@dataclass(frozen=True)
class OpenBatch:
    batch: Batch
    open_hits: int


@dataclass(frozen=True)
class TopicProgress:
    topic: Topic
    propositions: int  # traps not included
    traps: int
    tasks: Progress  # published / built
    submitted: Progress  # confirmed assignments / needed by the published HITs
    pending: int  # stored by our page, awaiting their channel's confirmation
    approved: Progress
    likert_labels: Progress  # / expected from the published Likert HITs
    comparison_votes: Progress  # / expected from the published comparison HITs
    current_batch: Batch | None
    open_batches: list[OpenBatch]  # batches with HITs still offered to workers


@dataclass(frozen=True)
class CampaignOverview:
    campaign: Campaign
    topics: int
    topic_states: dict[str, int]  # state label → topics
    propositions: int
    tasks: Progress
    submitted: Progress
    money: ledger.Money


def _grouped(queryset, key: str) -> dict:
    return {row.pop(key): row for row in queryset}


def campaign_progress(campaign: Campaign, *, topics: Iterable[Topic] | None = None) -> list[TopicProgress]:
    """One TopicProgress per topic of `topics` (all the campaign's, by key, when None); nine
    queries in all, grouped by topic, over those topics' rows only."""
    shown = list(campaign.topics.order_by("key") if topics is None else topics)
    ids = [topic.pk for topic in shown]
    propositions = _grouped(
        Proposition.objects.filter(topic_id__in=ids)
        .values("topic_id")
        .annotate(
            real=Count("id", filter=Q(trap_kind=Proposition.TrapKind.NONE)),
            traps=Count("id", filter=~Q(trap_kind=Proposition.TrapKind.NONE)),
        ),
        "topic_id",
    )
    tasks = _grouped(
        Task.objects.filter(batch__topic_id__in=ids)
        .values("batch__topic_id")
        .annotate(
            built=Count("id"),
            published=Count("hit"),
            needed=Sum("assignments_needed", filter=Q(hit__isnull=False)),
        ),
        "batch__topic_id",
    )
    expected = _grouped(
        # Item positions run 0..n-1 in every task, so per task they sum to C(n, 2): the
        # pairs one ordering yields. Times the assignments, that is the votes expected.
        TaskItem.objects.filter(task__batch__topic_id__in=ids, task__hit__isnull=False)
        .values("task__batch__topic_id")
        .annotate(
            labels=Sum("task__assignments_needed", filter=Q(task__kind=Batch.Kind.LIKERT)),
            votes=Sum(F("position") * F("task__assignments_needed"), filter=Q(task__kind=Batch.Kind.COMPARISON)),
        ),
        "task__batch__topic_id",
    )
    assignments = _grouped(
        Assignment.objects.filter(task__batch__topic_id__in=ids)
        .values("task__batch__topic_id")
        .annotate(
            submitted=Count("id", filter=confirmed()),
            pending=Count("id", filter=Q(verification=PENDING)),
            approved=Count("id", filter=confirmed() & Q(status=Assignment.Status.APPROVED)),
        ),
        "task__batch__topic_id",
    )
    labels = _grouped(
        LikertLabel.objects.filter(counted("assignment__"), proposition__topic_id__in=ids)
        .values("proposition__topic_id")
        .annotate(n=Count("id")),
        "proposition__topic_id",
    )
    votes = _grouped(
        Comparison.objects.filter(counted("assignment__"), winner__topic_id__in=ids)
        .values("winner__topic_id")
        .annotate(n=Count("id")),
        "winner__topic_id",
    )
    batches = defaultdict(list)
    for batch in Batch.objects.filter(topic_id__in=ids).order_by("created_at", "pk"):
        batches[batch.topic_id].append(batch)
    open_hits = _open_hits_by_batch(ids)

    result = []
    for topic in shown:
        counts = propositions.get(topic.pk, {})
        task = tasks.get(topic.pk, {})
        needed = task.get("needed") or 0
        work = assignments.get(topic.pk, {})
        wanted = expected.get(topic.pk, {})
        result.append(
            TopicProgress(
                topic=topic,
                propositions=counts.get("real", 0),
                traps=counts.get("traps", 0),
                tasks=Progress(task.get("published", 0), task.get("built", 0)),
                submitted=Progress(work.get("submitted", 0), needed),
                pending=work.get("pending", 0),
                approved=Progress(work.get("approved", 0), needed),
                likert_labels=Progress(labels.get(topic.pk, {}).get("n", 0), wanted.get("labels") or 0),
                comparison_votes=Progress(votes.get(topic.pk, {}).get("n", 0), wanted.get("votes") or 0),
                current_batch=batches[topic.pk][-1] if batches[topic.pk] else None,
                open_batches=[OpenBatch(b, open_hits[b.pk]) for b in batches[topic.pk] if open_hits.get(b.pk)],
            )
        )
    return result


def _open_hits_by_batch(topic_ids: list[int]) -> dict[int, int]:
    """HITs still offered to workers (what crowd.work.expiry.batch_expire would expire), per batch."""
    rows = (
        HIT.objects.on_offer(timezone.now())
        .filter(task__batch__topic_id__in=topic_ids)
        .values("task__batch_id")
        .annotate(n=Count("id"))
    )
    return {row["task__batch_id"]: row["n"] for row in rows}


def campaigns_overview(campaigns) -> list[CampaignOverview]:
    """A line per campaign for the campaigns list; six queries however many campaigns."""
    campaigns = list(campaigns)
    ids = [campaign.pk for campaign in campaigns]
    states: defaultdict[int, dict[str, int]] = defaultdict(dict)
    for row in Topic.objects.filter(campaign_id__in=ids).values("campaign_id", "state").annotate(n=Count("id")):
        states[row["campaign_id"]][Topic.State(row["state"]).label] = row["n"]
    propositions = dict(
        Proposition.objects.filter(topic__campaign_id__in=ids, trap_kind=Proposition.TrapKind.NONE)
        .values("topic__campaign_id")
        .annotate(n=Count("id"))
        .values_list("topic__campaign_id", "n")
    )
    tasks = _grouped(
        Task.objects.filter(batch__topic__campaign_id__in=ids)
        .values("batch__topic__campaign_id")
        .annotate(
            built=Count("id"),
            published=Count("hit"),
            needed=Sum("assignments_needed", filter=Q(hit__isnull=False)),
        ),
        "batch__topic__campaign_id",
    )
    submitted = dict(
        Assignment.objects.confirmed()
        .filter(task__batch__topic__campaign_id__in=ids)
        .values("task__batch__topic__campaign_id")
        .annotate(n=Count("id"))
        .values_list("task__batch__topic__campaign_id", "n")
    )
    money = ledger.campaigns_money(campaigns=campaigns)
    overviews = []
    for campaign in campaigns:
        task = tasks.get(campaign.pk, {})
        overviews.append(
            CampaignOverview(
                campaign=campaign,
                topics=sum(states[campaign.pk].values()),
                topic_states=states[campaign.pk],
                propositions=propositions.get(campaign.pk, 0),
                tasks=Progress(task.get("published", 0), task.get("built", 0)),
                submitted=Progress(submitted.get(campaign.pk, 0), task.get("needed") or 0),
                money=money[campaign.pk],
            )
        )
    return overviews
