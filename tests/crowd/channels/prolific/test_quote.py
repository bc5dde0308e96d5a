"""Money as quoted on Prolific (issue 25, points 2, 6 and 8): sessions sized so a study's places
give the answers it needs, more places only after the owner's recorded yes, approvals in one
bulk call, PARTIALLY APPROVED read as decided, the pay floor in the workspace's currency."""

import random
from decimal import Decimal as D

import pytest
import requests
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.campaigns import OwnerOnly
from annotation.models import Campaign
from config.errors import ApplicationError
from crowd.channels.prolific import raises
from crowd.channels.registry import channels_sync
from crowd.channels.settings import campaign_rewards_fit, channel_settings_set
from crowd.marketplaces.registry import channel_policy
from crowd.models import Assignment, LedgerEntry, PlacesRaise, Study, Worker, WorkerQuality, WorkSession
from crowd.qc.worker_quality import campaign_quality_refresh
from crowd.sessions import holds
from crowd.simulation.hits import DILIGENT, Judge, SimulatedWorker
from crowd.simulation.sessions import Participant
from crowd.work import ledger, review
from crowd.work.publishing import batch_publish
from ranking.channel_demo import local_prolific_returner, local_prolific_starter
from tests.crowd.factories import prolific_batch

pytestmark = [pytest.mark.prolific, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _site(local_prolific, settings, waits):
    cache.clear()
    settings.SITE_URL = local_prolific


def _charges(base_url: str, study: Study) -> dict:
    answer = requests.get(f"{base_url}/localprolific/_control/charges", params={"study": study.study_id}, timeout=10)
    [charges] = answer.json()["studies"]
    money = ("reward", "fee", "funded", "charged", "refunded", "reserved")
    return {key: D(value) / 100 if key in money else value for key, value in charges.items()}


def _session(base_url: str, study: Study, name: str) -> int:
    """One participant through the study over HTTP; the tasks they were given."""
    participant = Participant(
        SimulatedWorker(worker_id=name, behaviour=DILIGENT, noise=0.5), Judge(seed=1), random.Random(name)
    )
    url = local_prolific_starter(base_url)(participant.http, study.study_id, name)
    assert url is not None, f"{name} found no place"
    done, _ = participant.session_work(participant.http.get(url, timeout=30))
    participant.http.close()
    return done


def _three_sessions(base_url: str) -> Study:
    """`prolific_batch`'s three places published and taken by ANN, BOB and CAT, then synced."""
    batch = prolific_batch()
    batch_publish(batch_id=batch.pk)
    study = Study.objects.of_batch(batch).get()
    for name in ("ANN", "BOB", "CAT"):
        _session(base_url, study, f"{name}{0:021d}")
    channels_sync()
    return study


def _committed(campaign) -> D:
    return ledger.campaign_money(campaign=campaign).committed


def test_sessions_are_sized_so_the_places_give_every_answer(local_prolific):
    """Seven tasks wanting three answers each, sessions of five: five places. In task order the
    first three sessions would fill tasks 1–5 and leave the next two only tasks 6 and 7; sized
    and spread, four sessions do five tasks and the fifth the one answer left."""
    batch = prolific_batch(propositions=35, tasks_per_session=5, assignments=3)
    batch_publish(batch_id=batch.pk)
    study = Study.objects.of_batch(batch).get()
    assert study.places == 5
    done = [_session(local_prolific, study, f"P{n:024d}") for n in range(5)]
    assert done == [5, 5, 5, 5, 1]
    assert list(WorkSession.objects.filter(study=study).order_by("pk").values_list("tasks_target", flat=True)) == [
        5,
        5,
        5,
        5,
        1,
    ]
    assert Assignment.objects.filter(task__batch=batch).count() == 21
    channels_sync()
    assert not PlacesRaise.objects.exists()
    assert Study.objects.get(pk=study.pk).places == 5


@pytest.mark.parametrize("how", ["banned", "excluded by quality control"])
def test_a_participant_turned_away_leaves_their_share_to_the_next(local_prolific, how):
    """The same five places, but a participant turned away arrives first: Prolific gave them a
    place, their session is opened, its page turns them away and asks them to return the
    study, and they do. Before any sync has seen that return, the five who come next are sized
    as if they had never come, [5, 5, 5, 5, 1], and every answer is collected with the places
    the quote bought: no raise. (Counting the turned-away session's ten promised tasks sized
    them [5, 5, 5, 1, 1], four answers short.)"""
    batch = prolific_batch(propositions=35, tasks_per_session=5, assignments=3)
    campaign = batch.topic.campaign
    batch_publish(batch_id=batch.pk)
    study = Study.objects.of_batch(batch).get()
    away = "A" * 24
    worker = Worker.objects.create(channel=Campaign.Channel.PROLIFIC, external_id=away, blocked=how == "banned")
    if how != "banned":
        WorkerQuality.objects.create(campaign=campaign, worker=worker, computed_status=WorkerQuality.Status.EXCLUDED)
    participant = Participant(
        SimulatedWorker(worker_id=away, behaviour=DILIGENT, noise=0.5), Judge(seed=1), random.Random(away)
    )
    url = local_prolific_starter(local_prolific)(participant.http, study.study_id, away)
    done, last = participant.session_work(participant.http.get(url, timeout=30))
    assert (done, last.status_code) == (0, 403)
    assert "return the study" in last.text
    local_prolific_returner(local_prolific)(participant.http, url)
    assert WorkSession.objects.get(study=study, worker=worker).status == WorkSession.Status.ACTIVE  # not synced
    done = [_session(local_prolific, study, f"P{n:024d}") for n in range(5)]
    assert done == [5, 5, 5, 5, 1]
    assert Assignment.objects.filter(task__batch=batch).count() == 21
    channels_sync()
    assert not PlacesRaise.objects.exists()
    assert WorkSession.objects.get(study=study, worker=worker).status == WorkSession.Status.ABANDONED


def starve_after_one_task(monkeypatch, name: str) -> None:
    """`name`'s session finds no task free after its first, as when concurrent sessions hold
    the last free slots: it ends with fewer tasks than it was sized for."""
    real = holds._task_free_for

    def task_free_for(session, *, now):
        if session.worker.external_id == name and holds._done(session) >= 1:
            return None
        return real(session, now=now)

    monkeypatch.setattr(holds, "_task_free_for", task_free_for)


def test_more_places_wait_for_the_owners_recorded_yes(local_prolific, monkeypatch):
    """Three places of two tasks; CAT's session ends after one task: one answer still to collect
    after every place was used. Sync asks for a fourth place and commits nothing; a
    collaborator cannot say yes; once the owner does, the next sync commits and raises it, a
    fourth participant gives the answer, and the endpoint funds what was committed."""
    owner = get_user_model().objects.create_user("owner", password="x")
    batch = prolific_batch(owner=owner)
    campaign = batch.topic.campaign
    batch_publish(batch_id=batch.pk)
    study = Study.objects.of_batch(batch).get()
    quote = _committed(campaign)
    assert quote == _charges(local_prolific, study)["funded"] == D("1.29")
    starve_after_one_task(monkeypatch, f"CAT{0:021d}")
    assert [_session(local_prolific, study, f"{name}{0:021d}") for name in ("ANN", "BOB", "CAT")] == [2, 2, 1]
    campaign_quality_refresh(campaign_id=campaign.pk)
    channels_sync()
    channels_sync()

    [pending] = PlacesRaise.objects.all()
    assert (pending.places_from, pending.places_to, pending.missing, pending.cost) == (3, 4, 1, D("0.43"))
    assert (
        "1 of 6 answers" in pending.reason
        and "1 session ended with fewer tasks than it was sized for" in pending.reason
    )
    assert pending.approved_at is None and pending.done_at is None
    assert Study.objects.get(pk=study.pk).places == 3 == _charges(local_prolific, study)["places"]
    assert _committed(campaign) == quote  # nothing beyond the quote without a yes

    editor = get_user_model().objects.create_user("editor", password="x")
    with pytest.raises(OwnerOnly):
        raises.raise_approve(campaign=campaign, raise_id=pending.pk, by=editor)

    client = Client()
    client.force_login(owner)
    page = client.get(f"/campaigns/{campaign.slug}/").content.decode()
    assert "More places beyond the quote" in page and pending.reason in page and "Approve $0.43 more" in page
    client.post(f"/campaigns/{campaign.slug}/raises/{pending.pk}/approve/")
    pending.refresh_from_db()
    assert pending.approved_by == owner and pending.approved_at is not None
    channels_sync()

    pending.refresh_from_db()
    assert pending.done_at is not None
    assert Study.objects.get(pk=study.pk).places == 4 == _charges(local_prolific, study)["places"]
    assert _committed(campaign) == quote + pending.cost == _charges(local_prolific, study)["funded"]
    assert _session(local_prolific, study, f"DAN{0:021d}") == 1
    page = client.get(f"/campaigns/{campaign.slug}/").content.decode()
    assert "places raised" in page and pending.reason in page


def test_a_rejected_answer_asks_for_no_place(local_prolific):
    """Its task collected all it will get (the workflow does not ask for it again), so more
    places would be handed nothing: none is asked for."""
    study = _three_sessions(local_prolific)
    campaign = study.topic.campaign
    first = Assignment.objects.filter(worker__external_id=f"CAT{0:021d}").order_by("pk").first()
    review.assignment_reject(assignment_id=first.pk, reason="Rated every check statement as important.")
    campaign_quality_refresh(campaign_id=campaign.pk)
    channels_sync()
    assert not PlacesRaise.objects.exists()


def test_reviewed_submissions_are_approved_in_one_bulk_call(local_prolific):
    """Single-submission transitions fail at the endpoint; sync approves through the bulk
    endpoint all the same, and books each approved submission once."""
    batch = prolific_batch()
    campaign = batch.topic.campaign
    batch_publish(batch_id=batch.pk)
    study = Study.objects.of_batch(batch).get()
    for name in ("ANN", "BOB"):
        _session(local_prolific, study, f"{name}{0:021d}")
    channels_sync()
    campaign_quality_refresh(campaign_id=campaign.pk)
    requests.post(
        f"{local_prolific}/localprolific/_control/faults",
        json={"service_fault": 50, "operations": ["submissions.transition"]},
        timeout=10,
    ).raise_for_status()
    report = channels_sync()["prolific"]
    requests.delete(f"{local_prolific}/localprolific/_control/faults", timeout=10)

    assert report["approved"] == 2
    assert _charges(local_prolific, study)["approved"] == 2
    assert set(WorkSession.objects.filter(study=study).values_list("submission_status", flat=True)) == {"APPROVED"}
    channels_sync()
    assert LedgerEntry.objects.filter(campaign=campaign, kind="spent").count() == 2


def test_a_sync_books_the_paid_submissions_it_lists_in_one_read_however_many(local_prolific):
    """Every sync lists every paid submission of a study still open. They are booked once, and
    a later sync reads what is booked in one query for the study, not one (with a lock) for
    each submission it lists."""
    study = _three_sessions(local_prolific)
    campaign = study.topic.campaign
    campaign_quality_refresh(campaign_id=campaign.pk)
    assert channels_sync()["prolific"]["approved"] == 3
    spent = list(LedgerEntry.objects.filter(campaign=campaign, kind="spent").values_list("reference", "amount"))
    assert sorted(reference for reference, _ in spent) == sorted(
        f"submission:{submission_id}" for submission_id in WorkSession.objects.values_list("submission_id", flat=True)
    )
    assert {amount for _, amount in spent} == {D("0.43")}

    with CaptureQueriesContext(connection) as queries:
        channels_sync()
    ledger_reads = [query["sql"] for query in queries if '"crowd_ledgerentry"' in query["sql"]]
    assert len(ledger_reads) == 1, ledger_reads
    assert LedgerEntry.objects.filter(campaign=campaign, kind="spent").count() == 3


def test_a_partially_approved_submission_is_decided_and_booked_as_paid(local_prolific):
    batch = prolific_batch()
    campaign = batch.topic.campaign
    batch_publish(batch_id=batch.pk)
    study = Study.objects.of_batch(batch).get()
    _session(local_prolific, study, f"ANN{0:021d}")
    channels_sync()
    session = WorkSession.objects.get(study=study)
    answer = requests.post(
        f"{local_prolific}/localprolific/_control/submissions/{session.submission_id}/partially-approve", timeout=10
    )
    assert answer.json()["status"] == "PARTIALLY APPROVED"
    channels_sync()

    session.refresh_from_db()
    assert session.submission_status == "PARTIALLY APPROVED" and session.reviewed_at is not None
    [spent] = LedgerEntry.objects.filter(campaign=campaign, kind="spent")
    assert spent.amount == D("0.43")  # the whole session reward with its fee: the most it costs


def test_bulk_approval_at_the_endpoint_is_all_or_nothing(local_prolific, client_factory):
    batch = prolific_batch()
    batch_publish(batch_id=batch.pk)
    study = Study.objects.of_batch(batch).get()
    _session(local_prolific, study, f"ANN{0:021d}")
    channels_sync()
    waiting = WorkSession.objects.get(study=study).submission_id
    client = client_factory()
    with pytest.raises(ApplicationError, match="no such submission"):
        client.submissions_approve([waiting, "000000000000000000000000"])
    assert client.submission_get(waiting).status == "AWAITING REVIEW"
    client.submissions_approve([waiting])
    client.submissions_approve([waiting])  # again: nothing changes
    assert client.submission_get(waiting).status == "APPROVED"


@pytest.mark.parametrize(("currency", "floor"), [("GBP", D("0.08")), ("USD", D("0.11"))])
def test_a_new_prolific_campaigns_rewards_pass_the_floor_in_the_workspace_currency(settings, currency, floor):
    """Ten tasks of 45 s are 8 minutes: £6.00 an hour is 0.80 a session, $8.00 is 1.07."""
    settings.PROLIFIC_CURRENCY = currency
    campaign = Campaign.objects.create(slug=f"new-{currency.lower()}", name="New", channel="prolific")
    policy = channel_policy("prolific")
    wording = campaign_rewards_fit(campaign=campaign)
    campaign.refresh_from_db()
    assert (campaign.likert_reward, campaign.comparison_reward) == (floor, floor)
    assert policy.money_wording(floor) in wording and "Seconds per task" in wording
    for kind in ("likert", "comparison"):
        policy.pay_check(campaign=campaign, kind=kind)


def test_the_pay_refusal_names_the_field_and_a_longer_estimate_raises_the_rewards(settings):
    settings.PROLIFIC_CURRENCY = "GBP"
    campaign = Campaign.objects.create(slug="floor", name="Floor", channel="prolific", likert_reward=D("0.08"))
    policy = channel_policy("prolific")
    campaign.channel_settings = {"prolific": {"seconds_per_task": 90}}
    with pytest.raises(ApplicationError) as refused:
        policy.pay_check(campaign=campaign, kind="likert")
    message = refused.value.message
    assert "Seconds per task (Prolific) on the campaign's Channel page" in message
    assert "£0.80 for about 15 minutes (90 s per task), £3.20 an hour" in message
    assert "Prolific's minimum is £6.00 an hour" in message and "at least £0.15" in message

    campaign.channel_settings = {}
    campaign.save()
    saved = channel_settings_set(campaign=campaign, channel="prolific", seconds_per_task=90)
    assert saved.channel_settings["prolific"]["seconds_per_task"] == 90
    assert (saved.likert_reward, saved.comparison_reward) == (D("0.15"), D("0.15"))
    policy.pay_check(campaign=saved, kind="likert")
