"""The per-topic pipeline: Likert → QC → top-k → comparison batches → refits → done."""

import random
from datetime import timedelta

import pytest
import trueskill
from django.db import connection, transaction
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.batching import likert_tasks_build
from annotation.models import Batch, Campaign, Proposition, Topic
from crowd.hit_page.content import hit_content_get
from crowd.hit_page.store import answer_submit
from crowd.models import Assignment, Comparison
from ranking import pipeline, workflow
from ranking.models import PropositionScore, RankingSnapshot
from ranking.stats import spearman
from tests.concurrently import at_once
from tests.factories import (
    AssignmentFactory,
    BatchFactory,
    CampaignFactory,
    PropositionFactory,
    TopicFactory,
    WorkerFactory,
)

WORKERS = [f"AWORKER{i:07d}" for i in range(12)]


def make_topic(n=30, **campaign_options) -> tuple[Topic, dict[int, float]]:
    options = {
        "assignments_per_hit": 3,
        "top_k": 10,
        "batch_pairs": 20,
        "pair_budget_fraction": 0.5,
        "trap_rate": 0.0,
        "stop_stable_refits": 50,
    }
    options.update(campaign_options)
    campaign = CampaignFactory(**options)
    topic = TopicFactory(campaign=campaign, description="testing the pipeline")
    latent = {}
    for index in range(n):
        proposition = PropositionFactory(
            topic=topic, subject=f"subject {index}", relation="is", object=f"object {index}"
        )
        latent[proposition.pk] = index / n
    return topic, latent


def publish_recorder():
    calls = []

    def publish(batch_id, live):
        calls.append((batch_id, live))
        Batch.objects.filter(pk=batch_id).update(status=Batch.Status.PUBLISHED)

    return calls, publish


def answer_batch(batch: Batch, latent: dict[int, float], rng: random.Random, verify=True) -> None:
    """Every task answered by `assignments_needed` workers through the real submission path,
    in the tasks' order, so the seeded `rng` gives the same answers in every run (PostgreSQL
    returns updated rows in no fixed order)."""
    for task in batch.tasks.order_by("pk"):
        content = hit_content_get(task.uuid)
        for worker in rng.sample(WORKERS, task.assignments_needed):
            if batch.kind == Batch.Kind.LIKERT:
                fields = {
                    f"rating-{pid}": [str(min(5, max(1, round(1 + 4 * latent[pid] + rng.gauss(0, 0.4)))))]
                    for pid in content.item_ids
                }
            else:
                order = sorted(content.item_ids, key=lambda pid: -(latent[pid] + rng.gauss(0, 0.02)))
                fields = {"order": [",".join(str(pid) for pid in order)]}
            answer_submit(
                content=content, assignment_id=f"AS{task.pk:08d}{worker[-4:]}", worker_external_id=worker, fields=fields
            )
    if verify:
        Assignment.objects.filter(task__batch=batch).update(verification=Assignment.Verification.VERIFIED)


def start_likert(topic: Topic) -> Batch:
    batch = likert_tasks_build(topic=topic, seed=1)
    Batch.objects.filter(pk=batch.pk).update(status=Batch.Status.PUBLISHED)
    Topic.objects.filter(pk=topic.pk).update(state=Topic.State.LIKERT)
    return Batch.objects.get(pk=batch.pk)


@pytest.mark.django_db
def test_waits_until_the_likert_round_is_complete_and_verified(django_capture_on_commit_callbacks):
    topic, latent = make_topic()
    batch = start_likert(topic)
    calls, publish = publish_recorder()
    assert workflow.topic_step(topic_id=topic.pk, publish=publish).action == "waiting"
    answer_batch(batch, latent, random.Random(1), verify=False)
    # Answers our page stored but the marketplace has not confirmed are not counted yet.
    assert workflow.topic_step(topic_id=topic.pk, publish=publish).action == "waiting"
    Assignment.objects.update(verification=Assignment.Verification.VERIFIED)
    with django_capture_on_commit_callbacks(execute=True):
        step = workflow.topic_step(topic_id=topic.pk, publish=publish)
    assert step.action == "likert_done" and step.state == Topic.State.COMPARISONS
    assert step.details["top_k"] >= 10
    first = Batch.objects.get(topic=topic, kind=Batch.Kind.COMPARISON)
    assert first.number == 1 and calls == [(first.pk, False)]
    assert (
        PropositionScore.objects.filter(proposition__topic=topic, in_comparisons=True).count() == step.details["top_k"]
    )
    assert PropositionScore.objects.filter(proposition__topic=topic, likert_n=3).count() == 30


@pytest.mark.django_db
def test_a_whole_topic_runs_to_done_within_the_pair_budget(django_capture_on_commit_callbacks):
    topic, latent = make_topic()
    rng = random.Random(7)
    answer_batch(start_likert(topic), latent, rng)
    calls, publish = publish_recorder()
    steps = []
    for _ in range(30):
        with django_capture_on_commit_callbacks(execute=True):
            step = workflow.topic_step(topic_id=topic.pk, publish=publish)
        steps.append(step.action)
        if step.state == Topic.State.DONE:
            break
        latest = Batch.objects.filter(topic=topic, kind=Batch.Kind.COMPARISON).order_by("-number").first()
        answer_batch(latest, latent, rng)
    assert steps[-1] == "done"
    topic.refresh_from_db()
    assert topic.state == Topic.State.DONE
    items = PropositionScore.objects.filter(proposition__topic=topic, in_comparisons=True).count()
    budget = pipeline.pair_budget(topic.campaign, items)
    asked = pipeline.pairs_asked(topic)
    assert budget <= asked < budget + topic.campaign.batch_pairs + 10
    snapshots = RankingSnapshot.objects.filter(topic=topic).order_by("number")
    assert snapshots.count() == len(calls)
    assert snapshots.first().spearman_previous is None and snapshots.last().spearman_previous is not None
    assert snapshots.last().comparisons_used == Comparison.objects.filter(winner__topic=topic).count()
    # One topic's comparisons are chosen with a generator seeded by its id, which varies with the
    # tests' order: over 120 topics the lowest Spearman was 0.59 (4 % under 0.8), where a ranking
    # that learnt nothing lies under 0.5 nine times in ten. The median's bound is the next test's.
    assert _spearman_compared(topic, latent) > 0.5
    ranks = list(
        PropositionScore.objects.filter(proposition__topic=topic).order_by("rank").values_list("rank", flat=True)
    )
    assert ranks == list(range(1, 31))


def _spearman_compared(topic: Topic, latent: dict[int, float]) -> float:
    compared = {
        s.proposition_id: s.mu for s in PropositionScore.objects.filter(proposition__topic=topic, in_comparisons=True)
    }
    return spearman(compared, {pid: latent[pid] for pid in compared})


def _topic_run_to_done(topic: Topic, latent: dict[int, float], rng: random.Random, capture) -> None:
    answer_batch(start_likert(topic), latent, rng)
    _calls, publish = publish_recorder()
    for _ in range(30):
        with capture(execute=True):
            step = workflow.topic_step(topic_id=topic.pk, publish=publish)
        if step.state == Topic.State.DONE:
            return
        latest = Batch.objects.filter(topic=topic, kind=Batch.Kind.COMPARISON).order_by("-number").first()
        answer_batch(latest, latent, rng)
    raise AssertionError(f"topic {topic.pk} not done after 30 steps")


@pytest.mark.django_db
def test_over_a_dozen_topics_the_comparisons_recover_the_order(django_capture_on_commit_callbacks):
    """The ranking's quality over topics whose selections are seeded differently: over 120 topics
    the median Spearman was 0.93 and 7 % lay under 0.85, so a median of twelve under 0.85 has odds
    of about 1 in 10,000 unless the comparisons stop carrying the order."""
    figures = []
    for _ in range(12):
        topic, latent = make_topic()
        _topic_run_to_done(topic, latent, random.Random(7), django_capture_on_commit_callbacks)
        figures.append(_spearman_compared(topic, latent))
    figures.sort()
    assert (figures[5] + figures[6]) / 2 > 0.85, figures


@pytest.mark.django_db
def test_stops_when_the_ranking_has_settled(django_capture_on_commit_callbacks):
    topic, latent = make_topic(pair_budget_fraction=1.0, stop_stable_refits=1, stop_spearman=-1.0)
    rng = random.Random(3)
    answer_batch(start_likert(topic), latent, rng)
    _calls, publish = publish_recorder()
    with django_capture_on_commit_callbacks(execute=True):
        workflow.topic_step(topic_id=topic.pk, publish=publish)
    answer_batch(Batch.objects.get(topic=topic, kind=Batch.Kind.COMPARISON, number=1), latent, rng)
    with django_capture_on_commit_callbacks(execute=True):
        workflow.topic_step(topic_id=topic.pk, publish=publish)  # first refit: nothing to compare with
    answer_batch(Batch.objects.get(topic=topic, kind=Batch.Kind.COMPARISON, number=2), latent, rng)
    with django_capture_on_commit_callbacks(execute=True):
        step = workflow.topic_step(topic_id=topic.pk, publish=publish)
    assert step.action == "done" and "settled" in step.details["reason"]


@pytest.mark.django_db
def test_crash_between_batch_chosen_and_published_republishes_the_same_batch(django_capture_on_commit_callbacks):
    topic, latent = make_topic()
    answer_batch(start_likert(topic), latent, random.Random(2))

    def crash(batch_id, live):
        raise RuntimeError("worker died before publishing")

    with pytest.raises(RuntimeError), django_capture_on_commit_callbacks(execute=True):
        workflow.topic_step(topic_id=topic.pk, publish=crash)
    chosen = Batch.objects.get(topic=topic, kind=Batch.Kind.COMPARISON)
    assert chosen.status == Batch.Status.CREATED
    calls, publish = publish_recorder()
    with django_capture_on_commit_callbacks(execute=True):
        step = workflow.topic_step(topic_id=topic.pk, publish=publish)
    assert step.action == "republish" and calls == [(chosen.pk, False)]
    assert Batch.objects.filter(topic=topic, kind=Batch.Kind.COMPARISON).count() == 1
    with django_capture_on_commit_callbacks(execute=True):
        assert workflow.topic_step(topic_id=topic.pk, publish=publish).action == "waiting"
    assert len(calls) == 1


@pytest.mark.django_db
def test_excluded_workers_are_left_out_of_the_likert_means(django_capture_on_commit_callbacks):
    topic, latent = make_topic()
    answer_batch(start_likert(topic), latent, random.Random(5))
    from crowd.models import Worker, WorkerQuality

    # An admin override excludes one worker: its labels stay stored but stop counting.
    victim = Worker.objects.order_by("external_id").first()
    WorkerQuality.objects.create(campaign=topic.campaign, worker=victim, override_status=WorkerQuality.Status.EXCLUDED)
    _calls, publish = publish_recorder()
    with django_capture_on_commit_callbacks(execute=True):
        workflow.topic_step(topic_id=topic.pk, publish=publish)
    victim_items = set(victim.likert_labels.values_list("proposition_id", flat=True))
    assert victim_items
    for score in PropositionScore.objects.filter(proposition_id__in=victim_items):
        assert score.likert_n == 2


@pytest.mark.django_db
def test_a_paused_campaign_does_not_advance():
    topic, latent = make_topic()
    answer_batch(start_likert(topic), latent, random.Random(4))
    Campaign.objects.filter(pk=topic.campaign_id).update(status=Campaign.Status.PAUSED)
    assert workflow.topic_step(topic_id=topic.pk, publish=lambda *a: None).action == "paused"
    assert not Batch.objects.filter(topic=topic, kind=Batch.Kind.COMPARISON).exists()


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_advances_create_one_batch():
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL; `make test` runs this on PostgreSQL")
    topic, latent = make_topic()
    answer_batch(start_likert(topic), latent, random.Random(6))
    _calls, publish = publish_recorder()

    results, errors = at_once([lambda: workflow.topic_step(topic_id=topic.pk, publish=publish).action] * 2)

    assert not errors
    assert sorted(results) in (["likert_done", "republish"], ["likert_done", "waiting"])
    assert Batch.objects.filter(topic=topic, kind=Batch.Kind.COMPARISON).count() == 1
    assert Proposition.objects.filter(topic=topic).count() == 30


# ---- Stored ranks (issue 17: one set-based UPDATE instead of a bulk_update per refit) ------


def _sort_key_before(score: PropositionScore | None, proposition: Proposition) -> tuple:
    """ranking.export._sort_key before issue 17, kept as the oracle of the ranks' order."""
    if score is not None and score.in_comparisons and score.mu is not None:
        return (0, -score.mu, score.sigma or 0.0, proposition.pk)
    likert = score.likert_mean if score is not None and score.likert_mean is not None else float("-inf")
    return (1, -likert, 0.0, proposition.pk)


def ranks_before(topic: Topic) -> dict[int, int]:
    """The ranks the bulk_update store wrote: every real proposition sorted in Python, the
    ranks of those with a score row."""
    propositions = Proposition.objects.filter(topic=topic, trap_kind=Proposition.TrapKind.NONE).select_related("score")
    scored = sorted(((getattr(p, "score", None), p) for p in propositions), key=lambda pair: _sort_key_before(*pair))
    return {p.pk: rank for rank, (score, p) in enumerate(scored, start=1) if score is not None}


def stored_ranks(topic: Topic) -> dict[int, int | None]:
    return dict(
        PropositionScore.objects.filter(
            proposition__topic=topic, proposition__trap_kind=Proposition.TrapKind.NONE
        ).values_list("proposition_id", "rank")
    )


def scored_topic(rows: list[tuple | None], topic: Topic | None = None) -> tuple[Topic, list[Proposition]]:
    """A topic with one proposition per row: (in_comparisons, mu, sigma, likert_mean), or None
    for a proposition without a score row. Every stored rank starts wrong (1)."""
    topic = topic or TopicFactory()
    propositions = []
    for row in rows:
        proposition = PropositionFactory(topic=topic)
        if row is not None:
            in_comparisons, mu, sigma, likert = row
            PropositionScore.objects.create(
                proposition=proposition, in_comparisons=in_comparisons, mu=mu, sigma=sigma, likert_mean=likert, rank=1
            )
        propositions.append(proposition)
    return topic, propositions


@pytest.mark.django_db
def test_stored_ranks_are_the_rankings_order_with_its_ties():
    topic, (a, b, c, d, e, f, g, h, i, j, k) = scored_topic(
        [
            (True, 30.0, 2.0, 1.0),
            (True, 30.0, 1.0, 1.0),  # same μ as a, smaller σ: before a
            (True, 30.0, 1.0, 5.0),  # same μ and σ as b: after b, by id (its Likert mean plays no part)
            (True, 25.0, None, 4.0),
            (True, 25.0, 0.0, 4.0),  # σ 0 and no σ tie: by id
            (True, None, None, 4.5),  # in the comparisons without a μ: ranked by its Likert mean
            (False, 40.0, 1.0, 4.5),  # not in the comparisons: its μ plays no part; ties f, by id
            (False, None, None, 3.0),
            (False, None, None, None),  # unrated: last, by id
            None,  # no score row: takes its place among the unrated, nothing stored
            (False, None, None, None),
        ]
    )
    trap = PropositionFactory(topic=topic, trap_kind=Proposition.TrapKind.OBVIOUS)
    PropositionScore.objects.create(proposition=trap, likert_mean=5.0, rank=7)
    other_topic, _ = scored_topic([(True, 50.0, 1.0, 5.0)])

    pipeline._ranks_store(topic)

    expected = {b: 1, c: 2, a: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, k: 11}
    assert stored_ranks(topic) == {p.pk: rank for p, rank in expected.items()} == ranks_before(topic)
    assert not PropositionScore.objects.filter(proposition=j).exists()
    assert PropositionScore.objects.get(proposition=trap).rank == 7  # traps are not ranked
    assert stored_ranks(other_topic) == {other_topic.propositions.get().pk: 1}  # nor other topics


_MU, _SIGMA, _MEAN = (
    st.one_of(st.none(), st.sampled_from(values))
    for values in ((20.0, 25.0, -0.0, 0.0, 31.5), (0.0, 0.5, 2.0), (1.0, 2.5, 2.6, 5.0))
)


@pytest.mark.django_db
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.one_of(st.none(), st.tuples(st.booleans(), _MU, _SIGMA, _MEAN)), max_size=25))
def test_stored_ranks_match_the_bulk_update_store_on_random_ties(rows):
    with transaction.atomic():  # one savepoint per example, rolled back
        topic, _ = scored_topic(rows)
        pipeline._ranks_store(topic)
        assert stored_ranks(topic) == ranks_before(topic)
        transaction.set_rollback(True)


@pytest.mark.django_db
@pytest.mark.parametrize("propositions", [3, 120])
def test_storing_ranks_is_one_query_whatever_the_number_of_propositions(propositions, django_assert_num_queries):
    rng = random.Random(propositions)
    topic, _ = scored_topic(
        [(rng.random() < 0.2, rng.choice((20.0, 25.0)), 1.0, rng.choice((2.0, 3.4))) for _ in range(propositions)]
    )
    with django_assert_num_queries(1):
        pipeline._ranks_store(topic)
    assert stored_ranks(topic) == ranks_before(topic)


@pytest.mark.django_db
def test_without_update_from_ranks_and_refits_are_stored_by_bulk_update(monkeypatch):
    # SQLite before 3.33 has no UPDATE ... FROM: the same figures, written by bulk_update.
    topic, (a, _b, _c, d) = scored_topic(
        [(True, 25.0, 1.0, 2.0), (False, None, None, 4.0), None, (True, 26.0, 1.0, 1.0)]
    )
    monkeypatch.setattr(pipeline, "_update_from_supported", lambda: False)
    pipeline._ranks_store(topic)
    assert stored_ranks(topic) == ranks_before(topic)
    ratings = {a.pk: trueskill.Rating(mu=30.5, sigma=2.25), d.pk: trueskill.Rating(mu=20.125, sigma=3.0)}
    pipeline._refit_store(topic, ratings, [(a.pk, d.pk)])
    stored = PropositionScore.objects.filter(proposition__in=[a, d]).order_by("rank")
    assert [(s.proposition_id, s.mu, s.sigma, s.comparisons, s.rank) for s in stored] == [
        (pid, ratings[pid].mu, ratings[pid].sigma, 1, rank) for rank, pid in enumerate((a.pk, d.pk), start=1)
    ]
    assert stored_ranks(topic) == ranks_before(topic)


@pytest.mark.django_db
@pytest.mark.parametrize("compared", [3, 120])
def test_a_refit_is_stored_exactly_in_a_fixed_number_of_queries(compared, django_assert_num_queries):
    rng = random.Random(compared)
    topic, propositions = scored_topic([(True, None, None, 3.0)] * compared + [(False, None, None, 2.0)] * 5)
    items = [p.pk for p in propositions[:compared]]
    votes = [tuple(rng.sample(items, 2)) for _ in range(4 * compared)]
    for number in (1, 2):
        ratings = {pid: trueskill.Rating(mu=rng.uniform(10, 40) / 3, sigma=rng.uniform(0.5, 8)) for pid in items}
        # mu/sigma/comparisons, ranks, the previous snapshot, the new one: whatever the size.
        with django_assert_num_queries(4):
            snapshot = pipeline._refit_store(topic, ratings, votes)
        assert snapshot.number == number and snapshot.comparisons_used == len(votes)
        stored = {s.proposition_id: s for s in PropositionScore.objects.filter(proposition_id__in=items)}
        assert {pid: (s.mu, s.sigma) for pid, s in stored.items()} == {
            pid: (r.mu, r.sigma) for pid, r in ratings.items()
        }
        appearances = [pid for vote in votes for pid in vote]
        assert {pid: s.comparisons for pid, s in stored.items()} == {pid: appearances.count(pid) for pid in items}
        assert stored_ranks(topic) == ranks_before(topic)
    assert snapshot.spearman_previous is not None


@pytest.mark.django_db
def test_a_refit_uses_the_counted_votes_of_the_topics_comparison_tasks_in_submission_order(
    django_assert_num_queries,
):
    topic, (a, b, c) = scored_topic([(True, None, None, 3.0)] * 3)
    other, (x, y) = scored_topic([(True, None, None, 3.0)] * 2)
    included, excluded = WorkerFactory(), WorkerFactory()
    start = timezone.now() - timedelta(hours=1)

    def ordering(topic, order, worker, minutes, **fields):
        batch = BatchFactory(topic=topic, kind=Batch.Kind.COMPARISON)
        fields.setdefault("verification", Assignment.Verification.VERIFIED)
        assignment = AssignmentFactory(
            task__batch=batch, worker=worker, submitted_at=start + timedelta(minutes=minutes), **fields
        )
        Comparison.objects.bulk_create(
            Comparison(assignment=assignment, worker=worker, winner=winner, loser=loser)
            for i, winner in enumerate(order)
            for loser in order[i + 1 :]
        )

    ordering(topic, [c, b], included, minutes=2)
    ordering(topic, [a, b, c], included, minutes=1)
    ordering(topic, [b, a], excluded, minutes=0)  # an excluded worker's
    ordering(topic, [c, a], included, minutes=3, verification=Assignment.Verification.PENDING)  # not confirmed
    ordering(topic, [b, c], included, minutes=4, status=Assignment.Status.REJECTED)
    ordering(other, [y, x], included, minutes=0)  # another topic's
    with django_assert_num_queries(1):
        votes = pipeline._votes(topic, {excluded.pk})
    assert votes == [(a.pk, b.pk), (a.pk, c.pk), (b.pk, c.pk), (c.pk, b.pk)]
