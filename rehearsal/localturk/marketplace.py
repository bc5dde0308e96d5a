"""The worker side of the marketplace: find, accept, return, abandon and submit work.

Rules MTurk applies and the simulator keeps: a HIT is accepted only while Assignable, by a
worker not blocked by its requester, who meets the requirements guarding Accept and holds
no other live assignment of it. A returned or abandoned assignment frees its slot, and its
AssignmentId goes to the next worker who accepts that HIT (reference §7, pitfall 5).
Submissions need the assignmentId and at least one other field; a repeated submission of
the same assignment changes nothing.
"""

import re
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone
from rest_framework import status as http

from .errors import WorkerActionError
from .models import HIT, Assignment, WorkerBlock, new_entity_id
from .qualifications import requirements_unmet, worker_qualifications
from .questions import PREVIEW_ASSIGNMENT_ID, RESERVED_FIELDS, answers_xml
from .state import hit_refresh

Status = Assignment.Status
WORKER_ID = re.compile(r"^A[A-Z0-9]{1,63}$")


def worker_id_check(worker_id: str) -> str:
    if not WORKER_ID.match(worker_id):
        raise WorkerActionError(
            f"{worker_id!r} is not a WorkerId ('A' and capital letters or digits).",
            code="invalid_worker_id",
            http_status=http.HTTP_400_BAD_REQUEST,
        )
    return worker_id


def hits_for_worker(worker_id: str) -> list[HIT]:
    """Assignable HITs the worker can discover, oldest first (an expired one not yet swept left out)."""
    values = worker_qualifications(worker_id)
    alive = HIT.objects.filter(status=HIT.Status.ASSIGNABLE, expiration__gt=timezone.now())
    hits = alive.select_related("hit_type").order_by("pk")
    return [
        hit
        for hit in hits
        if not requirements_unmet(hit.hit_type.qualification_requirements, values, action="Discover")
    ]


def hit_for_preview(*, hit_id: str, worker_id: str) -> HIT:
    hit = _hit_get(hit_id)
    unmet = requirements_unmet(
        hit.hit_type.qualification_requirements, worker_qualifications(worker_id), action="Preview"
    )
    if unmet:
        raise _not_qualified(unmet)
    return hit


def assignment_accept(*, hit_id: str, worker_id: str, now: datetime | None = None) -> Assignment:
    """Give the worker a slot of the HIT; accepting again returns the worker's open assignment."""
    now = now or timezone.now()
    worker_id_check(worker_id)
    with transaction.atomic():
        hit = _hit_get(hit_id, lock=True)
        held = hit.assignments.filter(worker_id=worker_id, status__in=Assignment.LIVE).first()
        if held and held.status == Status.ACCEPTED and held.deadline <= now:
            Assignment.objects.filter(pk=held.pk, status=Status.ACCEPTED).update(status=Status.ABANDONED)
        elif held and held.status == Status.ACCEPTED:
            return held
        elif held:
            raise WorkerActionError("You already worked on this HIT.", code="already_worked")
        if WorkerBlock.objects.filter(requester_id=hit.requester_id, worker_id=worker_id).exists():
            raise WorkerActionError(
                "The requester has blocked you.", code="blocked", http_status=http.HTTP_403_FORBIDDEN
            )
        unmet = requirements_unmet(
            hit.hit_type.qualification_requirements, worker_qualifications(worker_id), action="Accept"
        )
        if unmet:
            raise _not_qualified(unmet)
        hit_refresh(hit=hit, now=now)
        if hit.status != HIT.Status.ASSIGNABLE:
            raise WorkerActionError(f"This HIT is {hit.status} and cannot be accepted.", code="not_available")
        assignment = Assignment.objects.create(
            assignment_id=_free_assignment_id(hit) or new_entity_id(),
            hit=hit,
            worker_id=worker_id,
            accept_time=now,
            deadline=now + timedelta(seconds=hit.hit_type.assignment_duration),
        )
        hit_refresh(hit=hit, now=now)
    return assignment


def assignment_open(*, assignment_id: str, worker_id: str) -> Assignment:
    """The worker's accepted, unsubmitted assignment."""
    assignment = (
        Assignment.objects.select_related("hit__hit_type")
        .filter(assignment_id=assignment_id, worker_id=worker_id, status=Status.ACCEPTED)
        .first()
    )
    if assignment is None:
        raise WorkerActionError(
            "You hold no open assignment with this id.",
            code="assignment_not_found",
            http_status=http.HTTP_404_NOT_FOUND,
        )
    return assignment


def assignment_release(
    *, assignment_id: str, worker_id: str, abandon: bool = False, now: datetime | None = None
) -> Assignment:
    """Return (or abandon) an accepted assignment; its slot and id go back to the HIT."""
    now = now or timezone.now()
    with transaction.atomic():
        assignment = assignment_open(assignment_id=assignment_id, worker_id=worker_id)
        target = Status.ABANDONED if abandon else Status.RETURNED
        if not Assignment.objects.filter(pk=assignment.pk, status=Status.ACCEPTED).update(status=target):
            raise WorkerActionError("This assignment is no longer open.", code="invalid_state")
        hit_refresh(hit=HIT.objects.select_for_update().get(pk=assignment.hit_id), now=now)
    assignment.status = target
    return assignment


def assignment_submit(*, fields: list[tuple[str, str]], now: datetime | None = None) -> Assignment:
    """Record posted form fields as the answer of the assignment named by `assignmentId`."""
    now = now or timezone.now()
    assignment_id = next((value for name, value in fields if name == "assignmentId"), "")
    if not assignment_id or assignment_id == PREVIEW_ASSIGNMENT_ID:
        raise WorkerActionError(
            "Accept the HIT before submitting it (no assignmentId).",
            code="invalid_submission",
            http_status=http.HTTP_400_BAD_REQUEST,
        )
    if not any(name not in RESERVED_FIELDS for name, _ in fields):
        raise WorkerActionError(
            "The HIT was not submitted correctly: it posted no answer field.",
            code="invalid_submission",
            http_status=http.HTTP_400_BAD_REQUEST,
        )
    with transaction.atomic():
        rows = Assignment.objects.select_related("hit__hit_type").filter(assignment_id=assignment_id)
        assignment = rows.filter(status__in=Assignment.LIVE).first() or rows.order_by("-pk").first()
        if assignment is None:
            raise WorkerActionError(
                f"Assignment {assignment_id} does not exist.",
                code="assignment_not_found",
                http_status=http.HTTP_404_NOT_FOUND,
            )
        if assignment.status in Assignment.VISIBLE:
            return assignment
        if assignment.status != Status.ACCEPTED or assignment.deadline <= now:
            raise WorkerActionError(
                "This assignment was returned, abandoned or is past its deadline.", code="invalid_state"
            )
        submitted = {
            "status": Status.SUBMITTED,
            "submit_time": now,
            "auto_approval_time": now + timedelta(seconds=assignment.hit.hit_type.auto_approval_delay),
            "answer": answers_xml(fields),
        }
        if not Assignment.objects.filter(pk=assignment.pk, status=Status.ACCEPTED).update(**submitted):
            raise WorkerActionError("This assignment is no longer open.", code="invalid_state")
        hit_refresh(hit=HIT.objects.select_for_update().get(pk=assignment.hit_id), now=now)
    for name, value in submitted.items():
        setattr(assignment, name, value)
    return assignment


def _hit_get(hit_id: str, *, lock: bool = False) -> HIT:
    hits = HIT.objects.select_related("hit_type").exclude(status=HIT.Status.DISPOSED)
    if lock:
        hits = hits.select_for_update(of=("self",))
    hit = hits.filter(hit_id=hit_id).first()
    if hit is None:
        raise WorkerActionError(
            f"HIT {hit_id} does not exist.", code="hit_not_found", http_status=http.HTTP_404_NOT_FOUND
        )
    return hit


def _free_assignment_id(hit: HIT) -> str | None:
    """An AssignmentId of the HIT released by an earlier worker and not handed out again."""
    live = hit.assignments.filter(status__in=Assignment.LIVE).values("assignment_id")
    released = hit.assignments.filter(status__in=(Status.RETURNED, Status.ABANDONED)).exclude(assignment_id__in=live)
    return released.order_by("pk").values_list("assignment_id", flat=True).first()


def _not_qualified(unmet: list[dict]) -> WorkerActionError:
    names = ", ".join(requirement["QualificationTypeId"] for requirement in unmet)
    return WorkerActionError(
        f"You do not meet the qualification requirements ({names}).",
        code="not_qualified",
        http_status=http.HTTP_403_FORBIDDEN,
    )
