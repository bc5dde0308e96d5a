"""The per-topic pipeline: Likert → QC → top-k → comparison batches → refits → done."""

import random
import threading

import pytest
from django.db import connection

from annotation.batching import likert_tasks_build
from annotation.models import Batch, Campaign, Proposition, Topic
from crowd.answers.content import hit_content_get
from crowd.answers.store import answer_submit
from crowd.models import Assignment, Comparison
from ranking import pipeline, workflow
from ranking.models import PropositionScore, RankingSnapshot
from ranking.stats import spearman
from tests.factories import CampaignFactory, PropositionFactory, TopicFactory

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
    """Every task answered by `assignments_needed` workers through the real submission path."""
    for task in batch.tasks.all():
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
    compared = {
        s.proposition_id: s.mu for s in PropositionScore.objects.filter(proposition__topic=topic, in_comparisons=True)
    }
    assert spearman(compared, {pid: latent[pid] for pid in compared}) > 0.8
    ranks = list(
        PropositionScore.objects.filter(proposition__topic=topic).order_by("rank").values_list("rank", flat=True)
    )
    assert ranks == list(range(1, 31))


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
    barrier = threading.Barrier(2)
    results, errors = [], []

    def run():
        try:
            barrier.wait()
            results.append(workflow.topic_step(topic_id=topic.pk, publish=publish).action)
        except Exception as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sorted(results) in (["likert_done", "republish"], ["likert_done", "waiting"])
    assert Batch.objects.filter(topic=topic, kind=Batch.Kind.COMPARISON).count() == 1
    assert Proposition.objects.filter(topic=topic).count() == 30
