"""Assignments, review and money through real boto3, with work done on the simulator."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from xml.etree import ElementTree

import pytest

from rehearsal.localturk import state
from rehearsal.localturk.models import HIT, Assignment, Bonus, Requester
from rehearsal.localturk.questions import ANSWERS_NS

from .conftest import hit_create

pytestmark = pytest.mark.mturk


def _answers(xml: str) -> dict:
    root = ElementTree.fromstring(xml)
    ns = {"q": ANSWERS_NS}
    return {
        a.findtext("q:QuestionIdentifier", namespaces=ns): a.findtext("q:FreeText", namespaces=ns)
        for a in root.findall("q:Answer", ns)
    }


def _balance(mturk) -> Decimal:
    return Decimal(mturk.get_account_balance()["AvailableBalance"])


def test_submitted_work_is_listed_with_its_answer(mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id)
    worker = worker_factory("A2YUCJ28XANFOX")

    assignment_id = worker.complete(hit["HITId"], score="4", comment="café <ok>", hitId="ignored")

    listed = mturk.list_assignments_for_hit(HITId=hit["HITId"], AssignmentStatuses=["Submitted"])
    (assignment,) = listed["Assignments"]
    assert assignment["AssignmentId"] == assignment_id
    assert assignment["WorkerId"] == "A2YUCJ28XANFOX"
    assert assignment["AssignmentStatus"] == "Submitted"
    assert _answers(assignment["Answer"]) == {"score": "4", "comment": "café <ok>"}
    assert assignment["Answer"].startswith('<?xml version="1.0" encoding="ASCII"?>')
    assert assignment["AutoApprovalTime"] - assignment["SubmitTime"] == timedelta(days=1)
    assert assignment["Deadline"] - assignment["AcceptTime"] == timedelta(minutes=10)
    got = mturk.get_assignment(AssignmentId=assignment_id)
    assert got["Assignment"]["AssignmentId"] == assignment_id and got["HIT"]["HITId"] == hit["HITId"]
    counters = mturk.get_hit(HITId=hit["HITId"])["HIT"]
    assert (counters["NumberOfAssignmentsAvailable"], counters["NumberOfAssignmentsPending"]) == (2, 0)
    assert mturk.list_assignments_for_hit(HITId=hit["HITId"], AssignmentStatuses=["Approved"])["Assignments"] == []


def test_accepted_work_is_invisible_to_the_requester(mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id)
    assignment_id = worker_factory("A1WORKER00001").accept(hit["HITId"]).json()["assignmentId"]

    with pytest.raises(mturk.exceptions.RequestError) as error:
        mturk.get_assignment(AssignmentId=assignment_id)

    assert error.value.response["TurkErrorCode"] == "AWS.MechanicalTurk.AssignmentDoesNotExist"
    assert mturk.list_assignments_for_hit(HITId=hit["HITId"])["Assignments"] == []
    assert mturk.get_hit(HITId=hit["HITId"])["HIT"]["NumberOfAssignmentsPending"] == 1


def test_list_assignments_pages_through_more_than_a_hundred(mturk, hit_type_id):
    hit = hit_create(mturk, hit_type_id, MaxAssignments=250)
    row = HIT.objects.get(hit_id=hit["HITId"])
    now = datetime.now(UTC)
    Assignment.objects.bulk_create(
        Assignment(
            assignment_id=f"{n:030d}",
            hit=row,
            worker_id=f"A{n:013d}",
            status=Assignment.Status.SUBMITTED,
            accept_time=now,
            deadline=now + timedelta(minutes=10),
            submit_time=now,
            auto_approval_time=now + timedelta(days=1),
            answer="<x/>",
        )
        for n in range(230)
    )

    pages = list(
        mturk.get_paginator("list_assignments_for_hit").paginate(
            HITId=hit["HITId"], AssignmentStatuses=["Submitted"], PaginationConfig={"PageSize": 100}
        )
    )

    ids = [a["AssignmentId"] for page in pages for a in page["Assignments"]]
    assert [page["NumResults"] for page in pages] == [100, 100, 30]
    assert sorted(ids) == [f"{n:030d}" for n in range(230)]
    assert "NextToken" not in pages[-1]


def test_approve_charges_reward_and_fee_once(mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id)
    assignment_id = worker_factory("A1WORKER00001").complete(hit["HITId"])
    before = _balance(mturk)

    mturk.approve_assignment(AssignmentId=assignment_id, RequesterFeedback="Thanks")
    with pytest.raises(mturk.exceptions.RequestError) as again:
        mturk.approve_assignment(AssignmentId=assignment_id)

    assert before == Decimal("10000.00")
    assert _balance(mturk) == before - Decimal("0.07")  # $0.06 + the $0.01 minimum fee
    assert again.value.response["TurkErrorCode"] == "AWS.MechanicalTurk.InvalidAssignmentState"
    assert "status of: Submitted" in again.value.response["Error"]["Message"]
    approved = mturk.get_assignment(AssignmentId=assignment_id)["Assignment"]
    assert approved["AssignmentStatus"] == "Approved" and approved["RequesterFeedback"] == "Thanks"
    assert mturk.get_hit(HITId=hit["HITId"])["HIT"]["NumberOfAssignmentsCompleted"] == 1


def test_ten_assignments_or_more_cost_the_higher_fee(mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id, MaxAssignments=10)
    Requester.objects.update(balance=Decimal("1.00"))
    assignment_id = worker_factory("A1WORKER00001").complete(hit["HITId"])

    mturk.approve_assignment(AssignmentId=assignment_id)

    assert _balance(mturk) == Decimal("1.00") - Decimal("0.06") - Decimal("0.02")  # 40 % of 0.06, rounded


def test_approval_fails_without_funds_and_changes_nothing(mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id)
    assignment_id = worker_factory("A1WORKER00001").complete(hit["HITId"])
    Requester.objects.update(balance=Decimal("0.05"))

    with pytest.raises(mturk.exceptions.RequestError) as error:
        mturk.approve_assignment(AssignmentId=assignment_id)

    assert error.value.response["TurkErrorCode"] == "AWS.MechanicalTurk.InsufficientFunds"
    assert Assignment.objects.get(assignment_id=assignment_id).status == "Submitted"
    assert _balance(mturk) == Decimal("0.05")


def test_reject_needs_feedback_and_charges_nothing(mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id)
    assignment_id = worker_factory("A1WORKER00001").complete(hit["HITId"])

    with pytest.raises(mturk.exceptions.RequestError):
        mturk.reject_assignment(AssignmentId=assignment_id, RequesterFeedback=" ")
    mturk.reject_assignment(AssignmentId=assignment_id, RequesterFeedback="You rated the trap high.")
    with pytest.raises(mturk.exceptions.RequestError) as again:
        mturk.approve_assignment(AssignmentId=assignment_id)

    rejected = mturk.get_assignment(AssignmentId=assignment_id)["Assignment"]
    assert rejected["AssignmentStatus"] == "Rejected"
    assert rejected["RequesterFeedback"] == "You rated the trap high."
    assert again.value.response["TurkErrorCode"] == "AWS.MechanicalTurk.InvalidAssignmentState"
    assert _balance(mturk) == Decimal("10000.00")


def test_override_rejection_approves_and_pays(mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id)
    assignment_id = worker_factory("A1WORKER00001").complete(hit["HITId"])
    mturk.reject_assignment(AssignmentId=assignment_id, RequesterFeedback="Too fast.")

    mturk.approve_assignment(AssignmentId=assignment_id, OverrideRejection=True)

    assert mturk.get_assignment(AssignmentId=assignment_id)["Assignment"]["AssignmentStatus"] == "Approved"
    assert _balance(mturk) == Decimal("9999.93")


def test_auto_approval_after_the_delay(mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id)
    assignment_id = worker_factory("A1WORKER00001").complete(hit["HITId"])
    due = datetime.now(UTC) - timedelta(seconds=1)
    Assignment.objects.filter(assignment_id=assignment_id).update(auto_approval_time=due)
    state.next_tick_sweeps()  # as after a second: the sweep runs at most once a second

    assignment = mturk.get_assignment(AssignmentId=assignment_id)["Assignment"]

    assert assignment["AssignmentStatus"] == "Approved"
    assert abs(assignment["ApprovalTime"] - due) < timedelta(milliseconds=2)
    assert _balance(mturk) == Decimal("9999.93")
    with pytest.raises(mturk.exceptions.RequestError):
        mturk.reject_assignment(AssignmentId=assignment_id, RequesterFeedback="Too late.")


def test_bonus_is_paid_once_per_token(mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id)
    assignment_id = worker_factory("A1WORKER00001").complete(hit["HITId"])
    bonus = {
        "WorkerId": "A1WORKER00001",
        "AssignmentId": assignment_id,
        "BonusAmount": "1.00",
        "Reason": "Great work",
        "UniqueRequestToken": "bonus-1",
    }

    mturk.send_bonus(**bonus)
    with pytest.raises(mturk.exceptions.RequestError) as again:
        mturk.send_bonus(**bonus)

    assert "bonus-1" in again.value.response["Error"]["Message"]
    assert _balance(mturk) == Decimal("10000.00") - Decimal("1.20")
    payments = mturk.list_bonus_payments(AssignmentId=assignment_id)["BonusPayments"]
    assert [(p["WorkerId"], p["BonusAmount"], p["Reason"]) for p in payments] == [
        ("A1WORKER00001", "1.00", "Great work")
    ]
    assert Bonus.objects.count() == 1


def test_bonus_needs_the_workers_own_assignment(mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id)
    assignment_id = worker_factory("A1WORKER00001").complete(hit["HITId"])

    with pytest.raises(mturk.exceptions.RequestError):
        mturk.send_bonus(WorkerId="A1WORKER00002", AssignmentId=assignment_id, BonusAmount="1.00", Reason="x")

    assert Bonus.objects.count() == 0
    assert _balance(mturk) == Decimal("10000.00")
