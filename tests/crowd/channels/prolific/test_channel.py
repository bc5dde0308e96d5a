"""A campaign on Prolific, end to end through the real client and the local Prolific
endpoint on the live server: a study per batch (once), participants in sessions through
the real pages, the completion redirect, sync, approval, rejection, bonus, the pay floor
and the budget cap, faults retried."""

from decimal import Decimal as D

import pytest
import requests
from django.core.cache import cache

from annotation.batching import comparison_tasks_build
from annotation.models import Batch
from config.errors import ApplicationError
from crowd.channels.prolific.filter_settings import prolific_filters_set
from crowd.channels.registry import channels_sync
from crowd.models import HIT, Assignment, LedgerEntry, Study, TaskHold, WorkSession
from crowd.qc.worker_quality import campaign_quality_refresh
from crowd.simulation.hits import DILIGENT, Judge, SimulatedWorker
from crowd.simulation.sessions import Participant
from crowd.work import ledger, review
from crowd.work.ledger import BudgetExceeded
from crowd.work.publishing import batch_publish
from ranking.channel_demo import local_prolific_starter
from rehearsal.localprolific import faults
from tests.crowd.channels.prolific.conftest import TOKEN
from tests.crowd.factories import prolific_batch

pytestmark = [pytest.mark.prolific, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _site(local_prolific, settings, waits):
    cache.clear()
    settings.SITE_URL = local_prolific  # the study URL must reach the live server


def _participant(name: str) -> Participant:
    worker = SimulatedWorker(worker_id=name, behaviour=DILIGENT, noise=0.5)
    import random

    return Participant(worker, Judge(seed=1), random.Random(name))


def _take_study(base_url, participant, study_id):
    url = local_prolific_starter(base_url)(participant.http, study_id, participant.worker.worker_id)
    assert url is not None
    return participant.session_work(participant.http.get(url, timeout=30))


def _client():
    from crowd.marketplaces.prolific.client import prolific_client

    return prolific_client()


def test_publishing_a_batch_creates_and_publishes_one_study(local_prolific):
    batch = prolific_batch()  # 3 tasks × 2 answers, 2 per session: 3 places

    batch_publish(batch_id=batch.pk)
    batch_publish(batch_id=batch.pk)

    study = Study.objects.of_batch(batch).get()
    remote = _client().studies_list()
    assert [s.internal_name for s in remote] == [study.internal_name]
    assert remote[0].status == "ACTIVE" and remote[0].total_available_places == study.places == 3
    assert remote[0].reward_cents == study.reward_cents == 30
    detail = _client().study_get(study.study_id)  # the listing carries fewer fields
    assert detail.external_study_url.startswith(f"{local_prolific}/s/prolific/?PROLIFIC_PID=")
    assert detail.completion_code == study.completion_code
    assert set(HIT.objects.filter(task__batch=batch).values_list("channel", flat=True)) == {"prolific"}
    # Prolific is paid per submission: 3 places at 0.30 (2 tasks at 0.15) + its fee (42.8 %: 0.13)
    assert ledger.campaign_money(campaign=batch.topic.campaign).committed == D("1.29")


def test_the_campaigns_filters_go_with_every_study(local_prolific):
    from rehearsal.localprolific.models import Study as RemoteStudy

    batch = prolific_batch()
    filters = [
        {"filter_id": "approval_rate", "selected_range": {"lower": 95, "upper": 100}},
        {"filter_id": "fluent-languages", "selected_values": ["19"]},
    ]
    prolific_filters_set(campaign=batch.topic.campaign, filters=filters)

    batch_publish(batch_id=batch.pk)

    study = Study.objects.of_batch(batch).get()
    assert RemoteStudy.objects.get(study_id=study.study_id).filters == filters  # as received over HTTP


def test_likert_and_ordering_studies_carry_their_own_name_and_description(local_prolific, settings):
    likert = prolific_batch(propositions=5, comparison_reward=D("0.15"))
    ids = list(likert.topic.propositions.values_list("pk", flat=True))
    ordering = comparison_tasks_build(topic=likert.topic, groups=[ids], number=1)
    batch_publish(batch_id=likert.pk)
    batch_publish(batch_id=ordering.pk)

    def remote(batch):  # the study as Prolific's API returns it, over HTTP
        study_id = Study.objects.of_batch(batch).get().study_id
        response = requests.get(
            f"{settings.PROLIFIC_API_URL}studies/{study_id}/", headers={"Authorization": f"Token {TOKEN}"}, timeout=30
        )
        response.raise_for_status()
        return response.json()

    assert remote(likert)["name"] == "Rate how important short statements are for a topic"
    assert "rate how important short statements are" in remote(likert)["description"]
    assert remote(ordering)["name"] == "Put short statements about a topic in order of importance"
    assert "put short statements in order of importance" in remote(ordering)["description"]


def test_a_crash_between_study_creation_and_publication_is_picked_up(local_prolific, monkeypatch):
    batch = prolific_batch()
    from crowd.marketplaces.prolific.client import ProlificClient

    real_publish = ProlificClient.study_publish
    monkeypatch.setattr(
        ProlificClient,
        "study_publish",
        lambda self, study_id: (_ for _ in ()).throw(requests.ConnectionError("the process died")),
    )
    with pytest.raises(requests.ConnectionError):
        batch_publish(batch_id=batch.pk)
    monkeypatch.setattr(ProlificClient, "study_publish", real_publish)

    batch_publish(batch_id=batch.pk)

    assert len(_client().studies_list()) == 1
    assert Batch.objects.get(pk=batch.pk).status == Batch.Status.PUBLISHED


def test_pay_below_prolifics_minimum_is_refused_before_anything_is_written(local_prolific):
    batch = prolific_batch(likert_reward=D("0.05"))

    with pytest.raises(ApplicationError, match=r"Prolific's minimum is \$8\.00 an hour") as refused:
        batch_publish(batch_id=batch.pk)

    assert "Raise the likert reward to at least $0.14 on the campaign's Settings page" in refused.value.message
    assert "Seconds per task (Prolific) on the campaign's Channel page" in refused.value.message
    assert not LedgerEntry.objects.exists() and not HIT.objects.exists() and not Study.objects.exists()


def test_the_budget_cap_counts_prolifics_fee(local_prolific):
    batch = prolific_batch(budget_cap=D("1.28"))  # the study costs 3 × 0.43 = 1.29 with the fee

    with pytest.raises(BudgetExceeded, match=r"costs \$1.29 with Prolific fees"):
        batch_publish(batch_id=batch.pk)

    assert not Study.objects.exists() and not _client().studies_list()


def test_a_throttled_study_creation_is_retried(local_prolific, waits):
    batch = prolific_batch()
    faults.inject(throttle=3)  # the first meets publishing's quick reachability check, which lets it pass

    batch_publish(batch_id=batch.pk)

    assert len(waits) >= 2 and len(_client().studies_list()) == 1


def test_a_session_ends_on_prolifics_completion_page_and_is_approved_after_review(local_prolific):
    batch = prolific_batch()
    batch_publish(batch_id=batch.pk)
    study = Study.objects.of_batch(batch).get()
    ann = _participant("ANN0000000000000000000001")

    done, last = _take_study(local_prolific, ann, study.study_id)

    assert done == 2
    assert last.url.startswith(f"{local_prolific}/localprolific/submissions/complete?cc={study.completion_code}")
    session = WorkSession.objects.get()
    assert session.status == WorkSession.Status.FINISHED
    assert set(Assignment.objects.values_list("verification", flat=True)) == {"verified"}
    [submission] = _client().submissions_list(study.study_id)
    assert submission.status == "AWAITING REVIEW"

    channels_sync()  # quality control runs after it (eager Celery); approvals wait for it
    campaign_quality_refresh(campaign_id=batch.topic.campaign_id)
    channels_sync()

    assert set(Assignment.objects.values_list("status", flat=True)) == {"Approved"}
    [submission] = _client().submissions_list(study.study_id)
    assert submission.status == "APPROVED"
    assert WorkSession.objects.get().submission_status == "APPROVED"


def test_the_completion_code_appears_only_after_the_last_task(local_prolific):
    batch = prolific_batch(tasks_per_session=3)
    batch_publish(batch_id=batch.pk)
    study = Study.objects.of_batch(batch).get()
    bob = _participant("BOB0000000000000000000001")
    url = local_prolific_starter(local_prolific)(bob.http, study.study_id, bob.worker.worker_id)
    pages = []
    original_get = bob.http.get

    def recording_get(url, **kwargs):
        response = original_get(url, **kwargs)
        pages.append(response)
        return response

    bob.http.get = recording_get
    done, last = bob.session_work(bob.http.get(url, timeout=30))

    assert done == 3
    before_the_end = [page for page in pages if page is not last]
    assert before_the_end and all(study.completion_code not in page.text for page in before_the_end)
    assert study.completion_code in last.url


def test_a_session_whose_answers_are_all_rejected_is_rejected_at_prolific_with_the_reason(local_prolific):
    batch = prolific_batch()
    batch_publish(batch_id=batch.pk)
    study = Study.objects.of_batch(batch).get()
    _take_study(local_prolific, _participant("EVE0000000000000000000001"), study.study_id)
    channels_sync()
    for answer in Assignment.objects.all():
        review.assignment_reject(assignment_id=answer.pk, reason="Rated every check statement as important.")

    channels_sync()

    [submission] = _client().submissions_list(study.study_id)
    assert submission.status == "REJECTED"
    session = WorkSession.objects.get()
    assert session.submission_status == "REJECTED" and session.reviewed_at is not None


def test_a_bonus_is_paid_through_prolific(local_prolific):
    batch = prolific_batch()
    batch_publish(batch_id=batch.pk)
    study = Study.objects.of_batch(batch).get()
    _take_study(local_prolific, _participant("ANN0000000000000000000001"), study.study_id)
    channels_sync()
    answer = Assignment.objects.first()

    bonus = review.bonus_grant(assignment_id=answer.pk, amount=D("0.50"), reason="Careful work")

    paid = requests.get(f"{local_prolific}/localprolific/_control/bonuses", timeout=10).json()
    assert bonus.sent_at is not None
    assert paid["payments"] and paid["payments"][0]["participant_id"] == "ANN0000000000000000000001"
    # 0.50 plus Prolific's fee
    assert LedgerEntry.objects.get(kind="bonus").amount == D("0.71")


def test_a_returned_submission_frees_the_task_in_hand(local_prolific):
    batch = prolific_batch()
    batch_publish(batch_id=batch.pk)
    study = Study.objects.of_batch(batch).get()
    cyd = _participant("CYD0000000000000000000001")
    start = requests.post(
        f"{local_prolific}/localprolific/_control/studies/{study.study_id}/participants",
        json={"participant_id": cyd.worker.worker_id},
        timeout=10,
    ).json()
    cyd.http.get(start["url"], timeout=30)  # arrives and gets a task, then gives up
    assert TaskHold.objects.filter(released_at__isnull=True).count() == 1
    requests.post(f"{local_prolific}/localprolific/_control/submissions/{start['submission_id']}/return", timeout=10)

    channels_sync()

    assert WorkSession.objects.get().status == WorkSession.Status.ABANDONED
    assert TaskHold.objects.filter(released_at__isnull=True).count() == 0
