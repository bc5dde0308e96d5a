"""The simulated crowd: its judgements, a Likert round done end to end over HTTP on each
channel's local endpoint (MTurk, participant links, Prolific), and the truth file that makes a
rehearsal on the researcher's own propositions meaningful."""

import random
import statistics
from collections import Counter
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotation.models import Campaign, Proposition, Topic
from crowd.channels.links import links
from crowd.models import Assignment, LikertLabel, ParticipantLink, WorkSession
from crowd.simulation import hits as simulate
from crowd.simulation.hits import CONSTANT_SPAMMER, DILIGENT, RANDOM_SPAMMER, TRAP_BLIND, Judge, SimulatedWorker
from crowd.simulation.truth import TruthFileInvalid, truth_read
from crowd.work.publishing import batch_publish
from crowd.work.sync import assignments_sync
from ranking.management.commands.simulate_crowd import SIMULATED_LINK_LABEL
from tests.crowd.channels.prolific.conftest import TOKEN
from tests.factories import CampaignFactory, PropositionFactory, TopicFactory

from .factories import likert_batch, prolific_batch, session_batch

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


# ---- The truth file ----------------------------------------------------------------------


def _numbered(topic, count: int, prefix: str = "p") -> list[Proposition]:
    """`count` propositions of `topic` with the ids p1, p2, … as a propositions file gives them."""
    propositions = PropositionFactory.create_batch(count, topic=topic)
    for number, proposition in enumerate(propositions, start=1):
        proposition.external_id = f"{prefix}{number}"
        proposition.save(update_fields=["external_id"])
    return propositions


@pytest.mark.django_db
def test_a_truth_file_gives_each_proposition_its_importance_as_a_z_score():
    topic = TopicFactory()
    first, second, third = _numbered(topic, 3)
    data = "".join(f"{topic.key}\ts\tp{number}\t{value}\n" for number, value in ((1, 0.9), (2, 0.5), (3, 0.1))).encode()
    data = b"topic\tsubject\tid\timportance\n" + data

    latent = truth_read(campaign=topic.campaign, data=data, filename="truth.tsv").latent

    assert latent[first.pk] == pytest.approx(1.2247, abs=1e-4)  # (0.9 - 0.5) / pstdev(0.9, 0.5, 0.1)
    assert latent[second.pk] == 0 and latent[third.pk] == pytest.approx(-1.2247, abs=1e-4)


@pytest.mark.django_db
def test_a_semicolon_truth_file_with_decimal_commas_and_a_score_column_is_read():
    topic = TopicFactory()
    first, second = _numbered(topic, 2)

    latent = truth_read(campaign=topic.campaign, data=b"id;score\r\np1;4,5\r\np2;1,5\r\n", filename="t.csv").latent

    assert latent == {first.pk: 1.0, second.pk: -1.0}


@pytest.mark.django_db
def test_the_topic_column_tells_apart_ids_two_topics_share():
    campaign = CampaignFactory()
    loans, bees = TopicFactory(campaign=campaign, key="loans"), TopicFactory(campaign=campaign, key="bees")
    [in_loans], [in_bees] = _numbered(loans, 1), _numbered(bees, 1)

    with pytest.raises(TruthFileInvalid) as ambiguous:
        truth_read(campaign=campaign, data=b"id,importance\np1,1\n", filename="t.csv")
    latent = truth_read(
        campaign=campaign, data=b"topic,id,importance\nloans,p1,1\nbees,p1,0\n", filename="t.csv"
    ).latent

    assert ambiguous.value.details == ["t.csv:2 [id]: id 'p1' is in several topics: add a topic column"]
    assert latent == {in_loans.pk: 1.0, in_bees.pk: -1.0}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"id\tsubject\np1\tx\n", ["truth.tsv:1 [importance]: the header needs the columns id and importance"]),
        (b"id\timportance\np1\tvery\n", ["truth.tsv:2 [importance]: 'very' is not a number"]),
        (b"id\timportance\np1\tnan\np2\tinf\n", ["truth.tsv:2 [importance]: 'nan'", "truth.tsv:3 [importance]"]),
        (b"id\timportance\n\t1\n", ["truth.tsv:2 [id]: empty"]),
        (b"id\timportance\nq9\t1\n", ["truth.tsv:2 [id]: no proposition of campaign"]),
        (b"id\timportance\np1\t1\np1\t2\n", ["truth.tsv:3 [id]: id 'p1' again (first on line 2)"]),
        (b"id\timportance\n", ["truth.tsv: no rows"]),
        (b"id\timportance\np1\t\xff\xfe\n", ["truth.tsv:2: not UTF-8 text (byte 0xff)"]),
        (b"id\timportance\np1\t1\x00\n", ["truth.tsv:2: a NUL character"]),
    ],
    ids=["no column", "not a number", "not finite", "empty id", "unknown id", "twice", "empty", "binary", "nul"],
)
def test_a_bad_truth_file_is_refused_with_each_problem_by_file_line_and_field(data, expected):
    topic = TopicFactory()
    _numbered(topic, 2)

    with pytest.raises(TruthFileInvalid) as refused:
        truth_read(campaign=topic.campaign, data=data, filename="truth.tsv")

    assert len(refused.value.details) == len(expected)
    for detail, start in zip(refused.value.details, expected, strict=True):
        assert detail.startswith(start), detail


@pytest.mark.django_db
def test_hostile_text_in_a_truth_file_is_quoted_escaped_and_cut_short():
    topic = TopicFactory()
    _numbered(topic, 1)
    hostile = "\x1b[2J\x1b[31mrm -rf /\u202e<script>alert(1)</script>" + "A" * 5000
    data = f"id\timportance\n{hostile}\t1\np1\t{hostile}\n".encode()

    with pytest.raises(TruthFileInvalid) as refused:
        truth_read(campaign=topic.campaign, data=data, filename="truth.tsv")

    message = refused.value.message
    assert "\x1b" not in message and "\u202e" not in message  # shown as escapes, not sent to the terminal
    assert "\\x1b[2J" in message and "…" in message and len(message) < 600
    assert [detail.split(" ", 1)[0] for detail in refused.value.details] == ["truth.tsv:2", "truth.tsv:3"]


@pytest.mark.django_db
def test_a_truth_file_names_no_trap_and_no_other_campaign_s_proposition():
    topic, elsewhere = TopicFactory(), TopicFactory()
    [trap] = _numbered(topic, 1, prefix="t")
    trap.trap_kind = Proposition.TrapKind.SUBTLE
    trap.save(update_fields=["trap_kind"])
    _numbered(elsewhere, 1, prefix="x")

    with pytest.raises(TruthFileInvalid) as refused:
        truth_read(campaign=topic.campaign, data=b"id,importance\nt1,1\nx1,2\n", filename="t.csv")

    assert [detail.split(" ", 1)[0] for detail in refused.value.details] == ["t.csv:2", "t.csv:3"]


# ---- The command on each channel, over HTTP ----------------------------------------------


def _truth_file(tmp_path, topic) -> tuple:
    """The topic's propositions numbered, and a truth file ranking them p1 (most important) down."""
    propositions = list(topic.propositions.filter(trap_kind="none").order_by("pk"))
    rows = []
    for number, proposition in enumerate(propositions, start=1):
        proposition.external_id = f"p{number}"
        proposition.save(update_fields=["external_id"])
        rows.append(f"{topic.key}\tp{number}\t{len(propositions) - number}")
    path = tmp_path / "truth.tsv"
    path.write_text("topic\tid\timportance\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path, {p.pk: len(propositions) - number for number, p in enumerate(propositions, start=1)}


def _means(topic) -> dict[int, float]:
    labels = LikertLabel.objects.filter(proposition__topic=topic, proposition__trap_kind="none")
    scores: dict[int, list[int]] = {}
    for pid, score in labels.values_list("proposition_id", "score"):
        scores.setdefault(pid, []).append(score)
    return {pid: statistics.mean(values) for pid, values in scores.items()}


@pytest.fixture
def site(live_server, settings, server_threads_joined):
    settings.SITE_URL = live_server.url
    return live_server.url


@pytest.mark.django_db(transaction=True)
def test_simulate_crowd_works_a_links_campaign_through_an_open_link_by_the_truth(site, tmp_path):
    batch = session_batch(
        Campaign.Channel.LINKS, propositions=30, tasks_per_session=3, assignments=3, consent_text="Agree, please."
    )
    batch_publish(batch_id=batch.pk)
    topic = batch.topic
    truth_path, truth = _truth_file(tmp_path, topic)
    out = StringIO()

    call_command(
        "simulate_crowd",
        campaign=topic.campaign.slug,
        workers=12,
        spammers=0,
        truth=truth_path,
        base_url=site,
        stdout=out,
    )

    assert f"Made the open link {SIMULATED_LINK_LABEL!r}" in out.getvalue()
    assert "18 tasks submitted in sessions" in out.getvalue() and str(truth_path) in out.getvalue()
    link = ParticipantLink.objects.get(campaign=topic.campaign)
    assert (link.kind, link.label) == (ParticipantLink.Kind.OPEN, SIMULATED_LINK_LABEL)
    sessions = WorkSession.objects.filter(campaign=topic.campaign)
    assert sessions.exists() and not sessions.filter(consented_at__isnull=True).exists()  # they agreed first
    counted = Assignment.objects.filter(task__batch=batch, verification=Assignment.Verification.VERIFIED)
    assert counted.count() == 18
    means = _means(topic)
    assert len(means) == 30
    assert statistics.correlation([truth[pid] for pid in means], list(means.values())) > 0.75

    again = StringIO()  # a second run reuses the link and finds nothing left
    call_command("simulate_crowd", campaign=topic.campaign.slug, workers=12, base_url=site, stdout=again)
    assert ParticipantLink.objects.filter(campaign=topic.campaign).count() == 1
    assert "Nothing was there to do" in again.getvalue()


@pytest.mark.django_db(transaction=True)
def test_simulate_crowd_refuses_a_links_campaign_with_real_participants(site):
    batch = session_batch(Campaign.Channel.LINKS, propositions=10, tasks_per_session=2, assignments=2)
    batch_publish(batch_id=batch.pk)
    campaign = batch.topic.campaign
    link = links.link_create(campaign=campaign, label="Ada")
    Client().post(f"/s/l/{link.token}/", {})  # Ada starts a session
    assert WorkSession.objects.filter(campaign=campaign).count() == 1

    with pytest.raises(CommandError, match="1 session\\(s\\) of real participants"):
        call_command("simulate_crowd", campaign=campaign.slug, base_url=site, stdout=StringIO())

    assert ParticipantLink.objects.filter(campaign=campaign).count() == 1 and not LikertLabel.objects.exists()


@pytest.fixture
def local_prolific(site, settings):
    settings.PROLIFIC_ENVIRONMENT = "local"
    settings.PROLIFIC_API_URL = f"{site}/localprolific/api/v1/"
    settings.PROLIFIC_API_TOKEN = TOKEN
    settings.PROLIFIC_COMPLETION_URL = f"{site}/localprolific/submissions/complete?cc={{code}}"
    return site


@pytest.mark.prolific
@pytest.mark.django_db(transaction=True)
def test_simulate_crowd_takes_a_prolific_campaign_s_studies_on_the_local_endpoint(local_prolific, tmp_path):
    batch = prolific_batch(propositions=20, tasks_per_session=2, assignments=2)
    batch_publish(batch_id=batch.pk)
    truth_path, truth = _truth_file(tmp_path, batch.topic)
    out = StringIO()

    call_command(
        "simulate_crowd",
        campaign=batch.topic.campaign.slug,
        workers=10,
        spammers=0,
        truth=truth_path,
        base_url=local_prolific,
        stdout=out,
    )

    assert "8 tasks submitted in sessions" in out.getvalue(), out.getvalue()
    assert f"{local_prolific}/localprolific/" in out.getvalue()
    sessions = WorkSession.objects.filter(campaign=batch.topic.campaign, study__isnull=False)
    assert sessions.count() == 4 and all(session.external_session_id for session in sessions)
    means = _means(batch.topic)
    assert len(means) == 20
    assert statistics.correlation([truth[pid] for pid in means], list(means.values())) > 0.6


@pytest.mark.django_db
def test_simulate_crowd_says_where_a_bad_truth_file_is_wrong_and_does_nothing(tmp_path):
    batch = session_batch(Campaign.Channel.LINKS, propositions=10, tasks_per_session=2, assignments=2)
    batch_publish(batch_id=batch.pk)
    campaign = batch.topic.campaign
    bad = tmp_path / "truth.csv"
    bad.write_text("id,importance\nghost,1\n\x1b[31mred,high\n", encoding="utf-8")

    with pytest.raises(CommandError) as refused:
        call_command("simulate_crowd", campaign=campaign.slug, truth=bad, base_url="http://127.0.0.1:9")
    with pytest.raises(CommandError, match=r"Cannot read the truth file .*missing\.tsv: No such file"):
        call_command("simulate_crowd", campaign=campaign.slug, truth=tmp_path / "missing.tsv")

    message = str(refused.value)
    assert f"{bad}:2 [id]: no proposition of campaign {campaign.slug} has id 'ghost'" in message
    assert f"{bad}:3 [importance]: 'high' is not a number" in message and "\x1b" not in message
    assert not ParticipantLink.objects.exists() and not WorkSession.objects.exists()


@pytest.mark.django_db
def test_ids_the_import_dropped_are_skipped_and_counted_not_fatal():
    topic = TopicFactory()
    first, second = _numbered(topic, 2)

    truth = truth_read(campaign=topic.campaign, data=b"id,importance\np1,1\ndropped,5\np2,0\n", filename="t.csv")

    assert truth.latent == {first.pk: 1.0, second.pk: -1.0}
    assert truth.skipped == [f"t.csv:3 [id]: no proposition of campaign {topic.campaign.slug} has id 'dropped'"]
