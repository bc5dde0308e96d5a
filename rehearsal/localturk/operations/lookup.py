"""Finding a requester's HITs and assignments the way MTurk reports them missing."""

from ..errors import ASSIGNMENT_DOES_NOT_EXIST, HIT_DOES_NOT_EXIST, RequestError
from ..models import HIT, Assignment, Requester


def hit_for(requester: Requester, hit_id: str, *, lock: bool = False) -> HIT:
    """The requester's HIT, unless disposed; `lock` for read-then-write."""
    hits = HIT.objects.select_related("hit_type").filter(requester=requester, hit_id=hit_id)
    if lock:
        hits = hits.select_for_update(of=("self",))
    hit = hits.exclude(status=HIT.Status.DISPOSED).first()
    if hit is None:
        raise RequestError(f"Hit {hit_id} does not exist.", code=HIT_DOES_NOT_EXIST)
    return hit


def assignment_for(requester: Requester, assignment_id: str, *, statuses=Assignment.LIVE) -> Assignment:
    """The row holding `assignment_id` in one of `statuses`, on a HIT of the requester's not disposed."""
    assignment = (
        Assignment.objects.select_related("hit__hit_type")
        .filter(assignment_id=assignment_id, hit__requester=requester, status__in=statuses)
        .exclude(hit__status=HIT.Status.DISPOSED)
        .first()
    )
    if assignment is None:
        raise RequestError(f"Assignment {assignment_id} does not exist.", code=ASSIGNMENT_DOES_NOT_EXIST)
    return assignment
