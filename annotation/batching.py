"""The content of HITs: Likert tasks for a topic, comparison tasks from chosen groups.

Likert round (Falke & Gurevych 2017, §3.2): the topic's real propositions are shuffled and
cut into tasks of `campaign.likert_group_size`, so every proposition is rated in exactly
one task. Some tasks give one of their slots to a trap (the displaced proposition moves on
to a later task); trap kinds take turns between *obvious* sentences
(`campaign.obvious_traps`) and *subtle* off-topic propositions the researcher imported
with `trap_kind=subtle`.

The trap rule. Traps are evidence for quality control only when a worker meets enough of
them (`campaign.qc_min_traps`, default 2) and when every kind is shown. So, unless
`campaign.trap_rate` is 0 (no traps at all):
* a trap in one task of every k, k = ⌊tasks_per_session / qc_min_traps⌋ (10 / 2 = 5 by
  default: 20 % of the tasks, a trap in 4 % of the slots), or in `trap_rate` of the tasks
  if that is more (`trap_share`);
* at least qc_min_traps trap tasks of each kind that has traps (`traps_per_kind`), so a
  small topic shows every kind, and a worker who does all of it meets the minimum;
* spread evenly over the round: trap tasks are at most k positions apart, so any run of
  tasks_per_session consecutive tasks — what a session hands out, and on MTurk the number
  we take as typical — holds at least qc_min_traps traps, and kinds alternate along it.
A 150-proposition topic (30 tasks of real propositions) gets 32 tasks, 7 with a trap; one
of 1,750 propositions 365 tasks, 73 with a trap.

Comparison rounds: `ranking.selection.next_batch` chooses groups of proposition ids; each
group becomes one drag-and-drop task of a numbered batch.
"""

import math
import random
from collections.abc import Iterable, Sequence

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.models import Batch, Proposition, Task, TaskItem, Topic
from annotation.suitability.selectors import propositions_for_likert
from annotation.text import normalize_text
from config.errors import ApplicationError, Conflict

LIKERT_BATCH_NUMBER = 0  # a topic has one Likert batch; comparison batches count from 1


def trap_share(*, trap_rate: float, tasks_per_worker: int, min_traps: int) -> float:
    """The share of Likert tasks that carry a trap: `trap_rate`, or more, 1/k with
    k = ⌊tasks_per_worker / min_traps⌋ (at least 1), so that traps at most k tasks apart
    put `min_traps` in any `tasks_per_worker` consecutive tasks. 0 when trap_rate is 0."""
    if trap_rate <= 0:
        return 0.0
    spacing = max(1, tasks_per_worker // max(1, min_traps))
    return min(1.0, max(trap_rate, 1 / spacing))


def likert_plan(
    real_ids: Sequence[int],
    *,
    group_size: int,
    trap_rate: float,
    trap_pools: Sequence[Sequence[int]],
    rng: random.Random,
    traps_per_kind: int = 1,
) -> list[list[int]]:
    """Groups of proposition ids, one per task. Pure: same inputs and rng state → same plan.

    Every id of `real_ids` lands in exactly one group. max(⌈trap_rate × tasks⌉,
    traps_per_kind × non-empty pools) groups, at most every one, carry one trap, at a random
    position in the group, taken in turn from each non-empty pool in `trap_pools`. The trap
    groups are spread evenly: the i-th is group ⌊(i + u) × tasks / traps⌋ (u drawn once from
    `rng`), so two are never more than ⌈tasks / traps⌉ ≤ ⌈1 / trap_rate⌉ apart. All groups hold
    `group_size` ids except one short group when the numbers do not divide.
    """
    if group_size < 1:
        raise ValueError("group_size must be at least 1")
    ids = list(real_ids)
    rng.shuffle(ids)
    pools = [list(pool) for pool in trap_pools if pool]
    tasks = math.ceil(len(ids) / group_size)
    traps = 0
    # A trap needs a slot next to at least one real proposition.
    if pools and group_size > 1 and trap_rate > 0:
        tasks, traps = _tasks_with_traps(len(ids), group_size, trap_rate, least=traps_per_kind * len(pools))
    if tasks == 0:
        return []

    offset = rng.random()
    trap_tasks = {math.floor((index + offset) * tasks / traps) for index in range(traps)}
    capacities = [group_size - (index in trap_tasks) for index in range(tasks)]
    # The slots left over go to one short task: a task without a trap when there is one.
    surplus = sum(capacities) - len(ids)
    plain = [index for index in range(tasks) if index not in trap_tasks]
    capacities[plain[-1] if plain else tasks - 1] -= surplus

    for pool in pools:
        rng.shuffle(pool)
    groups: list[list[int]] = []
    start = used = 0
    for index, capacity in enumerate(capacities):
        group = ids[start : start + capacity]
        start += capacity
        if not group:
            continue  # only possible for a trap task when every task carries a trap
        if index in trap_tasks:
            pool = pools[used % len(pools)]
            group.insert(rng.randint(0, len(group)), pool[(used // len(pools)) % len(pool)])
            used += 1
        groups.append(group)
    return groups


def _tasks_with_traps(real: int, group_size: int, trap_rate: float, *, least: int) -> tuple[int, int]:
    """The fewest tasks that hold `real` propositions plus max(⌈trap_rate × tasks⌉, least)
    traps, at most one per task."""
    tasks = math.ceil(real / group_size)
    while True:
        # 1e-9: a product such as 0.07 × 100 = 7.000000000000001 must not round up to 8.
        traps = min(tasks, max(math.ceil(trap_rate * tasks - 1e-9), least))
        needed = math.ceil((real + traps) / group_size)
        if needed == tasks:
            return tasks, traps
        tasks = needed  # grows monotonically and is bounded by `real`, so this ends


def likert_tasks_build(*, topic: Topic, seed: int) -> Batch:
    """The topic's Likert batch, built once: a second call returns the existing batch."""
    try:
        return _likert_tasks_build(topic_id=topic.pk, seed=seed)
    except IntegrityError:
        # A concurrent call won the race for the (topic, kind, number) constraint.
        existing = Batch.objects.filter(topic_id=topic.pk, kind=Batch.Kind.LIKERT, number=LIKERT_BATCH_NUMBER).first()
        if existing is None:
            raise
        return existing


@transaction.atomic
def _likert_tasks_build(*, topic_id: int, seed: int) -> Batch:
    topic = Topic.objects.select_for_update(of=("self",)).select_related("campaign").get(pk=topic_id)
    existing = topic.batches.filter(kind=Batch.Kind.LIKERT, number=LIKERT_BATCH_NUMBER).first()
    if existing is not None:
        return existing
    campaign = topic.campaign
    # Propositions the suitability filter removed are never asked (annotation.suitability).
    real_ids = list(
        propositions_for_likert(topic.propositions.filter(trap_kind=Proposition.TrapKind.NONE))
        .order_by("id")
        .values_list("id", flat=True)
    )
    if not real_ids:
        raise ApplicationError(f"Topic {topic} has no propositions to rate: import some first.", code="topic_empty")
    pools = _trap_pools(topic=topic, texts=campaign.obvious_traps) if campaign.trap_rate > 0 else []
    groups = likert_plan(
        real_ids,
        group_size=campaign.likert_group_size,
        trap_rate=trap_share(
            trap_rate=campaign.trap_rate, tasks_per_worker=campaign.tasks_per_session, min_traps=campaign.qc_min_traps
        ),
        trap_pools=pools,
        rng=random.Random(seed),
        traps_per_kind=max(1, campaign.qc_min_traps),
    )
    batch = Batch.objects.create(topic=topic, kind=Batch.Kind.LIKERT, number=LIKERT_BATCH_NUMBER)
    _tasks_create(batch=batch, groups=groups, assignments_needed=campaign.assignments_per_hit)
    return batch


def _trap_pools(*, topic: Topic, texts: Iterable) -> list[list[int]]:
    """[obvious trap ids, subtle trap ids]: the obvious ones become propositions of the topic."""
    obvious = []
    for text in texts:
        if not isinstance(text, str) or not normalize_text(text):
            continue
        trap, _ = Proposition.objects.get_or_create(
            topic=topic,
            normalized=normalize_text(text),
            defaults={"subject": " ".join(text.split()), "trap_kind": Proposition.TrapKind.OBVIOUS},
        )
        # A real proposition that happens to read like a trap text stays a real one.
        if trap.trap_kind == Proposition.TrapKind.OBVIOUS and trap.pk not in obvious:
            obvious.append(trap.pk)
    subtle = list(
        topic.propositions.filter(trap_kind=Proposition.TrapKind.SUBTLE).order_by("id").values_list("id", flat=True)
    )
    return [obvious, subtle]


def comparison_tasks_build(
    *, topic: Topic, groups: Sequence[Sequence[int]], number: int, seed: int | str | None = None
) -> Batch:
    """Comparison batch `number` of the topic, one task per group of proposition ids.

    Each task holds its group in a shuffled order (seeded by `seed`, by default by topic and
    number), so the selector's order shows nowhere; each worker starts from their own
    shuffle of it (crowd.hit_page.content.start_order), the preview from this one.
    Calling again with the same groups returns the existing batch; other groups → Conflict.
    """
    wanted = _groups_check(groups)
    try:
        return _comparison_tasks_build(topic_id=topic.pk, groups=wanted, number=number, seed=seed)
    except IntegrityError:
        existing = Batch.objects.filter(topic_id=topic.pk, kind=Batch.Kind.COMPARISON, number=number).first()
        if existing is None:
            raise
        _same_groups_check(batch=existing, groups=wanted)
        return existing


@transaction.atomic
def _comparison_tasks_build(*, topic_id: int, groups: list[tuple[int, ...]], number: int, seed) -> Batch:
    topic = Topic.objects.select_for_update(of=("self",)).select_related("campaign").get(pk=topic_id)
    existing = topic.batches.filter(kind=Batch.Kind.COMPARISON, number=number).first()
    if existing is not None:
        _same_groups_check(batch=existing, groups=groups)
        return existing
    wanted = {pid for group in groups for pid in group}
    known = set(
        topic.propositions.filter(pk__in=wanted, trap_kind=Proposition.TrapKind.NONE).values_list("id", flat=True)
    )
    if wanted - known:
        raise ApplicationError(
            f"Comparison groups name propositions that are not real propositions of topic {topic}.",
            code="unknown_propositions",
            details=sorted(wanted - known),
        )
    rng = random.Random(seed if seed is not None else f"{topic.pk}:{number}")
    shown = [rng.sample(group, len(group)) for group in groups]
    batch = Batch.objects.create(topic=topic, kind=Batch.Kind.COMPARISON, number=number)
    _tasks_create(batch=batch, groups=shown, assignments_needed=topic.campaign.assignments_per_hit)
    return batch


def _groups_check(groups: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    checked = [tuple(int(pid) for pid in group) for group in groups]
    if not checked:
        raise ApplicationError("A comparison batch needs at least one group.", code="groups_empty")
    for index, group in enumerate(checked):
        if len(group) < 2 or len(set(group)) != len(group):
            raise ApplicationError(
                f"Comparison group {index} must hold at least two distinct propositions: {list(group)}.",
                code="invalid_group",
            )
    return checked


def _same_groups_check(*, batch: Batch, groups: list[tuple[int, ...]]) -> None:
    stored: dict[int, list[int]] = {}
    for task_id, pid in (
        TaskItem.objects.filter(task__batch=batch)
        .order_by("task__position", "position")
        .values_list("task_id", "proposition_id")
    ):
        stored.setdefault(task_id, []).append(pid)
    if [sorted(group) for group in stored.values()] != [sorted(group) for group in groups]:
        raise Conflict(
            f"Comparison batch {batch.number} of topic {batch.topic_id} already exists with other groups.",
            code="batch_exists",
        )


def _tasks_create(*, batch: Batch, groups: Sequence[Sequence[int]], assignments_needed: int) -> None:
    tasks = Task.objects.bulk_create(
        Task(batch=batch, kind=batch.kind, position=index, assignments_needed=assignments_needed)
        for index in range(len(groups))
    )
    TaskItem.objects.bulk_create(
        TaskItem(task=task, proposition_id=pid, position=slot)
        for task, group in zip(tasks, groups, strict=True)
        for slot, pid in enumerate(group)
    )


# ---- A batch's status ---------------------------------------------------------------------

# Batch.status moves only forward: created → published → complete, and created or published
# → expired; an expired batch whose answers the pipeline has used is complete too. This is
# its one writer; publishing, expiry and the pipeline call it.
BATCH_MOVES: dict[str, tuple[str, ...]] = {
    Batch.Status.PUBLISHED: (Batch.Status.CREATED,),
    Batch.Status.COMPLETE: (Batch.Status.CREATED, Batch.Status.PUBLISHED, Batch.Status.EXPIRED),
    Batch.Status.EXPIRED: (Batch.Status.CREATED, Batch.Status.PUBLISHED),
}
BATCH_TIMESTAMPS: dict[str, str] = {Batch.Status.PUBLISHED: "published_at", Batch.Status.COMPLETE: "completed_at"}


def batch_status_move(*, batch_id: int, to: str) -> bool:
    """Move the batch to status `to` if it may go there from where it is; True when it moved.
    One conditional UPDATE: concurrent callers cannot both move it."""
    changes: dict[str, object] = {"status": to}
    if to in BATCH_TIMESTAMPS:
        changes[BATCH_TIMESTAMPS[to]] = timezone.now()
    return bool(Batch.objects.filter(pk=batch_id, status__in=BATCH_MOVES[to]).update(**changes))


def batch_hold(*, batch_id: int, reason: str) -> bool:
    """Record why publishing the batch is held back ("" once it is not); True when that
    changed, so the caller says it once rather than at every attempt."""
    return bool(Batch.objects.filter(pk=batch_id).exclude(held_reason=reason).update(held_reason=reason))
