"""Prolific in its own unit: the ledger books per submission (the session reward plus the
service fee) and reconciles with what the local Prolific endpoint charged the workspace:
funded when the study is published, charged per approved submission, refunded when the
study completes."""

import random
from decimal import Decimal as D

import pytest
import requests
from django.core.cache import cache

from crowd.channels.registry import channels_sync
from crowd.models import Assignment, LedgerEntry, Study
from crowd.qc.worker_quality import campaign_quality_refresh
from crowd.simulation.hits import DILIGENT, Judge, SimulatedWorker
from crowd.simulation.sessions import Participant
from crowd.work import review
from crowd.work.expiry import batch_expire
from crowd.work.publishing import batch_publish
from ranking.channel_demo import local_prolific_starter
from tests.crowd.factories import prolific_batch

pytestmark = [pytest.mark.prolific, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _site(local_prolific, settings, waits):
    cache.clear()
    settings.SITE_URL = local_prolific


def _totals(campaign) -> dict[str, D]:
    totals = {kind: D("0.00") for kind in LedgerEntry.Kind.values}
    for kind, amount in LedgerEntry.objects.filter(campaign=campaign).values_list("kind", "amount"):
        totals[kind] += amount
    return totals


def _charges(base_url: str, study: Study) -> dict:
    """What the endpoint charged for the study, in the currency unit."""
    answer = requests.get(f"{base_url}/localprolific/_control/charges", params={"study": study.study_id}, timeout=10)
    [charges] = answer.json()["studies"]
    return {key: D(value) / 100 if isinstance(value, int) else value for key, value in charges.items()}


def _session(base_url: str, study: Study, name: str) -> None:
    participant = Participant(
        SimulatedWorker(worker_id=name, behaviour=DILIGENT, noise=0.5), Judge(seed=1), random.Random(name)
    )
    url = local_prolific_starter(base_url)(participant.http, study.study_id, name)
    participant.session_work(participant.http.get(url, timeout=30))
    participant.http.close()


def test_a_study_is_booked_per_submission_as_the_local_endpoint_charges(local_prolific):
    """Three places of two tasks at 0.15: 0.30 a submission, 0.43 with the 42.8 % fee. One
    session approved, one rejected, one place never taken; the study completes when its
    batch ends."""
    batch = prolific_batch()
    campaign = batch.topic.campaign
    batch_publish(batch_id=batch.pk)
    study = Study.objects.of_batch(batch).get()
    charges = _charges(local_prolific, study)
    assert (charges["reward"], charges["fee"]) == (D("0.30"), D("0.13"))
    assert _totals(campaign)["committed"] == charges["funded"] == D("1.29")

    _session(local_prolific, study, "ANN0000000000000000000001")
    _session(local_prolific, study, "EVE0000000000000000000001")
    channels_sync()
    for answer in Assignment.objects.filter(worker__external_id="EVE0000000000000000000001"):
        review.assignment_reject(assignment_id=answer.pk, reason="Rated every check statement as important.")
    campaign_quality_refresh(campaign_id=campaign.pk)
    channels_sync()  # ANN's submission approved, EVE's rejected

    totals, charges = _totals(campaign), _charges(local_prolific, study)
    assert totals["spent"] == charges["charged"] == D("0.43")  # one submission, not one entry per task
    assert totals["committed"] - totals["released"] - totals["spent"] == charges["reserved"] == D("0.86")

    batch_expire(batch_id=batch.pk)
    channels_sync()  # the study is stopped and completes: Prolific gives back the unused places

    totals, charges = _totals(campaign), _charges(local_prolific, study)
    assert charges["status"] == "COMPLETED" and Study.objects.get(pk=study.pk).status == "COMPLETED"
    assert totals["released"] == charges["refunded"] == D("0.86")  # the rejected place and the one never taken
    assert totals["spent"] == charges["charged"] == D("0.43")
    assert totals["committed"] - totals["released"] - totals["spent"] == charges["reserved"] == 0
    channels_sync()
    assert _totals(campaign) == totals  # a completed study is booked once
