"""The simulated crowd: its judgements, and a Likert round done end to end over HTTP."""

import random
import statistics
from collections import Counter
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.models import Proposition, Topic
from crowd.models import Assignment, LikertLabel
from crowd.simulation import hits as simulate
from crowd.simulation.hits import CONSTANT_SPAMMER, DILIGENT, RANDOM_SPAMMER, TRAP_BLIND, Judge, SimulatedWorker
from crowd.work.sync import assignments_sync
from tests.factories import CampaignFactory, PropositionFactory, TopicFactory

from .factories import likert_batch

DILIGENT_WORKER = SimulatedWorker("ADILIGENT00001", DILIGENT, noise=0.5)


def test_a_crowd_has_the_asked_shares_of_spammers_and_trap_blind_workers():
    crowd = simulate.crowd_make(workers=30, spammers=0.1, trap_blind=0.2, seed=3)

    behaviours = Counter(worker.behaviour for worker in crowd)
    assert behaviours == {DILIGENT: 21, TRAP_BLIND: 6, RANDOM_SPAMMER: 2, CONSTANT_SPAMMER: 1}
    assert len({worker.worker_id for worker in crowd}) == 30
    assert all(worker.worker_id.startswith("A") and worker.worker_id.isalnum() for worker in crowd)
    assert crowd == simulate.crowd_make(workers=30, spammers=0.1, trap_blind=0.2, seed=3)


def test_latent_importance_is_a_function_of_seed_and_proposition_or_given():
    assert Judge(seed=1).latent_of(42) == Judge(seed=1).latent_of(42) != Judge(seed=2).latent_of(42)
    assert Judge(seed=1, latent={42: 1.5}).latent_of(42) == 1.5


def test_diligent_scores_follow_the_latent_importance_and_traps_get_the_lowest():
    latent = {pid: (pid - 50) / 25 for pid in range(100)}
    judge = Judge(seed=0, latent=latent, traps={7})
    rng = random.Random(0)

    scores = judge.likert(DILIGENT_WORKER, list(range(100)), rng)

    assert set(scores.values()) <= {1, 2, 3, 4, 5}
    assert statistics.correlation([latent[pid] for pid in range(100)], [scores[pid] for pid in range(100)]) > 0.8
    assert scores[7] == 1
    blind = SimulatedWorker("ABLIND00000001", TRAP_BLIND, noise=0.0)
    assert judge.likert(blind, [7], rng) == {7: round(3 + latent[7])}


def test_spammers_ignore_the_content():
    judge = Judge(seed=0, latent={1: 2.0, 2: -2.0, 3: 0.0})
    constant = SimulatedWorker("ACONSTANT00001", CONSTANT_SPAMMER, noise=0.5, constant=4)
    assert judge.likert(constant, [1, 2, 3], random.Random(0)) == {1: 4, 2: 4, 3: 4}
    assert judge.ordering(constant, [3, 1, 2], random.Random(0)) == [3, 1, 2]  # left as shown
    rng = random.Random(0)
    orderings = {
        tuple(judge.ordering(SimulatedWorker("ARANDOM0000001", RANDOM_SPAMMER, 0.5), [1, 2, 3], rng)) for _ in range(50)
    }
    assert len(orderings) == 6


def test_orderings_sort_by_noisy_latent_utility():
    judge = Judge(seed=0, latent={1: 2.0, 2: -2.0, 3: 0.0})
    exact = SimulatedWorker("AEXACT00000001", DILIGENT, noise=0.0)
    assert judge.ordering(exact, [2, 3, 1], random.Random(0)) == [1, 3, 2]
    noisy = SimulatedWorker("ANOISY00000001", DILIGENT, noise=3.0)
    rng = random.Random(0)
    firsts = Counter(judge.ordering(noisy, [1, 2, 3], rng)[0] for _ in range(300))
    assert firsts[1] > firsts[3] > firsts[2] > 0  # Thurstone: the better item wins more often, not always


@pytest.mark.django_db
def test_the_hit_form_parses_into_its_hidden_fields_and_rating_groups():
    batch = likert_batch(propositions=5)
    task = batch.tasks.get()
    query = "assignmentId=3ASSIGNMENT0000000000000000001&hitId=3HIT&workerId=AWORKER0000001&turkSubmitTo=http%3A%2F%2Fx"
    page = Client().get(f"/hit/{task.uuid}/?{query}")

    form = simulate.forms_parse(page.content.decode())[simulate.HIT_FORM_ID]

    assert form.action == f"/hit/{task.uuid}/submit/"
    hidden = dict(form.hidden)
    assert hidden["assignmentId"] == "3ASSIGNMENT0000000000000000001" and hidden["token"]
    pids = task.items.order_by("position").values_list("proposition_id", flat=True)
    assert form.radios == {f"rating-{pid}": ["5", "4", "3", "2", "1"] for pid in pids}


@pytest.mark.mturk
def test_simulate_crowd_completes_a_likert_round_of_50_propositions(local_turk, monkeypatch):
    campaign = CampaignFactory(slug="demo")  # the paper's defaults: 5 per HIT, 5 assignments, 5 % traps
    topic = TopicFactory(campaign=campaign, key="loans", state=Topic.State.IMPORTING)
    PropositionFactory.create_batch(50, topic=topic)
    call_command("publish", campaign="demo", stdout=StringIO())
    tasks = list(topic.batches.get().tasks.all())
    out = StringIO()

    call_command(
        "simulate_crowd", campaign="demo", workers=30, spammers=0.1, seed=7, base_url=local_turk.base_url, stdout=out
    )

    assert f"{5 * len(tasks)} assignments submitted" in out.getvalue()
    assert all(hit["NumberOfAssignmentsAvailable"] == 0 for hit in local_turk.hits())
    report = assignments_sync()
    assert report.verified == 5 * len(tasks) and report.unverified == report.recovered == 0
    assert not Assignment.objects.exclude(verification=Assignment.Verification.VERIFIED).exists()
    for task in tasks:
        workers = list(task.assignments.values_list("worker_id", flat=True))
        assert len(workers) == len(set(workers)) == 5  # one assignment per worker per HIT
    real = Proposition.objects.filter(topic=topic, trap_kind=Proposition.TrapKind.NONE)
    labels = Counter(LikertLabel.objects.filter(proposition__in=real).values_list("proposition_id", flat=True))
    assert len(labels) == 50 and set(labels.values()) == {5}
    # The crowd's mean follows the latent importance the simulation drew.
    judge = Judge(seed=7)
    means = {
        pid: statistics.mean(LikertLabel.objects.filter(proposition_id=pid).values_list("score", flat=True))
        for pid in labels
    }
    assert statistics.correlation([judge.latent_of(pid) for pid in means], list(means.values())) > 0.6
