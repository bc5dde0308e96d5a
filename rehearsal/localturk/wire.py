"""Output shapes: HIT, Assignment and friends as MTurk's JSON (reference §1.2, §2.0).

Timestamps are epoch seconds (JSON numbers, millisecond precision); money is a string with
two decimals; optional members are left out rather than sent as null.
"""

from datetime import datetime
from decimal import Decimal

from .models import HIT, Assignment, Bonus, WorkerBlock


def timestamp(moment: datetime) -> float:
    return round(moment.timestamp(), 3)


def amount(value: Decimal) -> str:
    return f"{value:.2f}"


def hit_wire(hit: HIT) -> dict:
    hit_type = hit.hit_type
    body = {
        "HITId": hit.hit_id,
        "HITTypeId": hit_type.type_id,
        "HITGroupId": hit_type.group_id,
        "CreationTime": timestamp(hit.created_at),
        "Title": hit_type.title,
        "Description": hit_type.description,
        "Question": hit.question,
        "HITStatus": hit.status,
        "MaxAssignments": hit.max_assignments,
        "Reward": amount(hit_type.reward),
        "AutoApprovalDelayInSeconds": hit_type.auto_approval_delay,
        "Expiration": timestamp(hit.expiration),
        "AssignmentDurationInSeconds": hit_type.assignment_duration,
        "QualificationRequirements": hit_type.qualification_requirements,
        "HITReviewStatus": "NotReviewed",
        "NumberOfAssignmentsPending": hit.pending,
        "NumberOfAssignmentsAvailable": hit.available,
        "NumberOfAssignmentsCompleted": hit.completed,
    }
    if hit_type.keywords:
        body["Keywords"] = hit_type.keywords
    if hit.requester_annotation:
        body["RequesterAnnotation"] = hit.requester_annotation
    return body


def assignment_wire(assignment: Assignment) -> dict:
    body = {
        "AssignmentId": assignment.assignment_id,
        "WorkerId": assignment.worker_id,
        "HITId": assignment.hit.hit_id,
        "AssignmentStatus": assignment.status,
        "AcceptTime": timestamp(assignment.accept_time),
        "Deadline": timestamp(assignment.deadline),
        "Answer": assignment.answer,
    }
    for member, moment in (
        ("SubmitTime", assignment.submit_time),
        ("AutoApprovalTime", assignment.auto_approval_time),
        ("ApprovalTime", assignment.approval_time),
        ("RejectionTime", assignment.rejection_time),
    ):
        if moment is not None:
            body[member] = timestamp(moment)
    if assignment.requester_feedback:
        body["RequesterFeedback"] = assignment.requester_feedback
    return body


def block_wire(block: WorkerBlock) -> dict:
    return {"WorkerId": block.worker_id, "Reason": block.reason}


def bonus_wire(bonus: Bonus) -> dict:
    return {
        "WorkerId": bonus.worker_id,
        "BonusAmount": amount(bonus.amount),
        "AssignmentId": bonus.assignment.assignment_id,
        "Reason": bonus.reason,
        "GrantTime": timestamp(bonus.granted_at),
    }
