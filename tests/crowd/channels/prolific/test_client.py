"""crowd.marketplaces.prolific.client through real HTTP against the local endpoint on the live server: studies,
submissions, reviews, bonuses, participants, faults and error mapping."""

from decimal import Decimal as D

import pytest
import requests

from crowd.marketplaces.base import InvalidState, MarketplaceError, MarketplaceUnavailable, NotFoundAtMarketplace
from crowd.marketplaces.prolific import client as prolific
from crowd.marketplaces.prolific import wire
from rehearsal.localprolific import faults
from rehearsal.localprolific.models import BonusPayment, BulkBonus, Study, Submission

from .conftest import TASK_URL, study_spec

pytestmark = pytest.mark.prolific

REASON = (
    "Your answers were given faster than the statements can be read, and the attention check near the end was "
    "not answered as instructed."
)


def _done(participant, study: wire.RemoteStudy, client) -> dict:
    """Start, then follow the completion link our task page would send the participant to."""
    started = participant.started(study.id)
    finished = participant.follow(client.completion_url(study.completion_code), format="json")
    assert finished.status_code == 200, finished.text
    return started


# ---- Studies -------------------------------------------------------------------------------


def test_a_study_is_created_as_a_draft_with_prolifics_fields(client):
    study = client.study_create(study_spec())

    assert study.status == "UNPUBLISHED"
    assert (study.internal_name, study.total_available_places, study.places_taken) == (
        "salience-campaign-7-batch-1",
        3,
        0,
    )
    assert (study.reward_cents, study.completion_code) == (150, "C0DE1234")
    assert study.external_study_url == (
        TASK_URL + "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )
    row = Study.objects.get(study_id=study.id)
    assert row.completion_codes == [
        {"code": "C0DE1234", "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}
    ]
    assert (row.prolific_id_option, row.estimated_completion_time, row.maximum_allowed_time) == (
        "url_parameters",
        10,
        30,
    )
    assert row.device_compatibility == ["desktop", "tablet", "mobile"]


def test_creating_again_returns_the_same_study(client_factory):
    first = client_factory().study_create(study_spec())
    # A re-run after a crash between creating and recording the id: a new process, a new client.
    again = client_factory().study_create(study_spec(description="Changed wording does not make a second study."))

    assert again.id == first.id
    assert Study.objects.count() == 1


def test_an_answer_lost_after_the_study_was_created_never_makes_a_second_one(client, waits):
    faults.inject(lost_response=1, operations=["studies.create"])

    study = client.study_create(study_spec())

    assert Study.objects.get().study_id == study.id
    assert len(waits) == 1
    assert faults.active() == []


def test_a_study_is_found_by_its_internal_name_across_pages(client_factory):
    client = client_factory(page_size=2)
    for number in range(5):
        client.study_create(study_spec(internal_name=f"other-{number}"))

    wanted = client.study_create(study_spec())
    again = client.study_create(study_spec())

    assert again.id == wanted.id
    assert len(client.studies_list()) == 6
    assert Study.objects.count() == 6


def test_publishing_opens_the_study_and_publishing_again_returns_it(client):
    draft = client.study_create(study_spec())

    published = client.study_publish(draft.id)
    again = client.study_publish(draft.id)

    assert published.status == again.status == "ACTIVE"
    assert Study.objects.get().published_at is not None


def test_a_stopped_study_cannot_be_published(client, published):
    stopped = client.study_stop(published.id)
    assert stopped.status == "COMPLETED"  # nobody took part: nothing to review

    with pytest.raises(InvalidState) as refused:
        client.study_publish(published.id)
    assert "COMPLETED" in refused.value.message
    assert client.study_stop(published.id).status == "COMPLETED"


def test_stopping_a_study_with_work_to_review_leaves_it_awaiting_review(client, published, participant_factory):
    _done(participant_factory(), published, client)

    assert client.study_stop(published.id).status == "AWAITING REVIEW"


def test_places_can_be_increased_and_never_decreased(client, published):
    assert client.study_places_increase(published.id, 5).total_available_places == 5
    assert client.study_places_increase(published.id, 5).total_available_places == 5

    with pytest.raises(MarketplaceError) as refused:
        client.study_places_increase(published.id, 4)
    assert "only increases" in refused.value.message
    assert Study.objects.get().total_available_places == 5


def test_more_places_reopen_a_full_study(client, published, participant_factory):
    for _ in range(3):
        _done(participant_factory(), published, client)
    assert client.study_get(published.id).status == "AWAITING REVIEW"

    assert client.study_places_increase(published.id, 4).status == "ACTIVE"
    assert participant_factory().start(published.id).status_code == 201


# ---- Participants and submissions ----------------------------------------------------------


def test_the_completion_redirect_marks_the_submission_awaiting_review(client, published, participant_factory):
    participant = participant_factory()
    started = participant.started(published.id)
    assert started["url"] == (
        f"{TASK_URL}?PROLIFIC_PID={started['participant_id']}&STUDY_ID={published.id}"
        f"&SESSION_ID={started['session_id']}"
    )
    assert Submission.objects.get().status == "ACTIVE"

    page = participant.follow(client.completion_url("C0DE1234"))

    assert page.status_code == 200
    assert "Thanks, your submission is recorded" in page.text
    submission = Submission.objects.get()
    assert (submission.status, submission.study_code) == ("AWAITING REVIEW", "C0DE1234")
    assert submission.submission_id == started["session_id"]


def test_a_wrong_completion_code_records_nothing(client, published, participant_factory):
    participant = participant_factory()
    participant.started(published.id)

    page = participant.follow(client.completion_url("WRONG999"), format="json")

    assert page.status_code == 400
    assert page.json()["code"] == "code_invalid"
    assert Submission.objects.get().status == "ACTIVE"


def test_no_participant_starts_once_the_places_are_taken(client, published, participant_factory):
    for _ in range(3):
        participant_factory().started(published.id)

    refused = participant_factory().start(published.id)

    assert refused.status_code == 409
    assert refused.json()["code"] == "places_exhausted"
    assert Submission.objects.count() == 3
    assert client.study_get(published.id).places_taken == 3


def test_a_returned_place_can_be_taken_again(client, published, participant_factory, local_prolific):
    first = next(participant_factory().started(published.id) for _ in range(3))

    returned = requests.post(f"{local_prolific}/localprolific/_control/submissions/{first['submission_id']}/return")

    assert returned.json()["status"] == "RETURNED"
    assert participant_factory().start(published.id).status_code == 201


def test_submissions_are_listed_across_pages(client_factory, participant_factory):
    client = client_factory(page_size=2)
    study = client.study_publish(client.study_create(study_spec(total_available_places=5)).id)
    started = [_done(participant_factory(), study, client) for _ in range(5)]

    listed = client.submissions_list(study.id)

    assert [s.id for s in listed] == [s["submission_id"] for s in started]
    assert {s.participant_id for s in listed} == {s["participant_id"] for s in started}
    assert {(s.study_id, s.status, s.study_code) for s in listed} == {(study.id, "AWAITING REVIEW", "C0DE1234")}
    assert all(s.started_at and s.completed_at and s.completed_at >= s.started_at for s in listed)


def test_approving_and_approving_again(client, published, participant_factory):
    _done(participant_factory(), published, client)
    submission = client.submissions_list(published.id)[0]

    approved = client.submission_approve(submission.id)
    again = client.submission_approve(submission.id)

    assert approved.status == again.status == "APPROVED"
    assert (approved.participant_id, approved.study_id) == (submission.participant_id, published.id)
    assert Submission.objects.get().status == "APPROVED"


def test_rejecting_with_a_reason_and_a_category(client, published, participant_factory):
    _done(participant_factory(), published, client)
    submission = client.submissions_list(published.id)[0]

    rejected = client.submission_reject(submission.id, message=REASON, category="FAILED_CHECK")

    assert rejected.status == "REJECTED"
    row = Submission.objects.get()
    assert (row.status, row.rejection_message, row.rejection_category) == ("REJECTED", REASON, "FAILED_CHECK")
    with pytest.raises(InvalidState) as refused:
        client.submission_approve(submission.id)
    assert "REJECTED" in refused.value.message


def test_a_rejection_prolific_would_refuse_is_refused_before_sending(client, published, participant_factory):
    _done(participant_factory(), published, client)
    submission = client.submissions_list(published.id)[0]

    with pytest.raises(wire.RequestInvalid) as short:
        client.submission_reject(submission.id, message="Too fast.", category="TOO_QUICKLY")
    with pytest.raises(wire.RequestInvalid) as unknown:
        client.submission_reject(submission.id, message=REASON, category="SLOPPY")

    assert "at least 100 characters" in short.value.message
    assert "SLOPPY" in unknown.value.message
    assert Submission.objects.get().status == "AWAITING REVIEW"


def test_work_in_progress_cannot_be_reviewed(client, published, participant_factory):
    started = participant_factory().started(published.id)

    with pytest.raises(InvalidState) as refused:
        client.submission_approve(started["submission_id"])

    assert "ACTIVE" in refused.value.message
    assert Submission.objects.get().status == "ACTIVE"


def test_reviewing_every_place_completes_the_study(client, published, participant_factory):
    for _ in range(3):
        _done(participant_factory(), published, client)
    submissions = client.submissions_list(published.id)
    assert client.study_get(published.id).status == "AWAITING REVIEW"

    client.submission_reject(submissions[0].id, message=REASON, category="LOW_EFFORT")
    assert client.study_get(published.id).status == "PAUSED"  # a place came free, as at Prolific

    for submission in submissions[1:]:
        client.submission_approve(submission.id)
    assert client.study_stop(published.id).status == "COMPLETED"


# ---- Bonuses -------------------------------------------------------------------------------


def test_a_bonus_is_set_up_and_paid_once(client, published, participant_factory, local_prolific):
    first, second = (_done(participant_factory(), published, client) for _ in range(2))

    bonus_id = client.bonus_pay(
        study_id=published.id, bonuses=[(first["participant_id"], D("0.50")), (second["submission_id"], D("1.25"))]
    )

    bulk = BulkBonus.objects.get()
    assert (bulk.bonus_id, bulk.amount, bulk.pay_requests) == (bonus_id, 175, 1)
    listed = requests.get(f"{local_prolific}/localprolific/_control/bonuses", params={"study": published.id}).json()
    assert [(p["participant_id"], p["amount"]) for p in listed["payments"]] == [
        (first["participant_id"], 50),
        (second["participant_id"], 125),
    ]


def test_a_lost_answer_to_paying_is_not_paid_again(client, published, participant_factory):
    done = _done(participant_factory(), published, client)
    faults.inject(lost_response=1, operations=["bonuses.pay"])

    with pytest.raises(prolific.BonusOutcomeUnknown) as unknown:
        client.bonus_pay(study_id=published.id, bonuses=[(done["participant_id"], D("1.00"))])

    bulk = BulkBonus.objects.get()
    assert unknown.value.bonus_payment_id == bulk.bonus_id
    assert BonusPayment.objects.count() == 1  # paid by the lost call, and only by it
    assert bulk.pay_requests == 1


def test_throttled_payment_is_retried_because_nothing_was_paid(client, published, participant_factory, waits):
    done = _done(participant_factory(), published, client)
    faults.inject(throttle=1, operations=["bonuses.pay"])

    client.bonus_pay(study_id=published.id, bonuses=[(done["participant_id"], D("1.00"))])

    assert BonusPayment.objects.count() == 1
    assert len(waits) == 1


def test_a_bonus_for_someone_who_did_not_take_part_is_refused(client, published):
    with pytest.raises(MarketplaceError) as refused:
        client.bonus_pay(study_id=published.id, bonuses=[("5f0c0ffee0c0ffee0c0ffee0", D("1.00"))])

    assert "has not taken part" in refused.value.message
    assert BulkBonus.objects.count() == 0


# ---- Faults and errors ---------------------------------------------------------------------


def test_throttling_is_retried_until_it_succeeds_with_growing_waits(client, published, waits):
    faults.inject(throttle=2)

    assert client.study_get(published.id).id == published.id
    assert len(waits) == 2
    assert 0.25 <= waits[0] <= 0.5 and 0.5 <= waits[1] <= 1.0  # 0.5 s doubling, jitter in [0.5, 1]


def test_retry_after_is_honoured(client, published, waits):
    faults.inject(throttle=1, retry_after=3)

    client.study_get(published.id)

    assert waits == [3.0]


def test_a_retry_after_beyond_patience_is_left_to_the_caller(client, published, waits):
    faults.inject(throttle=1, retry_after=600)

    with pytest.raises(MarketplaceUnavailable) as unavailable:
        client.study_get(published.id)

    assert "600 s" in unavailable.value.message
    assert waits == []


def test_a_persistent_service_fault_becomes_marketplace_unavailable(client_factory, waits):
    client = client_factory(attempts=3)
    faults.inject(service_fault=5)

    with pytest.raises(MarketplaceUnavailable) as unavailable:
        client.studies_list()

    assert "503" in unavailable.value.message
    assert len(waits) == 2
    assert faults.active()[0]["remaining"] == 2


def test_a_service_fault_on_create_does_not_create_twice(client, waits):
    faults.inject(service_fault=1, operations=["studies.create"])

    client.study_create(study_spec())

    assert Study.objects.count() == 1


def test_unknown_objects_are_not_found(client):
    with pytest.raises(NotFoundAtMarketplace):
        client.study_get("000000000000000000000000")
    with pytest.raises(NotFoundAtMarketplace):
        client.submission_approve("000000000000000000000000")
    with pytest.raises(NotFoundAtMarketplace):
        client.study_publish("000000000000000000000000")


def test_a_wrong_token_is_a_clear_error_that_does_not_repeat_the_token(client_factory):
    client = client_factory(token="not-the-workspace-token")

    with pytest.raises(MarketplaceError) as refused:
        client.studies_list()

    assert refused.value.code == "marketplace_unauthorized"
    assert "PROLIFIC_API_TOKEN" in refused.value.message
    assert "not-the-workspace-token" not in refused.value.message
    assert "not-the-workspace-token" not in repr(client)


def test_an_unreachable_endpoint_is_unavailable(waits):
    client = prolific.ProlificClient(base_url="http://127.0.0.1:9/api/v1/", token="t", attempts=2, timeout=1)

    with pytest.raises(MarketplaceUnavailable):
        client.studies_list()
    assert len(waits) == 1


def test_the_client_of_the_deployment_reaches_the_local_endpoint(local_prolific):
    with prolific.prolific_client() as client:
        study = client.study_create(study_spec())
        assert client.completion_url(study.completion_code) == (
            f"{local_prolific}/localprolific/submissions/complete?cc=C0DE1234"
        )


def test_a_stopped_study_gets_no_more_places(client, published):
    client.study_stop(published.id)

    with pytest.raises(InvalidState) as refused:
        client.study_places_increase(published.id, 6)

    assert "stopping is final" in refused.value.message
    assert Study.objects.get().total_available_places == 3
