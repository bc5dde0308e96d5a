"""Where every topic of a campaign stands, for the dashboard: a few grouped queries per
page, however many topics, batches or HITs there are; the campaign page asks for a page of
topics at a time, so what it reads does not grow with the campaign either.

Counts follow the one rule of what counts (`crowd.models.counted`): an answer is
submitted once its channel confirmed it, and its labels and votes count unless it was
rejected. What our page stored but the channel has not confirmed yet is shown on its own,
as pending; an answer the channel never confirmed (`unverified`) appears nowhere.

Every figure is reached from the page's topics through their batches and tasks (batch → task
→ assignment → label, each by index), as the pipeline reads a topic's votes
(`ranking.pipeline._votes`): asked by the proposition's topic, the planner joins every label
of the campaign. The labels and votes counted and expected, the bulk of the rows, are kept in
the cache under a fingerprint of the rows they were counted over (`_kept_or_counted`), so a
page counts them again only for the topics where those rows changed since it last looked.
"""

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from django.core.cache import cache
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from annotation.models import Batch, Campaign, Proposition, Task, TaskItem, Topic
from annotation.suitability.selectors import REMOVED
from crowd.models import HIT, Assignment, TaskHold, confirmed, counted
from crowd.sessions.holds import participant_name
from crowd.work import ledger

PENDING = Assignment.Verification.PENDING
KINDS = (Batch.Kind.LIKERT, Batch.Kind.COMPARISON)
LABELS = {Batch.Kind.LIKERT: "likert_labels", Batch.Kind.COMPARISON: "comparisons"}  # what an answer holds
KEPT_SECONDS = 600  # how long a figure stays in the cache unread; a change is counted at once (see below)


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
class HeldTask:
    """A task of the topic in a participant's hands now (a session's hold)."""

    participant: str
    since: datetime
    until: datetime


@dataclass(frozen=True)
class Waiting:
    """What the topic waits for before it can step (issue 25, point 5): answers its published
    tasks still need — held by participants now, or not yet taken — or the loop's next pass."""

    answers: int = 0  # answers the topic's published, unfinished batches still need
    held: list[HeldTask] = field(default_factory=list)  # tasks held now, oldest first
    loop: str = ""  # what the loop's next pass will do, when nothing else is awaited

    @property
    def not_taken(self) -> int:
        return max(0, self.answers - len(self.held))


@dataclass(frozen=True)
class TopicProgress:
    topic: Topic
    propositions: int  # traps not included, nor those the suitability filter removed
    subtle_traps: int  # imported with the propositions (a traps file)
    obvious_traps: int  # the campaign's obvious sentences, placed in the topic when its Likert round is built
    tasks: Progress  # published / built
    submitted: Progress  # confirmed assignments / needed by the published HITs
    pending: int  # stored by our page, awaiting their channel's confirmation
    approved: Progress
    likert_labels: Progress  # / expected from the published Likert HITs
    comparison_votes: Progress  # / expected from the published comparison HITs
    current_batch: Batch | None
    open_batches: list[OpenBatch]  # batches with HITs still offered to workers
    removed: int = 0  # removed by the suitability filter: kept, never asked (annotation.suitability)
    waiting: Waiting | None = None  # None: it waits for nothing the page can name (done, or not published)


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
    """One TopicProgress per topic of `topics` (all the campaign's, by key, when None); at
    most nine queries in all, grouped by topic, over those topics' rows only."""
    shown = list(campaign.topics.order_by("key") if topics is None else topics)
    figures = _topics_figures([topic.pk for topic in shown])
    paused = campaign.status == Campaign.Status.PAUSED
    return [_topic_progress(topic, figures, paused=paused) for topic in shown]


@dataclass(frozen=True)
class _Figures:
    """The page's topics' rows, counted by topic (what `_topics_figures` reads)."""

    propositions: dict[int, dict]  # topic → real, subtle, obvious
    tasks: dict[int, dict]  # topic → built, published, needed (by the published), ids
    expected: dict[int, tuple[int, int]]  # topic → (Likert labels, comparison votes) the published tasks expect
    assignments: dict[int, dict]  # topic → submitted, pending, approved, counted and ids per kind
    labels: dict[tuple[int, str], int]  # (topic, kind) → labels or votes of the counted answers
    batches: dict[int, list[Batch]]  # topic → its batches, oldest first
    open_hits: dict[int, int]  # batch → HITs still on offer
    held: dict[int, list[HeldTask]]  # topic → tasks of its published batches held now


def _topics_figures(ids: list[int]) -> _Figures:
    """The queries: every figure of these topics, grouped by topic."""
    tasks = _tasks_counted(ids)
    assignments = _assignments_counted(ids)
    expected = _kept_or_counted(
        {
            topic_id: _key("expected", topic_id, row["published"], row["ids"], row["needed"])
            for topic_id, row in tasks.items()
            if row["published"]
        },
        _expected_count,
    )
    labels = _kept_or_counted(
        {
            (topic_id, kind): _key("labels", topic_id, kind, row[f"counted_{kind}"], row[f"ids_{kind}"])
            for topic_id, row in assignments.items()
            for kind in KINDS
            if row[f"counted_{kind}"]
        },
        _labels_count,
    )
    batches = defaultdict(list)
    for batch in Batch.objects.filter(topic_id__in=ids).order_by("created_at", "pk"):
        batches[batch.topic_id].append(batch)
    return _Figures(
        propositions=_propositions_counted(ids),
        tasks=tasks,
        expected=expected,
        assignments=assignments,
        labels=labels,
        batches=batches,
        open_hits=_open_hits_by_batch(ids),
        held=_held_by_topic(ids),
    )


def _held_by_topic(ids: list[int]) -> dict[int, list[HeldTask]]:
    """Tasks of the topics' published batches in a session's hands now, oldest hold first."""
    held = defaultdict(list)
    holds = (
        TaskHold.objects.filter(
            task__batch__topic_id__in=ids,
            task__batch__status=Batch.Status.PUBLISHED,
            submitted_at__isnull=True,
            released_at__isnull=True,
            expires_at__gt=timezone.now(),
        )
        .select_related("session__worker", "session__link", "task__batch")
        .order_by("held_at", "pk")
    )
    for hold in holds:
        name = participant_name(hold.session.link, hold.session.worker.external_id)
        held[hold.task.batch.topic_id].append(HeldTask(name, hold.held_at, hold.expires_at))
    return held


def _propositions_counted(ids: list[int]) -> dict[int, dict]:
    return _grouped(
        Proposition.objects.filter(topic_id__in=ids)
        .values("topic_id")
        .annotate(
            real=Count("id", filter=Q(trap_kind=Proposition.TrapKind.NONE) & ~REMOVED),
            removed=Count("id", filter=Q(trap_kind=Proposition.TrapKind.NONE) & REMOVED),
            subtle=Count("id", filter=Q(trap_kind=Proposition.TrapKind.SUBTLE)),
            obvious=Count("id", filter=Q(trap_kind=Proposition.TrapKind.OBVIOUS)),
        ),
        "topic_id",
    )


def _tasks_counted(ids: list[int]) -> dict[int, dict]:
    published = Q(hit__isnull=False)
    return _grouped(
        Task.objects.filter(batch__topic_id__in=ids)
        .values("batch__topic_id")
        .annotate(
            built=Count("id"),
            published=Count("hit"),
            needed=Sum("assignments_needed", filter=published),
            needed_open=Sum("assignments_needed", filter=published & Q(batch__status=Batch.Status.PUBLISHED)),
            ids=Sum("id", filter=published),
        ),
        "batch__topic_id",
    )


def _assignments_counted(ids: list[int]) -> dict[int, dict]:
    return _grouped(
        Assignment.objects.filter(task__batch__topic_id__in=ids)
        .values("task__batch__topic_id")
        .annotate(
            submitted=Count("id", filter=confirmed()),
            submitted_open=Count("id", filter=confirmed() & Q(task__batch__status=Batch.Status.PUBLISHED)),
            pending=Count("id", filter=Q(verification=PENDING)),
            approved=Count("id", filter=confirmed() & Q(status=Assignment.Status.APPROVED)),
            **{
                f"{name}_{kind}": aggregate("id", filter=counted() & Q(task__kind=kind))
                for kind in KINDS
                for name, aggregate in (("counted", Count), ("ids", Sum))
            },
        ),
        "task__batch__topic_id",
    )


def _topic_progress(topic: Topic, figures: _Figures, *, paused: bool = False) -> TopicProgress:
    """The assembly: one topic's progress from the page's figures (no query)."""
    counts = figures.propositions.get(topic.pk, {})
    task = figures.tasks.get(topic.pk, {})
    needed = task.get("needed") or 0
    work = figures.assignments.get(topic.pk, {})
    wanted = figures.expected.get(topic.pk, (0, 0))
    batches = figures.batches.get(topic.pk, [])
    return TopicProgress(
        topic=topic,
        propositions=counts.get("real", 0),
        subtle_traps=counts.get("subtle", 0),
        obvious_traps=counts.get("obvious", 0),
        tasks=Progress(task.get("published", 0), task.get("built", 0)),
        submitted=Progress(work.get("submitted", 0), needed),
        pending=work.get("pending", 0),
        removed=counts.get("removed", 0),
        approved=Progress(work.get("approved", 0), needed),
        likert_labels=Progress(figures.labels.get((topic.pk, Batch.Kind.LIKERT), 0), wanted[0]),
        comparison_votes=Progress(figures.labels.get((topic.pk, Batch.Kind.COMPARISON), 0), wanted[1]),
        current_batch=batches[-1] if batches else None,
        open_batches=[OpenBatch(b, figures.open_hits[b.pk]) for b in batches if figures.open_hits.get(b.pk)],
        waiting=_waiting(topic, batches[-1] if batches else None, task, work, figures.held.get(topic.pk, []), paused),
    )


def _waiting(
    topic: Topic, batch: Batch | None, task: dict, work: dict, held: list[HeldTask], paused: bool
) -> Waiting | None:
    """What the topic waits for, from the page's figures (no query). A batch held back by the
    budget cap says so on its own (`Batch.held_reason`)."""
    if batch is None or topic.state in (Topic.State.IMPORTING, Topic.State.DONE) or batch.held_reason:
        return None
    missing = max(0, (task.get("needed_open") or 0) - work.get("submitted_open", 0))
    if missing or held:
        return Waiting(answers=max(missing, len(held)), held=held)
    if paused:
        return Waiting(loop="run again once the campaign is resumed")
    if batch.status == Batch.Status.CREATED:
        return Waiting(loop=f"publish {batch.get_kind_display()} batch #{batch.number}")
    return Waiting(loop=f"step the topic on from {batch.get_kind_display()} batch #{batch.number}")


# ---- Figures kept in the cache -----------------------------------------------------------------
#
# The labels and votes of a topic's counted answers, and those its published tasks expect, are
# the bulk of the rows a page would read, and they change only with a set of rows the page reads
# anyway: the counted answers of each kind (a label or vote is written once, with its
# assignment: crowd.hit_page.store), the published tasks (a task's items are written with it and a
# HIT is never taken back). Each figure is kept under a fingerprint of the set it was counted
# over — how many rows, the sum of their ids — as the counting query itself saw it. A page whose
# set changed since (an answer confirmed or rejected, a batch published) misses it and counts
# again, at once; an answer counted between two queries of one page only makes the next page
# count once more. Only another set of as many rows whose ids add up the same (some answers
# confirmed and as many rejected between two looks) would be taken for it, for at most
# KEPT_SECONDS.


def _key(*parts: object) -> str:
    return "progress:" + ":".join(str(part) for part in parts)


def _kept_or_counted(wanted: dict, count: Callable[[list], Iterable[tuple]]) -> dict:
    """{what: figure} for the keys of `wanted` ({what: key}): kept ones from the cache, the
    rest from `count(missing)`, which yields (what, key of the set it counted over, figure)."""
    kept = cache.get_many(wanted.values())
    figures = {what: kept[key] for what, key in wanted.items() if key in kept}
    missing = [what for what, key in wanted.items() if key not in kept]
    if missing:
        fresh = {}
        for what, key, figure in count(missing):
            figures[what] = fresh[key] = figure
        cache.set_many(fresh, KEPT_SECONDS)
    return figures


def _expected_count(topic_ids: list[int]) -> Iterator[tuple[int, str, tuple[int, int]]]:
    """(Likert labels, comparison votes) the topics' published tasks expect."""
    rows = (
        # Item positions run 0..n-1 in every task, so per task they sum to C(n, 2): the
        # pairs one ordering yields. Times the assignments, that is the votes expected.
        TaskItem.objects.filter(task__batch__topic_id__in=topic_ids, task__hit__isnull=False)
        .values("task__batch__topic_id")
        .annotate(
            labels=Sum("task__assignments_needed", filter=Q(task__kind=Batch.Kind.LIKERT)),
            votes=Sum(F("position") * F("task__assignments_needed"), filter=Q(task__kind=Batch.Kind.COMPARISON)),
            tasks=Count("task_id", distinct=True),
            ids=Sum("task_id", distinct=True),
            needed=Sum("task__assignments_needed", filter=Q(position=0)),
        )
    )
    for row in rows:
        topic_id = row["task__batch__topic_id"]
        key = _key("expected", topic_id, row["tasks"], row["ids"], row["needed"])
        yield topic_id, key, (row["labels"] or 0, row["votes"] or 0)


def _labels_count(pairs: list[tuple[int, str]]) -> Iterator[tuple[tuple[int, str], str, int]]:
    """The Likert labels or comparison votes of each (topic, kind)'s counted answers, one
    query per kind, reached through the topics' tasks."""
    for kind in KINDS:
        topic_ids = [topic_id for topic_id, of in pairs if of == kind]
        if not topic_ids:
            continue
        rows = (
            Assignment.objects.filter(counted(), task__kind=kind, task__batch__topic_id__in=topic_ids)
            .values("task__batch__topic_id")
            .annotate(n=Count(LABELS[kind]), answers=Count("id", distinct=True), ids=Sum("id", distinct=True))
        )
        for row in rows:
            topic_id = row["task__batch__topic_id"]
            yield (topic_id, kind), _key("labels", topic_id, kind, row["answers"], row["ids"]), row["n"]


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
