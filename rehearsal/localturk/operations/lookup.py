"""Finding a requester's HITs and assignments the way MTurk reports them missing."""

from ..errors import ASSIGNMENT_DOES_NOT_EXIST, HIT_DOES_NOT_EXIST, RequestError
from ..models import HIT, Assignment, Requester


def hit_for(requester: Requester, hit_id: str, *, lock: bool = False) -> HIT:
    """The requester's HIT, unless disposed; `lock` for read-then-write."""
    hits = HIT.objects.select_related("hit_type").filter(requester=requester, hit_id=hit_id)
    if lock:
        hits = hits.select_for_update(of=("self",))
    hit = next(iter(hits.exclude(status=HIT.Status.DISPOSED)[:1]), None)  # hit_id is unique: no ORDER BY
    if hit is None:
        raise RequestError(f"Hit {hit_id} does not exist.", code=HIT_DOES_NOT_EXIST)
    return hit


def assignment_for(requester: Requester, assignment_id: str, *, statuses=Assignment.LIVE) -> Assignment:
    """The row holding `assignment_id` in one of `statuses`, on a HIT of the requester's not disposed."""
    assignments = (
        Assignment.objects.select_related("hit__hit_type")
        .filter(assignment_id=assignment_id, hit__requester=requester, status__in=statuses)
        .exclude(hit__status=HIT.Status.DISPOSED)
    )
    # At most one row: a live assignment id is unique (and `statuses` are live), so no ORDER BY.
    assignment = next(iter(assignments[:1]), None)
    if assignment is None:
        raise RequestError(f"Assignment {assignment_id} does not exist.", code=ASSIGNMENT_DOES_NOT_EXIST)
    return assignment
