"""Likert and comparison task building: coverage, traps, determinism, idempotency."""

import math
import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotation.batching import comparison_tasks_build, likert_plan, likert_tasks_build, trap_share
from annotation.models import Batch, Proposition, Task, TaskItem
from config.errors import ApplicationError, Conflict
from tests.factories import CampaignFactory, PropositionFactory, TopicFactory, ordered_propositions

# Trap ids far above the real ones (1..n) so the two never collide.
OBVIOUS = [10**6 + 1, 10**6 + 2]
SUBTLE = [2 * 10**6 + 1, 2 * 10**6 + 2, 2 * 10**6 + 3]


def _plan(n, *, group_size=5, trap_rate=0.05, pools=(OBVIOUS, SUBTLE), seed=1):
    return likert_plan(
        range(1, n + 1), group_size=group_size, trap_rate=trap_rate, trap_pools=pools, rng=random.Random(seed)
    )


def _traps(groups):
    trap_ids = set(OBVIOUS) | set(SUBTLE)
    return [[pid for pid in group if pid in trap_ids] for group in groups]


# --- likert_plan (pure) ------------------------------------------------------------------


@given(n=st.integers(1, 400), group_size=st.integers(1, 8), trap_rate=st.floats(0, 1), seed=st.integers(0, 10**6))
def test_plan_puts_every_real_proposition_in_exactly_one_task(n, group_size, trap_rate, seed):
    groups = _plan(n, group_size=group_size, trap_rate=trap_rate, seed=seed)
    real = [pid for group in groups for pid in group if pid <= n]
    assert sorted(real) == list(range(1, n + 1))
    assert all(1 <= len(group) <= group_size for group in groups)
    # At most one trap per task, always beside at least one real proposition.
    assert all(len(traps) <= 1 for traps in _traps(groups))
    assert all(any(pid <= n for pid in group) for group in groups)
    # At most one task is short.
    assert sum(len(group) < group_size for group in groups) <= 1


def test_plan_trap_share_is_the_rate_of_tasks():
    groups = _plan(1000, trap_rate=0.05)
    trap_tasks = sum(bool(traps) for traps in _traps(groups))
    # 1000 real propositions need 200 tasks; 10 traps push 10 of them into 2 more tasks, and
    # ⌈5 % of 202⌉ is 11: the 11th pushes one more into a 203rd task, and ⌈5 % of 203⌉ is 11.
    assert len(groups) == 203
    assert trap_tasks == math.ceil(0.05 * len(groups)) == 11


@given(
    n=st.integers(1, 400),
    group_size=st.integers(2, 8),
    spacing=st.integers(1, 10),
    seed=st.integers(0, 10**6),
)
def test_plan_puts_a_trap_in_every_run_of_spacing_tasks(n, group_size, spacing, seed):
    groups = _plan(n, group_size=group_size, trap_rate=1 / spacing, seed=seed)
    carries = [bool(traps) for traps in _traps(groups)]
    assert all(any(carries[start : start + spacing]) for start in range(max(1, len(groups) - spacing + 1)))
    # Kinds take turns along the round.
    kinds = ["obvious" if traps[0] in OBVIOUS else "subtle" for traps in _traps(groups) if traps]
    assert kinds == ["obvious", "subtle"] * (len(kinds) // 2) + ["obvious"] * (len(kinds) % 2)


def test_plan_shows_each_kind_at_least_traps_per_kind_times():
    # 4 tasks at 5 %: one trap by the rate, but two kinds × 2 each.
    groups = _plan(18, trap_rate=0.05, pools=(OBVIOUS, SUBTLE))
    kinds = Counter("obvious" if traps[0] in OBVIOUS else "subtle" for traps in _traps(groups) if traps)
    assert kinds == {"obvious": 1, "subtle": 1}
    groups = likert_plan(
        range(1, 19), group_size=5, trap_rate=0.05, trap_pools=(OBVIOUS, SUBTLE), rng=random.Random(1), traps_per_kind=2
    )
    kinds = Counter("obvious" if traps[0] in OBVIOUS else "subtle" for traps in _traps(groups) if traps)
    assert kinds == {"obvious": 2, "subtle": 2} and len(groups) == 5
    # Never more trap tasks than tasks: one task, one trap, of the first kind.
    (only,) = _traps(_plan(3, trap_rate=0.05))
    assert len(only) == 1 and only[0] in OBVIOUS


@pytest.mark.parametrize(
    ("trap_rate", "tasks_per_worker", "min_traps", "share"),
    [
        (0.05, 10, 2, 0.2),  # the defaults: a trap every 5 tasks
        (0.3, 10, 2, 0.3),  # a higher rate wins
        (0.05, 10, 3, 1 / 3),  # ⌊10 / 3⌋ = 3: three in any 10 consecutive tasks
        (0.05, 1, 2, 1.0),  # one-task sessions: every task
        (0.05, 20, 0, 0.05),  # no minimum: ⌊20 / 1⌋ = 20, 5 % is more
        (0.0, 10, 2, 0.0),  # traps turned off stay off
    ],
)
def test_trap_share_makes_the_qc_minimum_reachable(trap_rate, tasks_per_worker, min_traps, share):
    assert trap_share(trap_rate=trap_rate, tasks_per_worker=tasks_per_worker, min_traps=min_traps) == share


def test_plan_trap_takes_the_place_of_a_real_proposition():
    groups = _plan(100, trap_rate=0.5)
    for group, traps in zip(groups, _traps(groups)):
        if traps:
            assert len([pid for pid in group if pid <= 100]) == len(group) - 1


def test_plan_places_traps_at_varying_positions_and_alternates_kinds():
    groups = _plan(2000, trap_rate=0.1)
    positions = Counter(group.index(traps[0]) for group, traps in zip(groups, _traps(groups)) if traps)
    assert set(positions) == {0, 1, 2, 3, 4}
    kinds = Counter("obvious" if traps[0] in OBVIOUS else "subtle" for traps in _traps(groups) if traps)
    assert abs(kinds["obvious"] - kinds["subtle"]) <= 1
    used = Counter(traps[0] for traps in _traps(groups) if traps)
    assert set(used) == set(OBVIOUS) | set(SUBTLE)


def test_plan_without_pools_or_rate_has_no_traps():
    assert _traps(_plan(50, pools=())) == [[]] * 10
    assert _traps(_plan(50, trap_rate=0)) == [[]] * 10


def test_plan_is_deterministic_for_a_seed():
    assert _plan(300, seed=7) == _plan(300, seed=7)
    assert _plan(300, seed=7) != _plan(300, seed=8)


# --- likert_tasks_build --------------------------------------------------------------------


def _topic_with(n, **campaign):
    topic = TopicFactory(campaign=CampaignFactory(**campaign))
    PropositionFactory.create_batch(n, topic=topic)
    return topic


def _groups(batch):
    return [ordered_propositions(task) for task in batch.tasks.order_by("position")]


@pytest.mark.django_db
def test_likert_build_covers_every_proposition_once_with_obvious_traps():
    topic = _topic_with(200, trap_rate=0.1, assignments_per_hit=3)
    batch = likert_tasks_build(topic=topic, seed=3)

    assert (batch.kind, batch.number) == (Batch.Kind.LIKERT, 0)
    groups = _groups(batch)
    real = [p.pk for group in groups for p in group if p.trap_kind == Proposition.TrapKind.NONE]
    assert sorted(real) == sorted(topic.propositions.filter(trap_kind="none").values_list("pk", flat=True))
    trap_tasks = [group for group in groups if any(p.trap_kind != "none" for p in group)]
    # 10 % asked for, 20 % needed for 2 traps in any 10 tasks in a row (annotation.batching.trap_share).
    assert len(trap_tasks) == math.ceil(0.2 * len(groups)) == 9
    assert {p.trap_kind for group in trap_tasks for p in group if p.trap_kind != "none"} == {"obvious"}
    # The campaign's default obvious texts became trap propositions of the topic.
    obvious = topic.propositions.filter(trap_kind=Proposition.TrapKind.OBVIOUS)
    assert {p.subject for p in obvious} == set(topic.campaign.obvious_traps)
    assert set(batch.tasks.values_list("assignments_needed", flat=True)) == {3}
    assert set(batch.tasks.values_list("kind", flat=True)) == {Batch.Kind.LIKERT}


@pytest.mark.django_db
def test_likert_build_uses_subtle_traps_of_the_topic():
    topic = _topic_with(100, trap_rate=0.5)
    PropositionFactory.create_batch(2, topic=topic, trap_kind=Proposition.TrapKind.SUBTLE)
    batch = likert_tasks_build(topic=topic, seed=1)
    kinds = Counter(p.trap_kind for group in _groups(batch) for p in group if p.trap_kind != "none")
    assert kinds["subtle"] > 0 and kinds["obvious"] > 0


def _topic_with_both_kinds(n):
    """A topic of `n` real propositions, the default obvious traps and three imported subtle ones."""
    topic = TopicFactory(campaign=CampaignFactory())
    Proposition.objects.bulk_create(
        Proposition(topic=topic, subject=f"Lender {i}", relation="offers", object="loans", normalized=f"lender {i}")
        for i in range(n)
    )
    PropositionFactory.create_batch(3, topic=topic, trap_kind=Proposition.TrapKind.SUBTLE)
    return topic


@pytest.mark.django_db
@pytest.mark.parametrize(("propositions", "tasks", "traps"), [(150, 32, 7), (1750, 365, 73)])
def test_every_kind_is_shown_and_any_ten_tasks_in_a_row_hold_two_traps(propositions, tasks, traps):
    topic = _topic_with_both_kinds(propositions)
    campaign = topic.campaign
    assert (campaign.trap_rate, campaign.tasks_per_session, campaign.qc_min_traps) == (0.05, 10, 2)  # the defaults

    groups = _groups(likert_tasks_build(topic=topic, seed=topic.pk))

    kinds = [next((p.trap_kind for p in group if p.trap_kind != "none"), None) for group in groups]
    assert (len(groups), sum(kind is not None for kind in kinds)) == (tasks, traps)
    assert Counter(kind for kind in kinds if kind) == {"obvious": (traps + 1) // 2, "subtle": traps // 2}
    assert all(sum(p.trap_kind != "none" for p in group) <= 1 for group in groups)
    # What a session (or a worker doing 10 HITs in a row) sees: at least qc_min_traps, both kinds.
    for start in range(len(groups) - 10 + 1):
        run = [kind for kind in kinds[start : start + 10] if kind]
        assert len(run) >= 2 and set(run) == {"obvious", "subtle"}, start
    # Every imported subtle trap is shown.
    subtle = set(topic.propositions.filter(trap_kind="subtle").values_list("pk", flat=True))
    assert {p.pk for group in groups for p in group if p.trap_kind == "subtle"} == subtle


@pytest.mark.django_db
def test_a_small_topic_still_shows_each_kind_qc_min_traps_times():
    topic = _topic_with_both_kinds(20)  # 4 tasks of real propositions

    groups = _groups(likert_tasks_build(topic=topic, seed=1))

    kinds = Counter(p.trap_kind for group in groups for p in group if p.trap_kind != "none")
    assert kinds == {"obvious": 2, "subtle": 2} and len(groups) == 5


@pytest.mark.django_db
def test_likert_build_twice_returns_the_same_batch_and_writes_nothing():
    topic = _topic_with(23)
    first = likert_tasks_build(topic=topic, seed=1)
    counts = (Task.objects.count(), TaskItem.objects.count(), Proposition.objects.count())
    assert likert_tasks_build(topic=topic, seed=2) == first
    assert (Task.objects.count(), TaskItem.objects.count(), Proposition.objects.count()) == counts


@pytest.mark.django_db
def test_likert_build_is_deterministic_for_a_seed():
    topic = _topic_with(60, trap_rate=0.2)
    first = [[p.pk for p in group] for group in _groups(likert_tasks_build(topic=topic, seed=5))]
    Batch.objects.all().delete()
    again = [[p.pk for p in group] for group in _groups(likert_tasks_build(topic=topic, seed=5))]
    assert first == again
    # The obvious trap rows were reused (get_or_create), not duplicated.
    assert topic.propositions.filter(trap_kind=Proposition.TrapKind.OBVIOUS).count() == 2


@pytest.mark.django_db
def test_likert_build_keeps_a_real_proposition_that_reads_like_a_trap():
    topic = _topic_with(10, trap_rate=1.0, obvious_traps=["This sentence is not important"])
    real = PropositionFactory(topic=topic, subject="This  sentence is NOT important", relation="", object="")
    groups = _groups(likert_tasks_build(topic=topic, seed=1))
    assert real.trap_kind == "none"
    assert sum(p == real for group in groups for p in group) == 1
    assert all(p.trap_kind == "none" for group in groups for p in group)  # no usable trap left


@pytest.mark.django_db
def test_likert_build_of_an_empty_topic_fails_and_writes_nothing():
    topic = TopicFactory()
    with pytest.raises(ApplicationError) as raised:
        likert_tasks_build(topic=topic, seed=1)
    assert raised.value.code == "topic_empty"
    assert not Batch.objects.exists() and not Proposition.objects.exists()


# --- comparison_tasks_build ----------------------------------------------------------------


@pytest.mark.django_db
def test_comparison_build_makes_one_task_per_group():
    topic = _topic_with(12, assignments_per_hit=5)
    ids = list(topic.propositions.values_list("pk", flat=True))
    groups = [tuple(ids[0:5]), tuple(ids[5:10]), (ids[0], ids[10], ids[11], ids[2], ids[7])]
    batch = comparison_tasks_build(topic=topic, groups=groups, number=1)

    assert (batch.kind, batch.number) == (Batch.Kind.COMPARISON, 1)
    shown = [[p.pk for p in group] for group in _groups(batch)]
    assert [sorted(group) for group in shown] == [sorted(group) for group in groups]
    assert set(batch.tasks.values_list("kind", "assignments_needed")) == {(Batch.Kind.COMPARISON, 5)}


@pytest.mark.django_db
def test_comparison_build_is_idempotent_and_refuses_other_groups():
    topic = _topic_with(10)
    ids = list(topic.propositions.values_list("pk", flat=True))
    batch = comparison_tasks_build(topic=topic, groups=[ids[:5]], number=2)
    assert comparison_tasks_build(topic=topic, groups=[tuple(reversed(ids[:5]))], number=2) == batch
    with pytest.raises(Conflict):
        comparison_tasks_build(topic=topic, groups=[ids[5:]], number=2)
    assert Task.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    "groups, code",
    [([], "groups_empty"), ([(1,)], "invalid_group"), ([(1, 1, 2)], "invalid_group")],
)
def test_comparison_build_rejects_malformed_groups(groups, code):
    topic = _topic_with(3)
    with pytest.raises(ApplicationError) as raised:
        comparison_tasks_build(topic=topic, groups=groups, number=1)
    assert raised.value.code == code
    assert not Batch.objects.exists()


@pytest.mark.django_db
def test_comparison_build_rejects_traps_and_foreign_propositions():
    topic = _topic_with(4)
    ids = list(topic.propositions.values_list("pk", flat=True))
    trap = PropositionFactory(topic=topic, trap_kind=Proposition.TrapKind.SUBTLE)
    foreign = PropositionFactory()
    with pytest.raises(ApplicationError) as raised:
        comparison_tasks_build(topic=topic, groups=[(*ids[:3], trap.pk, foreign.pk)], number=1)
    assert raised.value.code == "unknown_propositions"
    assert raised.value.details == sorted([trap.pk, foreign.pk])
    assert not Batch.objects.exists()
