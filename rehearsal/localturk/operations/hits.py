"""HIT types and HITs: create, read, list, expire, review status, delete, extend.

Each handler takes the calling requester, the validated parameters and the request time,
runs inside the request's transaction and returns the response members (reference §2).
"""

import hashlib
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from botocore.utils import parse_timestamp

from .. import wire
from ..errors import (
    HIT_ALREADY_EXISTS,
    HIT_TYPE_DOES_NOT_EXIST,
    INVALID_HIT_STATE,
    INVALID_MAXIMUM_ASSIGNMENTS_INCREASE,
    PARAMETER_OUT_OF_RANGE,
    UNSUPPORTED,
    RequestError,
)
from ..idempotency import token_claim, token_require_new
from ..models import HIT, Assignment, HITType, Requester
from ..pagination import page
from ..questions import external_question_parse
from ..state import hit_refresh
from ..validation import RANGES
from .lookup import hit_for

DEFAULT_AUTO_APPROVAL_DELAY = 2_592_000
MANY_ASSIGNMENTS = 10


def hit_type_create(*, requester: Requester, params: dict, now: datetime) -> dict:
    return {"HITTypeId": _hit_type_get_or_create(requester, params).type_id}


def hit_create(*, requester: Requester, params: dict, now: datetime) -> dict:
    hit_type = _hit_type_get_or_create(requester, params)
    return {"HIT": wire.hit_wire(_hit_create(requester, hit_type, params, now))}


def hit_with_type_create(*, requester: Requester, params: dict, now: datetime) -> dict:
    hit_type = HITType.objects.filter(requester=requester, type_id=params["HITTypeId"]).first()
    if hit_type is None:
        raise RequestError(f"HITType {params['HITTypeId']} does not exist.", code=HIT_TYPE_DOES_NOT_EXIST)
    return {"HIT": wire.hit_wire(_hit_create(requester, hit_type, params, now))}


def hit_get(*, requester: Requester, params: dict, now: datetime) -> dict:
    return {"HIT": wire.hit_wire(hit_for(requester, params["HITId"]))}


def hits_list(*, requester: Requester, params: dict, now: datetime) -> dict:
    hits = HIT.objects.select_related("hit_type").filter(requester=requester).exclude(status=HIT.Status.DISPOSED)
    items, members = page(hits, params, query={"op": "ListHITs", "requester": requester.pk})
    return {"HITs": [wire.hit_wire(hit) for hit in items], **members}


def reviewable_hits_list(*, requester: Requester, params: dict, now: datetime) -> dict:
    status = params.get("Status", HIT.Status.REVIEWABLE)
    hits = HIT.objects.select_related("hit_type").filter(requester=requester, status=status)
    if "HITTypeId" in params:
        hits = hits.filter(hit_type__type_id=params["HITTypeId"])
    query = {"op": "ListReviewableHITs", "requester": requester.pk, "status": status, "type": params.get("HITTypeId")}
    items, members = page(hits, params, query=query)
    return {"HITs": [wire.hit_wire(hit) for hit in items], **members}


def hit_expiration_update(*, requester: Requester, params: dict, now: datetime) -> dict:
    """Expire now (any time in the past) or extend; a live expiration is never shortened."""
    hit = hit_for(requester, params["HITId"], lock=True)
    expire_at = _timestamp_read(params["ExpireAt"])
    if expire_at <= now:
        hit.expiration = min(hit.expiration, now)
    elif hit.expiration > now and expire_at < hit.expiration:
        raise RequestError(
            "The expiration can only be extended, or set to a time in the past to expire the HIT now.",
            code=PARAMETER_OUT_OF_RANGE,
        )
    elif expire_at > now + timedelta(seconds=RANGES["LifetimeInSeconds"][1]):
        raise RequestError("ExpireAt is more than 365 days away.", code=PARAMETER_OUT_OF_RANGE)
    else:
        hit.expiration = expire_at
    hit.save(update_fields=["expiration"])
    hit_refresh(hit=hit, now=now)
    return {}


def hit_review_status_update(*, requester: Requester, params: dict, now: datetime) -> dict:
    """Reviewable -> Reviewing, or back with Revert."""
    hit = hit_for(requester, params["HITId"], lock=True)
    source, target = HIT.Status.REVIEWABLE, HIT.Status.REVIEWING
    if params.get("Revert", False):
        source, target = target, source
    if hit.status != source:
        raise _state_error(hit, allowed=source)
    hit.status = target
    hit.save(update_fields=["status"])
    hit_refresh(hit=hit, now=now)
    return {}


def hit_delete(*, requester: Requester, params: dict, now: datetime) -> dict:
    """Dispose of a Reviewable or Reviewing HIT with nothing in flight and nothing unreviewed."""
    hit = hit_for(requester, params["HITId"], lock=True)
    unreviewed = hit.assignments.filter(status=Assignment.Status.SUBMITTED).exists()
    if hit.status not in (HIT.Status.REVIEWABLE, HIT.Status.REVIEWING) or hit.pending or unreviewed:
        raise _state_error(hit, allowed="Reviewing, Reviewable")
    hit.status = HIT.Status.DISPOSED
    hit.save(update_fields=["status"])
    return {}


def additional_assignments_create(*, requester: Requester, params: dict, now: datetime) -> dict:
    hit = hit_for(requester, params["HITId"], lock=True)
    if "UniqueRequestToken" in params:
        token_require_new(
            requester=requester,
            operation="CreateAdditionalAssignmentsForHIT",
            token=params["UniqueRequestToken"],
            now=now,
        )
    added = params["NumberOfAdditionalAssignments"]
    if hit.max_assignments < MANY_ASSIGNMENTS <= hit.max_assignments + added:
        raise RequestError(
            f"This HIT has {hit.max_assignments} assignments; it cannot be extended to {MANY_ASSIGNMENTS} or more.",
            code=INVALID_MAXIMUM_ASSIGNMENTS_INCREASE,
        )
    hit.max_assignments += added
    hit.save(update_fields=["max_assignments"])
    hit_refresh(hit=hit, now=now)
    return {}


def _hit_type_get_or_create(requester: Requester, params: dict) -> HITType:
    """The requester's HIT type with exactly these properties, created when new."""
    properties = {
        "title": params["Title"],
        "description": params["Description"],
        "keywords": params.get("Keywords", ""),
        "reward": Decimal(params["Reward"]).quantize(Decimal("0.01")),
        "assignment_duration": params["AssignmentDurationInSeconds"],
        "auto_approval_delay": params.get("AutoApprovalDelayInSeconds", DEFAULT_AUTO_APPROVAL_DELAY),
        "qualification_requirements": params.get("QualificationRequirements", []),
    }
    fingerprint = hashlib.sha256(json.dumps(properties, sort_keys=True, default=str).encode()).hexdigest()
    hit_type, _ = HITType.objects.get_or_create(requester=requester, fingerprint=fingerprint, defaults=properties)
    return hit_type


def _hit_create(requester: Requester, hit_type: HITType, params: dict, now: datetime) -> HIT:
    if "HITLayoutId" in params or "Question" not in params:
        raise RequestError("Provide a Question; HIT layouts are not supported by the local endpoint.", code=UNSUPPORTED)
    if "AssignmentReviewPolicy" in params or "HITReviewPolicy" in params:
        raise RequestError("Review policies are not supported by the local endpoint.", code=UNSUPPORTED)
    question = external_question_parse(params["Question"])
    max_assignments = params.get("MaxAssignments", 1)
    hit = HIT.objects.create(
        requester=requester,
        hit_type=hit_type,
        question=params["Question"],
        external_url=question.url,
        frame_height=question.frame_height,
        requester_annotation=params.get("RequesterAnnotation", ""),
        max_assignments=max_assignments,
        created_at=now,
        expiration=now + timedelta(seconds=params["LifetimeInSeconds"]),
        status=HIT.Status.ASSIGNABLE,
        available=max_assignments,
    )
    token = params.get("UniqueRequestToken")
    if token:
        earlier = token_claim(requester=requester, operation="CreateHIT", token=token, now=now, hit=hit)
        if earlier:
            assert earlier.hit is not None, "a CreateHIT token is recorded with the HIT it created"
            raise RequestError(
                f'The HIT with ID "{earlier.hit.hit_id}" already exists for UniqueRequestToken "{token}".',
                code=HIT_ALREADY_EXISTS,
            )
    return hit


def _state_error(hit: HIT, *, allowed: str) -> RequestError:
    return RequestError(
        f"This HIT is currently in the state '{hit.status}'.  This operation can be called with a status of: {allowed}",
        code=INVALID_HIT_STATE,
    )


def _timestamp_read(value) -> datetime:
    """A request timestamp: epoch seconds (what boto3 sends) or ISO-8601, naive meaning UTC."""
    moment = parse_timestamp(value)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
