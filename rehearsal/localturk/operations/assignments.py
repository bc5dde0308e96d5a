"""Assignments and money: list, get, approve, reject, bonus, balance (reference §2.6-2.10, §2.15).

Approve and reject act only on Submitted work (approve also on Rejected work with
OverrideRejection, within 30 days); anything else is InvalidAssignmentState, as a double
approve is at MTurk.
"""

from datetime import datetime, timedelta
from decimal import Decimal

from .. import billing, wire
from ..errors import INVALID_ASSIGNMENT_STATE, RequestError
from ..idempotency import token_require_new
from ..models import Assignment, Bonus, Requester
from ..pagination import page
from ..state import assignment_approve, hit_completed_count
from .lookup import assignment_for, hit_for

Status = Assignment.Status
OVERRIDE_WINDOW = timedelta(days=30)


def assignments_list(*, requester: Requester, params: dict, now: datetime) -> dict:
    hit = hit_for(requester, params["HITId"])
    statuses = sorted(set(params.get("AssignmentStatuses") or Assignment.VISIBLE))
    assignments = hit.assignments.filter(status__in=statuses)  # each row's .hit is `hit`, no join
    query = {"op": "ListAssignmentsForHIT", "requester": requester.pk, "hit": hit.pk, "statuses": statuses}
    items, members = page(assignments, params, query=query)
    return {"Assignments": [wire.assignment_wire(a) for a in items], **members}


def assignment_get(*, requester: Requester, params: dict, now: datetime) -> dict:
    assignment = assignment_for(requester, params["AssignmentId"], statuses=Assignment.VISIBLE)
    return {"Assignment": wire.assignment_wire(assignment), "HIT": wire.hit_wire(assignment.hit)}


def assignment_approve_call(*, requester: Requester, params: dict, now: datetime) -> dict:
    assignment = assignment_for(requester, params["AssignmentId"])
    override = params.get("OverrideRejection", False)
    if override and assignment.status == Status.REJECTED:
        assert assignment.submit_time is not None, "only a submitted assignment is rejected"
        if assignment.submit_time < now - OVERRIDE_WINDOW:
            raise RequestError("This rejection can no longer be overridden.", code=INVALID_ASSIGNMENT_STATE)
    approved = assignment_approve(
        assignment=assignment,
        at=now,
        feedback=params.get("RequesterFeedback", ""),
        override_rejection=override,
        completed=not override,  # a rejection overridden was counted completed already
    )
    if not approved:
        raise _state_error(Status.REJECTED if override else Status.SUBMITTED)
    return {}


def assignment_reject(*, requester: Requester, params: dict, now: datetime) -> dict:
    feedback = params["RequesterFeedback"]
    if not feedback.strip():
        raise RequestError("RequesterFeedback is required to reject an assignment.")
    assignment = assignment_for(requester, params["AssignmentId"])
    updated = Assignment.objects.filter(pk=assignment.pk, status=Status.SUBMITTED).update(
        status=Status.REJECTED, rejection_time=now, requester_feedback=feedback
    )
    if not updated:
        raise _state_error(Status.SUBMITTED)
    hit_completed_count(hit_id=assignment.hit_id)
    return {}


def bonus_send(*, requester: Requester, params: dict, now: datetime) -> dict:
    """Pay a bonus on one of the worker's assignments; a repeated token pays nothing."""
    assignment = assignment_for(requester, params["AssignmentId"], statuses=Assignment.VISIBLE)
    if assignment.worker_id != params["WorkerId"]:
        raise RequestError(f"Assignment {assignment.assignment_id} does not belong to worker {params['WorkerId']}.")
    if "UniqueRequestToken" in params:
        token_require_new(requester=requester, operation="SendBonus", token=params["UniqueRequestToken"], now=now)
    amount = Decimal(params["BonusAmount"]).quantize(billing.CENT)
    billing.requester_charge(requester_id=requester.pk, amount=billing.bonus_cost(amount))
    Bonus.objects.create(
        requester=requester,
        assignment=assignment,
        worker_id=assignment.worker_id,
        amount=amount,
        reason=params["Reason"],
        granted_at=now,
    )
    return {}


def bonuses_list(*, requester: Requester, params: dict, now: datetime) -> dict:
    if ("HITId" in params) == ("AssignmentId" in params):
        raise RequestError("Specify either HITId or AssignmentId.")
    bonuses = Bonus.objects.select_related("assignment").filter(requester=requester)
    if "HITId" in params:
        bonuses = bonuses.filter(assignment__hit=hit_for(requester, params["HITId"]))
    else:
        bonuses = bonuses.filter(assignment__assignment_id=params["AssignmentId"])
    query = {
        "op": "ListBonusPayments",
        "requester": requester.pk,
        "hit": params.get("HITId"),
        "assignment": params.get("AssignmentId"),
    }
    items, members = page(bonuses, params, query=query)
    return {"BonusPayments": [wire.bonus_wire(bonus) for bonus in items], **members}


def balance_get(*, requester: Requester, params: dict, now: datetime) -> dict:
    requester.refresh_from_db(fields=["balance"])
    return {"AvailableBalance": wire.amount(requester.balance)}


def _state_error(allowed: str) -> RequestError:
    return RequestError(f"This operation can be called with a status of: {allowed}", code=INVALID_ASSIGNMENT_STATE)
