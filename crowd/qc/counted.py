"""The counted labels of a campaign as quality control reads them: Likert labels, traps,
comparison votes and times on task, keyed by worker and proposition ids, in a fixed number
of queries. Counted means what aggregation counts (`crowd.models.counted`): answers their
channel confirmed and nobody rejected.

Read in two parts, because once a campaign's Likert round is over its Likert labels stop
changing while its votes keep coming: `counted_likert` (the labels, the traps, the Likert
HITs' times) and `counted_votes` (the votes, the orderings, the comparison HITs' times).
`likert_sums` tells, without reading the labels, whether the first part changed, and
`topic_vote_sums`, without reading the votes, whose topics' votes changed."""

from collections import Counter
from dataclasses import dataclass

from django.db.models import BigIntegerField, Case, Count, ExpressionWrapper, F, Max, Sum, When

from annotation.models import Batch, Proposition
from crowd.models import Assignment, Comparison, LikertLabel, counted

Label = tuple[int, int, int]
Time = tuple[int, str, float]
MIX = 65_521  # a prime below 2¹⁶: keeps the watermark's weighted sums within 64 bits


@dataclass(frozen=True)
class CountedLikert:
    """The counted Likert labels of a campaign and what they rest on."""

    ratings: list[Label]  # (worker, proposition, score) on non-trap propositions
    trap_labels: list[Label]  # the same on traps
    traps: dict[int, str]  # trap proposition -> "obvious" | "subtle"
    topic_of: dict[int, int]  # proposition -> topic, for the propositions labelled
    times: list[Time]  # (worker, "likert", seconds) per counted Likert HIT with a time


@dataclass(frozen=True)
class CountedVotes:
    """The counted comparison votes of a campaign."""

    votes: list[tuple[int, int, int, int]]  # (worker, winner, loser, winner), untouched left out
    votes_per_worker: Counter  # every counted vote, untouched ones included
    orderings: Counter  # worker -> orderings whose votes are in `votes`
    untouched_orderings: Counter  # worker -> orderings submitted untouched (their votes left out)
    topic_of: dict[int, int]  # proposition -> topic, for the propositions compared
    topic_votes: Counter  # (topic, worker) -> every counted vote, untouched ones included
    times: list[Time]  # (worker, "comparison", seconds) per counted comparison HIT with a time


@dataclass(frozen=True)
class CountedLabels:
    """The counted labels of a campaign, keyed by worker and proposition ids: both parts."""

    likert_part: CountedLikert
    votes_part: CountedVotes

    ratings = property(lambda self: self.likert_part.ratings)
    trap_labels = property(lambda self: self.likert_part.trap_labels)
    traps = property(lambda self: self.likert_part.traps)
    votes = property(lambda self: self.votes_part.votes)
    votes_per_worker = property(lambda self: self.votes_part.votes_per_worker)
    orderings = property(lambda self: self.votes_part.orderings)
    untouched_orderings = property(lambda self: self.votes_part.untouched_orderings)
    topic_votes = property(lambda self: self.votes_part.topic_votes)

    @property
    def topic_of(self) -> dict[int, int]:
        return self.likert_part.topic_of | self.votes_part.topic_of

    @property
    def times(self) -> list[Time]:
        return self.likert_part.times + self.votes_part.times

    @property
    def likert(self) -> list[Label]:
        return self.ratings + self.trap_labels


def counted_labels(*, campaign_id: int) -> CountedLabels:
    """The counted labels of the campaign: five queries, whatever the number of topics,
    workers or labels."""
    return CountedLabels(counted_likert(campaign_id=campaign_id), counted_votes(campaign_id=campaign_id))


def campaign_traps(*, campaign_id: int) -> dict[int, str]:
    """The campaign's trap propositions and their kinds."""
    return dict(
        Proposition.objects.filter(topic__campaign_id=campaign_id)
        .exclude(trap_kind=Proposition.TrapKind.NONE)
        .values_list("id", "trap_kind")
    )


def counted_likert(*, campaign_id: int, traps: dict[int, str] | None = None) -> CountedLikert:
    """The counted Likert labels of the campaign, split into ratings and trap labels: three
    queries (two when the caller read `traps` already)."""
    if traps is None:
        traps = campaign_traps(campaign_id=campaign_id)
    likert = (
        LikertLabel.objects.filter(proposition__topic__campaign_id=campaign_id)
        .filter(counted("assignment__"))
        .values_list("worker_id", "proposition_id", "score", "proposition__topic_id")
    )
    topic_of: dict[int, int] = {}
    ratings: list[Label] = []
    trap_labels: list[Label] = []
    for worker, proposition, score, topic in likert:
        topic_of[proposition] = topic
        (trap_labels if proposition in traps else ratings).append((worker, proposition, score))
    times = hit_times(campaign_id=campaign_id, kind=Batch.Kind.LIKERT)
    return CountedLikert(ratings, trap_labels, traps, topic_of, times)


def counted_votes(*, campaign_id: int) -> CountedVotes:
    """The counted votes and orderings of the campaign: two queries."""
    rows = _vote_rows(campaign_id=campaign_id)
    return _votes_collect(rows, hit_times(campaign_id=campaign_id, kind=Batch.Kind.COMPARISON))


def counted_votes_by_topic(*, campaign_id: int, topic_ids: list[int]) -> dict[int, CountedVotes]:
    """The counted votes and orderings of each of these topics of the campaign, in one query
    (a topic without one is absent); without times (`hit_times` reads the campaign's)."""
    if not topic_ids:
        return {}
    by_topic: dict[int, list[tuple]] = {}
    for row in _vote_rows(campaign_id=campaign_id).filter(winner__topic_id__in=topic_ids):
        by_topic.setdefault(row[-1], []).append(row)
    return {topic: _votes_collect(rows, []) for topic, rows in by_topic.items()}


def votes_merged(parts: list[CountedVotes], times: list[Time]) -> CountedVotes:
    """Topics' counted votes (`counted_votes_by_topic`) as one campaign's, with its times."""
    merged = CountedVotes([], Counter(), Counter(), Counter(), {}, Counter(), times)
    for part in parts:
        merged.votes.extend(part.votes)
        for mine, theirs in (
            (merged.votes_per_worker, part.votes_per_worker),
            (merged.orderings, part.orderings),
            (merged.untouched_orderings, part.untouched_orderings),
            (merged.topic_votes, part.topic_votes),
        ):
            mine.update(theirs)
        merged.topic_of.update(part.topic_of)
    return merged


def _counted_comparisons(*, campaign_id: int):
    return Comparison.objects.filter(winner__topic__campaign_id=campaign_id).filter(counted("assignment__"))


def _vote_rows(*, campaign_id: int):
    return _counted_comparisons(campaign_id=campaign_id).values_list(
        "worker_id", "winner_id", "loser_id", "assignment_id", "assignment__untouched", "winner__topic_id"
    )


def _votes_collect(rows, times: list[Time]) -> CountedVotes:
    votes: list[tuple[int, int, int, int]] = []
    per_worker: Counter[int] = Counter()
    topic_votes: Counter[tuple[int, int]] = Counter()
    topic_of: dict[int, int] = {}
    orderings: dict[int, bool] = {}  # assignment -> untouched
    ordering_worker: dict[int, int] = {}
    for worker, winner, loser, assignment, untouched, topic in rows:
        per_worker[worker] += 1
        topic_votes[topic, worker] += 1
        orderings[assignment], ordering_worker[assignment] = untouched, worker
        topic_of[winner] = topic_of[loser] = topic
        if not untouched:
            votes.append((worker, winner, loser, winner))
    return CountedVotes(
        votes,
        per_worker,
        Counter(ordering_worker[a] for a, untouched in orderings.items() if not untouched),
        Counter(ordering_worker[a] for a, untouched in orderings.items() if untouched),
        topic_of,
        topic_votes,
        times,
    )


def topic_vote_sums(*, campaign_id: int) -> dict[int, tuple[int, ...]]:
    """What `counted_votes_by_topic` would read of each topic, summed up by the database in one
    aggregate query (a row a topic with counted votes): their number, sum of ids, sums
    weighted by id of worker, winner, loser and assignment, and the sum of the ids of votes
    from untouched orderings. A vote that arrives, stops counting or is edited, or whose
    ordering's untouched flag changes, changes its topic's (crowd.qc.vote_part)."""
    mixed = F("id") % MIX
    rows = (
        _counted_comparisons(campaign_id=campaign_id)
        .order_by()
        .values("winner__topic_id")
        .annotate(
            n=Count("id"),
            ids=Sum("id"),
            workers=Sum(_big(mixed * F("worker_id"))),
            winners=Sum(_big(mixed * F("winner_id"))),
            losers=Sum(_big(mixed * F("loser_id"))),
            assignments=Sum(_big(mixed * F("assignment_id"))),
            untouched=Sum(Case(When(assignment__untouched=True, then=F("id")), default=0)),
        )
        .values_list("winner__topic_id", "n", "ids", "workers", "winners", "losers", "assignments", "untouched")
    )
    return {topic: tuple(int(value or 0) for value in sums) for topic, *sums in rows}


def hit_times(*, campaign_id: int, kind: str) -> list[Time]:
    """(worker, task kind, seconds on the task) of each counted assignment of the campaign's
    tasks of `kind` whose time on task was recorded (crowd.hit_page.store.time_on_task)."""
    return [
        (worker, task_kind, milliseconds / 1000)
        for worker, task_kind, milliseconds in Assignment.objects.counted()
        .filter(task__batch__topic__campaign_id=campaign_id, task__kind=kind, time_on_task_ms__isnull=False)
        .values_list("worker_id", "task__kind", "time_on_task_ms")
    ]


def likert_sums(*, campaign_id: int) -> tuple[int, ...]:
    """What `counted_likert` would read, summed up by the database in two aggregate queries
    that return one row each: for the counted Likert labels their number, largest id, sum
    of ids and sums weighted by id of score, worker and proposition; for the counted Likert
    assignments their number, sum of ids, of workers and of times. A label that arrives,
    stops counting (rejected, disowned, deleted) or is edited changes it; with the traps
    and the settings it is the key of everything the Likert part of quality control
    computes (crowd.qc.likert_part)."""
    mixed = F("id") % MIX
    labels = (
        LikertLabel.objects.filter(proposition__topic__campaign_id=campaign_id)
        .filter(counted("assignment__"))
        .aggregate(
            n=Count("id"),
            last=Max("id"),
            ids=Sum("id"),
            scores=Sum(_big(F("id") * F("score"))),
            workers=Sum(_big(mixed * F("worker_id"))),
            propositions=Sum(_big(mixed * F("proposition_id"))),
        )
    )
    hits = (
        Assignment.objects.counted()
        .filter(task__batch__topic__campaign_id=campaign_id, task__kind=Batch.Kind.LIKERT)
        .aggregate(
            n=Count("id"),
            ids=Sum("id"),
            workers=Sum("worker_id"),
            timed=Count("time_on_task_ms"),
            ms=Sum("time_on_task_ms"),
        )
    )
    return tuple(int(value or 0) for value in (*labels.values(), *hits.values()))


def _big(expression) -> ExpressionWrapper:
    return ExpressionWrapper(expression, output_field=BigIntegerField())
