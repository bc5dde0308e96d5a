"""The published campaign the simulated workers answer, and what the database holds after.

Needs Django set up on the benchmark's own, empty database (run.py).
"""

from collections import Counter
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count

from annotation.models import Batch, Campaign, Proposition, Task, TaskItem, Topic
from benchmarks.load.audit import STATEMENTS_PER_TASK, Stored
from crowd.models import HIT, Assignment, LikertLabel, Worker


@dataclass(frozen=True)
class TaskPlan:
    uuid: str
    hit_id: str


def campaign_create(*, tasks: int, assignments_needed: int) -> list[TaskPlan]:
    """One published Likert batch of `tasks` tasks, each with its HIT taking `assignments_needed`."""
    campaign = Campaign.objects.create(
        name="Load benchmark",
        slug="load-bench",
        status=Campaign.Status.ACTIVE,
        environment=Campaign.Environment.SANDBOX,
        assignments_per_hit=assignments_needed,
    )
    topic = Topic.objects.create(
        campaign=campaign, key="loans", description="student loans without credit history", state=Topic.State.LIKERT
    )
    batch = Batch.objects.create(topic=topic, kind=Batch.Kind.LIKERT, number=1, status=Batch.Status.PUBLISHED)
    texts = [
        f"Lender {n} offers loans to students with no credit record, variant {n}"
        for n in range(tasks * STATEMENTS_PER_TASK)
    ]
    propositions = Proposition.objects.bulk_create(
        Proposition(topic=topic, subject=text, normalized=text.lower()) for text in texts
    )
    task_rows = Task.objects.bulk_create(
        Task(batch=batch, kind=Batch.Kind.LIKERT, position=n, assignments_needed=assignments_needed)
        for n in range(tasks)
    )
    TaskItem.objects.bulk_create(
        TaskItem(task=task, proposition=propositions[n * STATEMENTS_PER_TASK + position], position=position)
        for n, task in enumerate(task_rows)
        for position in range(STATEMENTS_PER_TASK)
    )
    hits = HIT.objects.bulk_create(
        HIT(
            task=task,
            environment=Campaign.Environment.SANDBOX,
            hit_id=f"3LOADBENCHHIT{n:017d}",
            max_assignments=assignments_needed,
            reward=Decimal("0.06"),
        )
        for n, task in enumerate(task_rows)
    )
    return [TaskPlan(str(task.uuid), hit.hit_id) for task, hit in zip(task_rows, hits, strict=True)]


def stored_read() -> Stored:
    """Every answer in the database (the benchmark's own: nothing else writes there)."""
    assignments: dict[str, tuple[str, str, dict[int, int]]] = {}
    rows = Assignment.objects.values_list("id", "assignment_id", "worker__external_id", "task__uuid")
    by_pk = {}
    for pk, assignment_id, worker_id, task_uuid in rows:
        by_pk[pk] = assignments[assignment_id] = (worker_id, str(task_uuid), {})
    labels = LikertLabel.objects.values_list("assignment_id", "proposition_id", "score")
    for assignment_pk, proposition_id, score in labels:
        by_pk[assignment_pk][2][proposition_id] = score
    per_assignment = Counter(Assignment.objects.annotate(n=Count("likert_labels")).values_list("n", flat=True))
    return Stored(
        assignments=assignments,
        rows=len(by_pk),
        labels=LikertLabel.objects.count(),
        workers=Worker.objects.count(),
        labels_per_assignment=per_assignment,
    )
