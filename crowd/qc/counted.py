"""The counted labels of a campaign as quality control reads them: Likert labels, traps,
comparison votes and times on task, keyed by worker and proposition ids, in a fixed number
of queries. Counted means what aggregation counts (`crowd.models.counted`): answers their
channel confirmed and nobody rejected."""

from collections import Counter
from dataclasses import dataclass

from annotation.models import Proposition
from crowd.models import Assignment, Comparison, LikertLabel, counted


@dataclass(frozen=True)
class CountedLabels:
    """The counted labels of a campaign, keyed by worker and proposition ids."""

    ratings: list[tuple[int, int, int]]  # (worker, proposition, score) on non-trap propositions
    trap_labels: list[tuple[int, int, int]]  # the same on traps
    traps: dict[int, str]  # trap proposition -> "obvious" | "subtle"
    votes: list[tuple[int, int, int, int]]  # (worker, winner, loser, winner), untouched left out
    votes_per_worker: Counter  # every counted vote, untouched ones included
    orderings: Counter  # worker -> orderings whose votes are in `votes`
    untouched_orderings: Counter  # worker -> orderings submitted untouched (their votes left out)
    topic_of: dict[int, int]  # proposition -> topic, for the propositions labelled or compared
    topic_votes: Counter  # (topic, worker) -> every counted vote, untouched ones included
    times: list[tuple[int, str, float]]  # (worker, task kind, seconds) per counted HIT with a time

    @property
    def likert(self) -> list[tuple[int, int, int]]:
        return self.ratings + self.trap_labels


def counted_labels(*, campaign_id: int) -> CountedLabels:
    """The counted labels of the campaign: four queries, whatever the number of topics,
    workers or labels."""
    is_counted = counted("assignment__")
    likert = (
        LikertLabel.objects.filter(proposition__topic__campaign_id=campaign_id)
        .filter(is_counted)
        .values_list("worker_id", "proposition_id", "score", "proposition__topic_id")
    )
    traps = dict(
        Proposition.objects.filter(topic__campaign_id=campaign_id)
        .exclude(trap_kind=Proposition.TrapKind.NONE)
        .values_list("id", "trap_kind")
    )
    topic_of: dict[int, int] = {}
    ratings: list[tuple[int, int, int]] = []
    trap_labels: list[tuple[int, int, int]] = []
    for worker, proposition, score, topic in likert:
        topic_of[proposition] = topic
        (trap_labels if proposition in traps else ratings).append((worker, proposition, score))
    votes: list[tuple[int, int, int, int]] = []
    per_worker: Counter[int] = Counter()
    topic_votes: Counter[tuple[int, int]] = Counter()
    orderings: dict[int, bool] = {}  # assignment -> untouched
    ordering_worker: dict[int, int] = {}
    rows = (
        Comparison.objects.filter(winner__topic__campaign_id=campaign_id)
        .filter(is_counted)
        .values_list("worker_id", "winner_id", "loser_id", "assignment_id", "assignment__untouched", "winner__topic_id")
    )
    for worker, winner, loser, assignment, untouched, topic in rows:
        per_worker[worker] += 1
        topic_votes[topic, worker] += 1
        orderings[assignment], ordering_worker[assignment] = untouched, worker
        topic_of[winner] = topic_of[loser] = topic
        if not untouched:
            votes.append((worker, winner, loser, winner))
    return CountedLabels(
        ratings,
        trap_labels,
        traps,
        votes,
        per_worker,
        Counter(ordering_worker[a] for a, untouched in orderings.items() if not untouched),
        Counter(ordering_worker[a] for a, untouched in orderings.items() if untouched),
        topic_of,
        topic_votes,
        hit_times(campaign_id=campaign_id),
    )


def hit_times(*, campaign_id: int) -> list[tuple[int, str, float]]:
    """(worker, task kind, seconds on the task) of each counted assignment of the campaign
    whose time on task was recorded (crowd.answers.store.time_on_task)."""
    return [
        (worker, kind, milliseconds / 1000)
        for worker, kind, milliseconds in Assignment.objects.counted()
        .filter(task__batch__topic__campaign_id=campaign_id, time_on_task_ms__isnull=False)
        .values_list("worker_id", "task__kind", "time_on_task_ms")
    ]
