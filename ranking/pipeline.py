"""The per-topic state machine of the method (Falke & Gurevych 2017, §3.2–3.3).

    likert      → (Likert batch complete) quality control → Likert means → top-k with ties
                  → first comparison batch                                → comparisons
    comparisons → (latest batch complete) quality control → TrueSkill refit → snapshot
                  → next batch, or done when the pair budget is spent or the ranking settled

`topic_advance` is one idempotent step under a row lock on the topic: running it twice at
once serialises on the lock, and the second run finds the state already moved. A batch is
created inside the locked transaction; the step reports it (`publish_batch_id`) and the
loop's owner (`ranking.workflow`) publishes it after commit. If the process dies in
between, the next step finds the batch still `created` and reports it again (publishing
skips tasks that already have a HIT and MTurk's UniqueRequestToken blocks duplicates), so
exactly one batch is published and none is lost. The step enqueues nothing and publishes
nothing; quality control is run by the owner once per campaign and handed in as `excluded`.
"""

import math
import random
import sqlite3
from dataclasses import dataclass, field
from enum import StrEnum

from django.contrib.postgres.expressions import ArraySubquery
from django.db import connection, transaction
from django.db.models import BooleanField, Count, F, Func, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from annotation.batching import batch_status_move, comparison_tasks_build
from annotation.models import Batch, Campaign, Proposition, Task, Topic
from annotation.suitability.selectors import propositions_for_likert
from crowd.models import HIT, Comparison, LikertLabel, counted
from crowd.work.status import hit_collected
from ranking import rating, selection, stats
from ranking.budget import pair_budget_extra
from ranking.export import ranked_propositions, ranking_order
from ranking.likert import likert_means, top_k_with_ties
from ranking.models import PropositionScore, RankingSnapshot

TOP_FOR_CONCEPT_MAPS = 50


class StepAction(StrEnum):
    """What a step did; a str, so reports, task results and commands show the same words."""

    WAITING = "waiting"  # the current batch is still out
    PAUSED = "paused"  # the campaign is paused
    IDLE = "idle"  # nothing to do in this state
    LIKERT_DONE = "likert_done"  # the Likert round is scored and the first comparison batch chosen
    BATCH_CREATED = "batch_created"  # a comparison batch answered: refitted, the next one chosen
    REPUBLISH = "republish"  # a batch chosen earlier is still to be published
    DONE = "done"  # the topic is finished


@dataclass
class Step:
    """What one call of `topic_advance` did."""

    topic_id: int
    action: StepAction
    state: str
    publish_batch_id: int | None = None  # a batch to publish once the step has committed
    publish_live: bool = False
    expire_batch_ids: list[int] = field(default_factory=list)  # batches a finished topic left open
    details: dict = field(default_factory=dict)


def topic_advance(*, topic_id: int, excluded: set[int]) -> Step:
    """Advance one topic by at most one stage, with the campaign's excluded workers as quality
    control last found them; the Step says what to publish or expire after commit."""
    with transaction.atomic():
        topic = Topic.objects.select_for_update(of=("self",)).select_related("campaign").get(pk=topic_id)
        step = _advance_locked(topic, excluded)
        if step.publish_batch_id is not None:
            step.publish_live = _published_live(topic)
    return step


def topic_ready(*, topic_id: int) -> bool:
    """Whether the topic's next step has work to do (its current batch is complete, or a
    chosen batch waits to be published): the loop runs quality control only then."""
    topic = Topic.objects.select_related("campaign").get(pk=topic_id)
    kinds: dict[str, str] = {Topic.State.LIKERT: Batch.Kind.LIKERT, Topic.State.COMPARISONS: Batch.Kind.COMPARISON}
    kind = kinds.get(topic.state)
    if kind is None or topic.campaign.status != Campaign.Status.ACTIVE:
        return False
    latest = topic.batches.filter(kind=kind).order_by("-number").first()
    if latest is None or latest.status == Batch.Status.COMPLETE:
        return False
    if latest.status == Batch.Status.CREATED:
        return kind == Batch.Kind.COMPARISON  # chosen, not published yet: publish it again
    return batch_is_complete(latest)


def topic_start(*, topic_id: int) -> bool:
    """importing → likert once the topic's Likert batch is published (this module is the one
    writer of Topic.state); True when it moved."""
    published = Batch.objects.filter(topic_id=topic_id, kind=Batch.Kind.LIKERT).exclude(status=Batch.Status.CREATED)
    return bool(
        Topic.objects.filter(pk=topic_id, state=Topic.State.IMPORTING)
        .filter(pk__in=published.values("topic_id"))
        .update(state=Topic.State.LIKERT)
    )


def _published_live(topic: Topic) -> bool:
    """Follow-up batches go live only where the researcher already published live."""
    return HIT.objects.filter(task__batch__topic=topic, environment=Campaign.Environment.PRODUCTION).exists()


def _advance_locked(topic: Topic, excluded: set[int]) -> Step:
    campaign = topic.campaign
    if campaign.status == Campaign.Status.PAUSED:
        return Step(topic.pk, StepAction.PAUSED, topic.state)
    if topic.state == Topic.State.IMPORTING and topic_start(topic_id=topic.pk):
        topic.state = Topic.State.LIKERT
    if topic.state == Topic.State.LIKERT:
        return _likert_stage(topic, excluded)
    if topic.state == Topic.State.COMPARISONS:
        return _comparison_stage(topic, excluded)
    return Step(topic.pk, StepAction.IDLE, topic.state)


def batch_is_complete(batch: Batch) -> bool:
    """Every task has its counted assignments, or its HIT has collected all it will get
    (expired, the last deadline passed, nothing waiting for the marketplace)."""
    tasks = batch.tasks.annotate(
        counted=Count(
            "assignments",
            filter=counted("assignments__"),
        )
    ).select_related("hit", "batch__topic__campaign")
    now = timezone.now()
    for task in tasks:
        if task.counted >= task.assignments_needed:
            continue
        hit = getattr(task, "hit", None)
        if hit is None or not hit_collected(hit=hit, now=now):
            return False
    return True


def _mark_complete(batch: Batch) -> None:
    if batch_status_move(batch_id=batch.pk, to=Batch.Status.COMPLETE):
        batch.status = Batch.Status.COMPLETE


# ---- Likert round ----------------------------------------------------------------------


def _likert_stage(topic: Topic, excluded: set[int]) -> Step:
    batch = topic.batches.filter(kind=Batch.Kind.LIKERT).first()
    if batch is None or batch.status == Batch.Status.CREATED or not batch_is_complete(batch):
        return Step(topic.pk, StepAction.WAITING, topic.state)
    means = _likert_scores_store(topic, excluded)
    top = top_k_with_ties({key: mean for key, (mean, _n) in means.items()}, k=topic.campaign.top_k)
    PropositionScore.objects.filter(proposition_id__in=top).update(in_comparisons=True)
    _mark_complete(batch)
    topic.state = Topic.State.COMPARISONS
    topic.save(update_fields=["state"])
    if len(top) < 2:
        return _finish(topic, "too few propositions to compare")
    ratings = rating.fit([], items=top, env=selection.crowd_env())
    created = _next_batch_create(topic, ratings, counts={}, number=1)
    return Step(
        topic.pk,
        StepAction.LIKERT_DONE,
        topic.state,
        publish_batch_id=created.pk,
        details={"rated": len(means), "top_k": len(top), "excluded_workers": len(excluded)},
    )


def _likert_scores_store(topic: Topic, excluded: set[int]) -> dict[int, tuple[float, int]]:
    labels = LikertLabel.objects.filter(counted("assignment__"), proposition__topic=topic).values_list(
        "worker_id", "proposition_id", "score"
    )
    traps = set(topic.propositions.exclude(trap_kind=Proposition.TrapKind.NONE).values_list("id", flat=True))
    means = likert_means(labels.iterator(chunk_size=5000), excluded_workers=excluded, traps=traps)
    # Propositions the suitability filter removed were never asked: they get no score.
    real = propositions_for_likert(topic.propositions.filter(trap_kind=Proposition.TrapKind.NONE)).values_list(
        "id", flat=True
    )
    rows = [
        PropositionScore(
            proposition_id=pid, likert_mean=means.get(pid, (None, 0))[0], likert_n=means.get(pid, (None, 0))[1]
        )
        for pid in real
    ]
    PropositionScore.objects.bulk_create(
        rows,
        batch_size=2000,
        update_conflicts=True,
        unique_fields=["proposition"],
        update_fields=["likert_mean", "likert_n", "updated_at"],
    )
    return means


# ---- Comparison rounds -----------------------------------------------------------------


def _comparison_stage(topic: Topic, excluded: set[int]) -> Step:
    latest = topic.batches.filter(kind=Batch.Kind.COMPARISON).order_by("-number").first()
    if latest is None:
        return Step(topic.pk, StepAction.IDLE, topic.state)
    if latest.status == Batch.Status.CREATED:
        # Chosen but (maybe) not published: a crash between the two. Publish it again.
        return Step(topic.pk, StepAction.REPUBLISH, topic.state, publish_batch_id=latest.pk)
    if latest.status == Batch.Status.COMPLETE or not batch_is_complete(latest):
        return Step(topic.pk, StepAction.WAITING, topic.state)
    _mark_complete(latest)
    items = list(
        PropositionScore.objects.filter(proposition__topic=topic, in_comparisons=True).values_list(
            "proposition_id", flat=True
        )
    )
    votes = _votes(topic, excluded)
    ratings = rating.fit(votes, items=items, env=selection.crowd_env())
    snapshot = _refit_store(topic, ratings, votes)
    reason = _stop_reason(topic, snapshot, items)
    if reason:
        return _finish(topic, reason)
    counts: dict[frozenset[int], int] = {}
    for winner, loser in votes:
        pair = frozenset((winner, loser))
        counts[pair] = counts.get(pair, 0) + 1
    created = _next_batch_create(topic, ratings, counts=counts, number=latest.number + 1)
    return Step(
        topic.pk,
        StepAction.BATCH_CREATED,
        topic.state,
        publish_batch_id=created.pk,
        details={"snapshot": snapshot.number, "comparisons": len(votes)},
    )


def _votes(topic: Topic, excluded: set[int]) -> list[tuple[int, int]]:
    """(winner, loser) of every counted vote from included workers, in submission order.

    The votes of the topic's comparison tasks (their propositions are the topic's), reached
    through them (batch → task → assignment → vote, each by index): asked by the winner's
    topic, the planner scans every vote of the campaign (150 ms a step at 300 topics)."""
    rows = (
        Comparison.objects.filter(
            counted("assignment__"),
            assignment__task__batch__topic=topic,
            assignment__task__batch__kind=Batch.Kind.COMPARISON,
        )
        .exclude(worker_id__in=excluded)
        .order_by("assignment__submitted_at", "assignment_id", "id")
        .values_list("winner_id", "loser_id")
    )
    return list(rows)


def _refit_store(topic: Topic, ratings: dict, votes: list[tuple[int, int]]) -> RankingSnapshot:
    per_item = comparisons_per_item(votes)
    _scores_set(
        ("mu", "sigma", "comparisons"),
        [(pid, current.mu, current.sigma, per_item.get(pid, 0)) for pid, current in ratings.items()],
    )
    _ranks_store(topic)
    return refit_snapshot_create(topic, ratings, votes)


def comparisons_per_item(votes: list[tuple[int, int]]) -> dict[int, int]:
    """How many of the (winner, loser) votes each proposition took part in."""
    per_item: dict[int, int] = {}
    for winner, loser in votes:
        per_item[winner] = per_item.get(winner, 0) + 1
        per_item[loser] = per_item.get(loser, 0) + 1
    return per_item


def refit_snapshot_create(topic: Topic, ratings: dict, votes: list[tuple[int, int]]) -> RankingSnapshot:
    """The refit's snapshot: the ranking by μ, and how it moved since the previous one
    (Spearman, propositions entering and leaving the top TOP_FOR_CONCEPT_MAPS)."""
    mus = {key: value.mu for key, value in ratings.items()}
    previous = topic.snapshots.order_by("-number").first()
    ordered = stats.ranked_keys(mus)
    spearman_previous = entered = left = None
    if previous is not None:
        before = {pid: mu for pid, mu, _sigma in previous.ranking}
        spearman_previous = stats.spearman(mus, before)
        top_now = set(ordered[:TOP_FOR_CONCEPT_MAPS])
        top_before = set(stats.ranked_keys(before)[:TOP_FOR_CONCEPT_MAPS])
        entered, left = len(top_now - top_before), len(top_before - top_now)
    return RankingSnapshot.objects.create(
        topic=topic,
        number=(previous.number + 1) if previous else 1,
        comparisons_used=len(votes),
        spearman_previous=spearman_previous,
        entered_top=entered or 0,
        left_top=left or 0,
        ranking=[[pid, ratings[pid].mu, ratings[pid].sigma] for pid in ordered],
    )


def _scores_set(fields: tuple[str, ...], rows: list[tuple]) -> None:
    """Set `fields` of the stored scores of the propositions in `rows`, each (proposition id,
    *values in the order of `fields`): one UPDATE ... FROM (VALUES ...) per batch the backend's
    parameter limit allows, so one a refit on PostgreSQL (Django's bulk_update builds a CASE
    per field with a branch per row, which costs more to build than to run)."""
    if not _update_from_supported():
        values = {row[0]: row[1:] for row in rows}
        scores = list(PropositionScore.objects.filter(proposition_id__in=list(values)))
        for score in scores:
            for name, value in zip(fields, values[score.proposition_id], strict=True):
                setattr(score, name, value)
        PropositionScore.objects.bulk_update(scores, list(fields))
        return
    quote = connection.ops.quote_name
    table = quote(PropositionScore._meta.db_table)
    # A VALUES list names its columns column1, column2, ... on PostgreSQL and SQLite alike.
    assignments = ", ".join(f"{quote(name)} = given.column{index}" for index, name in enumerate(fields, start=2))
    row_sql = "(" + ", ".join(["%s"] * (len(fields) + 1)) + ")"
    size = connection.ops.bulk_batch_size(["proposition_id", *fields], rows) or 1
    with connection.cursor() as cursor:
        for start in range(0, len(rows), size):
            batch = rows[start : start + size]
            cursor.execute(
                f"UPDATE {table} SET {assignments} FROM (VALUES {', '.join([row_sql] * len(batch))}) AS given"
                f" WHERE {table}.{quote('proposition_id')} = given.column1",
                [value for row in batch for value in row],
            )


def _ranks_store(topic: Topic) -> None:
    """Ranks in the ranking's one order (`ranking.export.ranking_order`: compared propositions
    by μ, then the rest by Likert mean, ties by id), numbered by the database (ROW_NUMBER() over
    that order) and written by one UPDATE: one statement per refit whatever the number of
    propositions, and only rows whose rank changed are written.

    On PostgreSQL the topic's propositions are named by `id = ANY(ARRAY(<their ids>))`: the
    planner, which sizes such an array at a handful of elements, then reaches the score rows
    by their proposition index, both where the order joins them and where they are updated.
    Given the topic's real size (`topic_id = ...` alone) it hashed the whole score table
    twice, so a refit grew with the campaign's other topics (issue 26;
    tests/ranking/test_pipeline_ranks_plan.py checks the plan)."""
    propositions = ranked_propositions(topic=topic).order_by()
    if connection.vendor == "postgresql":
        ids = Proposition.objects.filter(topic=topic, trap_kind=Proposition.TrapKind.NONE).values("pk")
        among = Func(
            F("pk"),
            ArraySubquery(ids),
            template="(%(expressions)s))",
            arg_joiner=" = ANY(",
            output_field=BooleanField(),
        )  # (id = ANY(ARRAY(SELECT id ...)))
        propositions = propositions.filter(among)
    position = Window(RowNumber(), order_by=ranking_order())
    numbered = propositions.annotate(position=position).values_list("pk", "position")
    if not _update_from_supported():
        _ranks_rows_store(topic, dict(numbered))
        return
    sql, params = numbered.query.sql_with_params()
    quote = connection.ops.quote_name
    table, rank = quote(PropositionScore._meta.db_table), quote("rank")
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET {rank} = ranked.position FROM ({sql}) AS ranked"
            f" WHERE {table}.{quote('proposition_id')} = ranked.{quote('pk')}"
            f" AND ({table}.{rank} IS NULL OR {table}.{rank} <> ranked.position)",
            params,
        )


def _update_from_supported() -> bool:
    """UPDATE ... FROM: PostgreSQL, and SQLite from 3.33 (Django 5.2 accepts 3.31)."""
    if connection.vendor == "sqlite":
        return sqlite3.sqlite_version_info >= (3, 33)  # the library Django's backend uses
    return connection.vendor == "postgresql"


def _ranks_rows_store(topic: Topic, ranks: dict[int, int]) -> None:
    """The same ranks, written row by row in one bulk_update, where UPDATE ... FROM is missing."""
    changed = [
        score
        for score in PropositionScore.objects.filter(proposition__topic=topic)
        if score.proposition_id in ranks and score.rank != ranks[score.proposition_id]
    ]
    for score in changed:
        score.rank = ranks[score.proposition_id]
    PropositionScore.objects.bulk_update(changed, ["rank"])  # batches sized for the backend's limits


def pair_budget(campaign: Campaign, items: int) -> int:
    """The number of pairs the comparison rounds may ask: a share of all pairs among the top-k."""
    return math.ceil(campaign.pair_budget_fraction * items * (items - 1) / 2)


def pairs_asked(topic: Topic) -> int:
    """Pairs published so far: each task of g propositions asks C(g, 2) pairs."""
    sizes = (
        Task.objects.filter(batch__topic=topic, batch__kind=Batch.Kind.COMPARISON)
        .exclude(batch__status=Batch.Status.CREATED)
        .annotate(size=Count("items"))
        .values_list("size", flat=True)
    )
    return sum(size * (size - 1) // 2 for size in sizes)


def _stop_reason(topic: Topic, snapshot: RankingSnapshot, items: list[int]) -> str | None:
    campaign = topic.campaign
    if pairs_asked(topic) >= pair_budget(campaign, len(items)) + pair_budget_extra(topic):
        return "pair budget spent"
    recent = list(topic.snapshots.order_by("-number")[: campaign.stop_stable_refits])
    if len(recent) == campaign.stop_stable_refits and all(
        s.spearman_previous is not None and s.spearman_previous >= campaign.stop_spearman for s in recent
    ):
        return f"ranking settled (Spearman ≥ {campaign.stop_spearman} for {campaign.stop_stable_refits} refits)"
    return None


def _next_batch_create(topic: Topic, ratings: dict, *, counts: dict, number: int) -> Batch:
    campaign = topic.campaign
    remaining = pair_budget(campaign, len(ratings)) + pair_budget_extra(topic) - pairs_asked(topic)
    n_pairs = max(1, min(campaign.batch_pairs, remaining))
    rng = random.Random(f"salience:{topic.pk}:{number}")
    groups = selection.next_batch(ratings, counts, n_pairs=n_pairs, group_size=campaign.comparison_group_size, rng=rng)
    return comparison_tasks_build(topic=topic, groups=groups, number=number)


def _finish(topic: Topic, reason: str) -> Step:
    """Done: stop offering whatever the topic still has open at the marketplace."""
    topic.state = Topic.State.DONE
    topic.save(update_fields=["state"])
    open_batches = list(
        Batch.objects.filter(topic=topic, tasks__hit__complete=False).values_list("pk", flat=True).distinct()
    )
    return Step(
        topic.pk, StepAction.DONE, topic.state, expire_batch_ids=sorted(open_batches), details={"reason": reason}
    )
