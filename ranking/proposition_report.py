"""What the page of one proposition shows: the proposition, its place in the ranking, every
Likert label it got and every ordering it was part of, each with its worker and whether it
counts — and if not, why.

An answer counts by the one rule (`crowd.models.counted`); a counted answer still stays out
of the means and refits when quality control excludes its worker (`WorkerQuality.excluded`,
overrides first). The page reads a fixed number of queries however many labels and votes the
proposition has: the labels, the votes, the other propositions of those votes and their
workers' quality rows are each read in one query.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import BooleanField, ExpressionWrapper, Q

from annotation.models import Proposition, Topic
from annotation.text import proposition_text
from crowd.models import Assignment, Comparison, LikertLabel, Worker, WorkerQuality, counted
from ranking.export import Tie, ranked_with_ties, ranking_row

COUNTED = "counted"
WHY_NOT_COUNTED = {
    "pending": "pending: stored by our page, not yet confirmed by its channel",
    "unverified": "unverified: its channel never confirmed it, so it never counts",
    "rejected": "rejected",
    "excluded": "excluded worker: counted, but quality control leaves this worker out",
}


@dataclass(frozen=True)
class Standing:
    """Whether one answer counts, and why not."""

    status: str  # counted | pending | unverified | rejected | excluded
    reason: str  # the rejection's or the exclusion's own words, when there are any

    @property
    def counts(self) -> bool:
        return self.status == COUNTED

    @property
    def label(self) -> str:
        return "counted" if self.counts else WHY_NOT_COUNTED[self.status]


@dataclass(frozen=True)
class LikertLine:
    worker: Worker
    assignment: Assignment
    score: int
    standing: Standing


@dataclass(frozen=True)
class Other:
    """Another proposition of an ordering."""

    id: int
    text: str
    mu: float | None


@dataclass(frozen=True)
class OrderingLine:
    """One worker's ordering, seen from this proposition: who it was placed below and above."""

    worker: Worker
    assignment: Assignment
    above: list[Other]  # placed above this proposition: each won against it
    below: list[Other]  # placed below: this proposition won against each
    standing: Standing

    @property
    def place(self) -> int:
        return len(self.above) + 1

    @property
    def size(self) -> int:
        return len(self.above) + len(self.below) + 1


@dataclass(frozen=True)
class PropositionReport:
    proposition: Proposition
    text: str
    row: dict | None  # its line of the ranking export (rank, tie, μ, σ, Likert mean); None for a trap
    topic_size: int  # propositions ranked in the topic
    likert: list[LikertLine]
    orderings: list[OrderingLine]

    @property
    def likert_counted(self) -> int:
        return sum(line.standing.counts for line in self.likert)

    @property
    def votes_counted(self) -> int:
        return sum(line.size - 1 for line in self.orderings if line.standing.counts)

    @property
    def wins_counted(self) -> int:
        return sum(len(line.below) for line in self.orderings if line.standing.counts)


def proposition_report(*, topic: Topic, proposition_id: int) -> PropositionReport | None:
    """The report of the topic's proposition `proposition_id`, None when the topic has none."""
    proposition = Proposition.objects.filter(topic=topic, pk=proposition_id).select_related("score").first()
    if proposition is None:
        return None
    rank, tie, size = _place(topic, proposition)
    row = None if rank is None else ranking_row(topic=topic, rank=rank, proposition=proposition, tie=tie)
    labels = list(
        LikertLabel.objects.filter(proposition=proposition)
        .annotate(counted=_counted())
        .select_related("worker", "assignment")
        .order_by("assignment__submitted_at", "assignment_id", "id")
    )
    votes = list(
        Comparison.objects.filter(Q(winner=proposition) | Q(loser=proposition))
        .annotate(counted=_counted())
        .select_related("worker", "assignment")
        .order_by("assignment__submitted_at", "assignment_id", "id")
    )
    workers = {label.worker_id for label in labels} | {vote.worker_id for vote in votes}
    qualities = {
        quality.worker_id: quality
        for quality in WorkerQuality.objects.filter(campaign_id=topic.campaign_id, worker_id__in=workers)
    }
    others = _others(votes, proposition.pk)
    return PropositionReport(
        proposition=proposition,
        text=proposition_text(proposition.subject, proposition.relation, proposition.object),
        row=row,
        topic_size=size,
        likert=[
            LikertLine(label.worker, label.assignment, label.score, _standing(label, qualities)) for label in labels
        ],
        orderings=_orderings(votes, proposition.pk, others, qualities),
    )


def _counted() -> ExpressionWrapper:
    return ExpressionWrapper(counted("assignment__"), output_field=BooleanField())


def _place(topic: Topic, proposition: Proposition) -> tuple[int | None, Tie | None, int]:
    """Its rank and tie in the ranking's one order, and how many propositions are ranked: one
    query over the topic's ranks (a window needs the whole topic to number any of it)."""
    places = list(ranked_with_ties(topic=topic).values_list("pk", "position", "tie_rank", "tie_size"))
    for pk, position, tie_rank, tie_size in places:
        if pk == proposition.pk:
            return position, Tie(tie_rank, tie_size), len(places)
    return None, None, len(places)


def _standing(row: LikertLabel | Comparison, qualities: dict[int, WorkerQuality]) -> Standing:
    """Counted, or why not: the answer's own state first, then its worker's exclusion."""
    assignment = row.assignment
    if not row.counted:  # type: ignore[union-attr]  # annotated by the queries above
        if assignment.verification == Assignment.Verification.PENDING:
            return Standing("pending", "")
        if assignment.verification == Assignment.Verification.UNVERIFIED:
            return Standing("unverified", "")
        return Standing("rejected", assignment.reject_reason)
    quality = qualities.get(row.worker_id)
    if quality is not None and quality.excluded:
        return Standing("excluded", quality.override_reason or quality.computed_reason)
    return Standing(COUNTED, "")


def _others(votes: Sequence[Comparison], own: int) -> dict[int, Other]:
    ids = {vote.loser_id if vote.winner_id == own else vote.winner_id for vote in votes}
    return {
        p.pk: Other(p.pk, proposition_text(p.subject, p.relation, p.object), _mu(p))
        for p in Proposition.objects.filter(pk__in=ids).select_related("score")
    }


def _mu(proposition: Proposition) -> float | None:
    """Its TrueSkill μ when it is in the comparison rounds, as the ranking shows it."""
    # A missing reverse one-to-one raises an AttributeError subclass, so getattr gives None.
    score = getattr(proposition, "score", None)
    return score.mu if score is not None and score.in_comparisons else None


def _orderings(
    votes: Sequence[Comparison], own: int, others: dict[int, Other], qualities: dict[int, WorkerQuality]
) -> list[OrderingLine]:
    """The votes grouped by assignment (one ordering each), in the order they were submitted;
    the others listed in the worker's order when the answer stored it."""
    grouped: dict[int, list[Comparison]] = {}
    for vote in votes:
        grouped.setdefault(vote.assignment_id, []).append(vote)
    lines = []
    for group in grouped.values():
        first = group[0]
        order = first.assignment.answer.get("order") if isinstance(first.assignment.answer, dict) else None
        where = {pid: index for index, pid in enumerate(order)} if isinstance(order, list) else {}

        def in_order(ids: list[int], where: dict = where) -> list[Other]:
            return [others[pid] for pid in sorted(ids, key=lambda pid: (where.get(pid, len(where)), pid))]

        lines.append(
            OrderingLine(
                worker=first.worker,
                assignment=first.assignment,
                above=in_order([vote.winner_id for vote in group if vote.loser_id == own]),
                below=in_order([vote.loser_id for vote in group if vote.winner_id == own]),
                standing=_standing(first, qualities),
            )
        )
    return lines
