"""Every request the app sends, checked against MTurk's service model; every answer of the
local endpoint, checked against the model's output shapes.

The calls are recorded with botocore event hooks on the app's own client while the app
publishes, recovers a HIT by token, syncs, reviews, pays, blocks, unblocks, expires, deletes
and reads the balance. Inputs go through botocore.validate (required members, types, minimums) and
through the constraints MTurk checks itself (maximums, patterns, enums); parsed outputs go
through botocore.validate against the output shapes, so a string sent as a number, or a
timestamp botocore could not parse, fails here.
"""

import copy
import uuid
from datetime import timedelta
from decimal import Decimal as D

import botocore.session
import pytest
from botocore.validate import validate_parameters
from django.utils import timezone

from crowd.marketplaces.base import Publication, WorkType
from crowd.marketplaces.mturk import client as mturk
from crowd.marketplaces.registry import get_marketplace
from crowd.models import HIT, Assignment, WorkerQuality
from crowd.work import review
from crowd.work.expiry import batch_expire
from crowd.work.publishing import batch_publish, requirements_for
from crowd.work.sync import assignments_sync
from rehearsal.localturk.validation import params_validate
from tests.factories import CampaignFactory

from .factories import likert_batch

pytestmark = pytest.mark.mturk

OPERATIONS_USED = {
    "CreateHITType",
    "CreateHITWithHITType",
    "GetHIT",
    "ListHITs",
    "ListReviewableHITs",
    "ListAssignmentsForHIT",
    "GetAssignment",
    "ApproveAssignment",
    "RejectAssignment",
    "CreateWorkerBlock",
    "DeleteWorkerBlock",
    "SendBonus",
    "UpdateExpirationForHIT",
    "DeleteHIT",
    "GetAccountBalance",
}


@pytest.fixture
def recorded(local_turk, monkeypatch):
    # The app's two clients: the patient one, and the quick one for reads a page waits for.
    clients = [local_turk.client, mturk.client_create("local", quick=True)]
    requests, responses = [], []

    def on_params(params, model, **kwargs):
        requests.append((model.name, copy.deepcopy(params)))

    def on_response(http_response, parsed, model, **kwargs):
        responses.append((model.name, http_response.status_code, copy.deepcopy(parsed)))

    for client in clients:
        client.meta.events.register("provide-client-params.mturk", on_params, unique_id="wire-requests")
        client.meta.events.register("after-call.mturk", on_response, unique_id="wire-responses")
    yield requests, responses
    for client in clients:
        client.meta.events.unregister("provide-client-params.mturk", unique_id="wire-requests")
        client.meta.events.unregister("after-call.mturk", unique_id="wire-responses")


def _everything_the_app_does(local_turk):
    # Three slots, two answered: expiring the batch then stops the HIT's free one.
    batch = likert_batch(propositions=5, assignments_per_hit=3)
    campaign = batch.topic.campaign
    batch_publish(batch_id=batch.pk)
    hit = HIT.objects.get(task__batch=batch)
    market = get_marketplace(campaign)
    # A HIT type as sandbox and production campaigns ask for it: with requirements.
    guarded = CampaignFactory(environment="sandbox")
    market.work_type_create(
        WorkType(
            title="t",
            description="d",
            keywords="k",
            reward=D("0.05"),
            assignment_duration_seconds=600,
            auto_approval_delay_seconds=86400,
            requirements=requirements_for(campaign=guarded),
        )
    )
    # The same token again: HitAlreadyExists, recovered through GetHIT.
    again = market.hit_publish(
        work_type_id=hit.hit_type_id,
        publication=Publication(
            url=f"{local_turk.base_url}/hit/{hit.task.uuid}/",
            max_assignments=2,
            lifetime_seconds=3600,
            token=str(hit.task.uuid),
        ),
    )
    assert again.hit_id == hit.hit_id
    # When the refusal names no HIT, the HIT is found by its URL in ListHITs.
    market._hit_recover(message="Duplicate token.", url=f"{local_turk.base_url}/hit/{hit.task.uuid}/")
    for worker_id in ("AWORKERONE0001", "AWORKERTWO0002"):
        local_turk.worker(worker_id).complete(hit.hit_id)
    assignments_sync()
    first, second = Assignment.objects.order_by("pk")
    market.assignment_get(first.assignment_id)
    review.assignment_approve(assignment_id=first.pk)
    review.assignment_reject(assignment_id=second.pk, reason="Identical answers.")
    review.bonus_grant(assignment_id=first.pk, amount=D("0.25"), reason="Thank you.")
    review.worker_block(worker_id=second.worker_id, campaign_id=campaign.pk, reason="Spam.")
    review.worker_unblock(worker_id=second.worker_id, campaign_id=campaign.pk, reason="Appeal accepted.")
    batch_expire(batch_id=batch.pk)
    # Quality control ran after the sync; make its run later than the submission for approval.
    WorkerQuality.objects.update_or_create(
        campaign=campaign, worker_id=first.worker_id, defaults={"computed_at": timezone.now()}
    )
    assignments_sync(now=timezone.now() + timedelta(hours=1))  # complete → DeleteHIT
    market.balance()
    assert HIT.objects.get().deleted


def test_every_request_fits_the_service_model(local_turk, recorded):
    requests, _ = recorded
    model = botocore.session.get_session().get_service_model("mturk")

    _everything_the_app_does(local_turk)

    assert {operation for operation, _ in requests} == OPERATIONS_USED
    for operation, params in requests:
        validate_parameters(params, model.operation_model(operation).input_shape)
        params_validate(operation, params)  # maximums, patterns and enums, as MTurk checks them
    reward = next(params["Reward"] for operation, params in requests if operation == "CreateHITType")
    assert reward == "0.06"
    token = next(params["UniqueRequestToken"] for operation, params in requests if operation == "CreateHITWithHITType")
    assert uuid.UUID(token)
    statuses = next(
        params["AssignmentStatuses"] for operation, params in requests if operation == "ListAssignmentsForHIT"
    )
    assert statuses == ["Submitted", "Approved", "Rejected"]


def test_every_response_of_the_local_endpoint_parses_into_the_output_shapes(local_turk, recorded):
    _, responses = recorded
    model = botocore.session.get_session().get_service_model("mturk")

    _everything_the_app_does(local_turk)

    ok = [(operation, parsed) for operation, status, parsed in responses if status == 200]
    assert {operation for operation, _ in ok} == OPERATIONS_USED
    for operation, parsed in ok:
        body = {key: value for key, value in parsed.items() if key != "ResponseMetadata"}
        validate_parameters(body, model.operation_model(operation).output_shape)
    refused = [
        (operation, parsed["Error"]["Code"], parsed.get("TurkErrorCode"))
        for operation, status, parsed in responses
        if status != 200
    ]
    assert refused == [("CreateHITWithHITType", "RequestError", "AWS.MechanicalTurk.HitAlreadyExists")]
