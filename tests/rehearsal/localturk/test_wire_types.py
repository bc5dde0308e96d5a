"""Every implemented operation's response, as boto3 parses it, fits the model's output shape:
strings are str (Reward, BonusAmount, AvailableBalance too), numbers int, timestamps aware
datetimes, and no member outside the shape."""

from datetime import datetime

import pytest

from rehearsal.localturk.operations import HANDLERS
from rehearsal.localturk.validation import operation_model

from .conftest import EXTERNAL_QUESTION, HIT_TYPE

pytestmark = pytest.mark.mturk


def _check(value, shape, path):
    kind = shape.type_name
    if kind == "structure":
        assert isinstance(value, dict), path
        unknown = set(value) - set(shape.members)
        assert not unknown, f"{path}: {unknown}"
        for name, member in value.items():
            _check(member, shape.members[name], f"{path}.{name}")
    elif kind == "list":
        assert isinstance(value, list), path
        for index, item in enumerate(value):
            _check(item, shape.member, f"{path}[{index}]")
    elif kind == "string":
        assert isinstance(value, str), path
    elif kind in ("integer", "long"):
        assert isinstance(value, int) and not isinstance(value, bool), path
    elif kind == "boolean":
        assert isinstance(value, bool), path
    elif kind == "timestamp":
        assert isinstance(value, datetime) and value.tzinfo is not None, path


def test_responses_fit_the_model(mturk, worker_factory):
    seen = {}

    def call(operation, method, **params):
        response = getattr(mturk, method)(**params)
        response.pop("ResponseMetadata")
        _check(response, operation_model(operation).output_shape, operation)
        seen[operation] = response
        return response

    type_id = call("CreateHITType", "create_hit_type", **HIT_TYPE)["HITTypeId"]
    hit = call(
        "CreateHIT", "create_hit", **HIT_TYPE, LifetimeInSeconds=600, Question=EXTERNAL_QUESTION, MaxAssignments=3
    )["HIT"]
    call(
        "CreateHITWithHITType",
        "create_hit_with_hit_type",
        HITTypeId=type_id,
        LifetimeInSeconds=600,
        Question=hit["Question"],
        RequesterAnnotation="x",
    )
    worker = worker_factory("A1WORKER00001")
    first = worker.complete(hit["HITId"])
    second = worker_factory("A1WORKER00002").complete(hit["HITId"])
    call("GetHIT", "get_hit", HITId=hit["HITId"])
    call("ListHITs", "list_hits", MaxResults=1)
    call("ListAssignmentsForHIT", "list_assignments_for_hit", HITId=hit["HITId"], MaxResults=1)
    call("GetAssignment", "get_assignment", AssignmentId=first)
    call("ApproveAssignment", "approve_assignment", AssignmentId=first)
    call("RejectAssignment", "reject_assignment", AssignmentId=second, RequesterFeedback="No.")
    call(
        "SendBonus",
        "send_bonus",
        WorkerId="A1WORKER00001",
        AssignmentId=first,
        BonusAmount="0.50",
        Reason="Thanks",
        UniqueRequestToken="b1",
    )
    call("ListBonusPayments", "list_bonus_payments", HITId=hit["HITId"])
    call("GetAccountBalance", "get_account_balance")
    call("CreateWorkerBlock", "create_worker_block", WorkerId="A1WORKER00002", Reason="Spam")
    call("ListWorkerBlocks", "list_worker_blocks")
    call("DeleteWorkerBlock", "delete_worker_block", WorkerId="A1WORKER00002")
    call("NotifyWorkers", "notify_workers", Subject="Hi", MessageText="Hello", WorkerIds=["A1WORKER00001", "A1X"])
    call(
        "CreateAdditionalAssignmentsForHIT",
        "create_additional_assignments_for_hit",
        HITId=hit["HITId"],
        NumberOfAdditionalAssignments=1,
    )
    call("UpdateExpirationForHIT", "update_expiration_for_hit", HITId=hit["HITId"], ExpireAt=0)
    call("ListReviewableHITs", "list_reviewable_hits")
    call("UpdateHITReviewStatus", "update_hit_review_status", HITId=hit["HITId"])
    call("DeleteHIT", "delete_hit", HITId=hit["HITId"])

    assert set(seen) == set(HANDLERS)
    assert isinstance(seen["GetHIT"]["HIT"]["Reward"], str)
    assert isinstance(seen["GetAccountBalance"]["AvailableBalance"], str)
    assert seen["ListHITs"]["NumResults"] == 1 and "NextToken" in seen["ListHITs"]
