"""HIT and assignment state over time, applied lazily: `tick()` runs before every request and
sweeps what is due at most once a second per process (`SWEEP_SECONDS`).

MTurk changes state by the clock; the local endpoint catches up whenever it is asked:

* an accepted assignment past its `Deadline` is abandoned and its slot freed;
* a submitted assignment past its `AutoApprovalTime` is approved and paid;
* a HIT past its `Expiration` stops being assignable.

`hit_refresh` then derives the HIT's status and counters from its assignments:
Pending = accepted and in time, Available = free slots while the HIT is alive,
Completed = approved + rejected; Assignable while a slot is free, Unassignable while work
is in flight, Reviewable otherwise. Reviewing and Disposed are set by the requester and kept.
Transitions are conditional UPDATEs (compare-and-set), so concurrent ticks and calls
never apply one twice.

A sweep costs a few queries even when nothing is due; run per request, it was 28 % of the
web processes' samples under the simulated crowd (issue 26). MTurk itself applies its clock
with a lag, and what must hold to the second is checked where it is acted on: a submission
past its deadline is refused (`marketplace.assignment_submit`), an expired HIT is neither
listed nor accepted. So the sweep that frees slots, auto-approves and expires HITs may trail
the clock by up to `SWEEP_SECONDS`.
"""

import threading
import time
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from functools import cache

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from . import billing
from .models import HIT, Assignment, Requester

Status = Assignment.Status


SWEEP_SECONDS = 1.0  # at most one sweep per process in this long, whatever the request rate


class _SweepClock:
    """When this process last swept, by a monotonic clock; shared by the server's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: float | None = None

    def due(self, at: float) -> bool:
        """True, and `at` taken as the last sweep, when the last one is SWEEP_SECONDS old."""
        with self._lock:
            if self._last is not None and at - self._last < SWEEP_SECONDS:
                return False
            self._last = at
            return True

    def reset(self) -> None:
        with self._lock:
            self._last = None


_sweeps = _SweepClock()


def tick(*, clock: Callable[[], float] = time.monotonic) -> bool:
    """Sweep (`sweep`) when this process has not swept for SWEEP_SECONDS; True when it did."""
    if not _sweeps.due(clock()):
        return False
    sweep()
    return True


def next_tick_sweeps() -> None:
    """Let the next `tick` sweep whatever the clock says (tests that move a due time)."""
    _sweeps.reset()


def sweep(*, now: datetime | None = None) -> None:
    """Apply every transition that is due."""
    now = now or timezone.now()
    overdue = Assignment.objects.filter(status=Status.ACCEPTED, deadline__lte=now)
    touched = set(overdue.values_list("hit_id", flat=True))
    if touched:  # an UPDATE only when due: on SQLite even an empty one takes the write lock
        overdue.update(status=Status.ABANDONED)
    due = Assignment.objects.filter(status=Status.SUBMITTED, auto_approval_time__lte=now)
    for assignment in due.select_related("hit__hit_type"):
        with transaction.atomic():
            if assignment_approve(assignment=assignment, at=assignment.auto_approval_time or now, allow_overdraft=True):
                touched.add(assignment.hit_id)
    touched.update(HIT.objects.filter(status=HIT.Status.ASSIGNABLE, expiration__lte=now).values_list("pk", flat=True))
    for hit_pk in sorted(touched):
        with transaction.atomic():
            hit_refresh(hit=HIT.objects.select_for_update().get(pk=hit_pk), now=now)


def hit_refresh(*, hit: HIT, now: datetime) -> None:
    """Recompute status and counters of a HIT the caller has locked."""
    # The HIT's few assignments counted here: one plain read costs a fraction of the SQL
    # compilation of three filtered COUNTs, on every call that changes a HIT.
    counts = {"pending": 0, "taken": 0, "completed": 0}
    for status, deadline in hit.assignments.values_list("status", "deadline"):
        counts["pending"] += status == Status.ACCEPTED and deadline > now
        counts["taken"] += status in Assignment.VISIBLE
        counts["completed"] += status in (Status.APPROVED, Status.REJECTED)
    alive = hit.expiration > now and hit.status not in (HIT.Status.REVIEWING, HIT.Status.DISPOSED)
    available = max(0, hit.max_assignments - counts["pending"] - counts["taken"]) if alive else 0
    if hit.status in (HIT.Status.REVIEWING, HIT.Status.DISPOSED):
        status = hit.status
    elif available:
        status = HIT.Status.ASSIGNABLE
    elif counts["pending"]:
        status = HIT.Status.UNASSIGNABLE
    else:
        status = HIT.Status.REVIEWABLE
    new = {"status": status, "pending": counts["pending"], "available": available, "completed": counts["completed"]}
    changed = [name for name, value in new.items() if getattr(hit, name) != value]
    for name in changed:
        setattr(hit, name, new[name])
    if changed:
        hit.save(update_fields=changed)


def hit_completed_count(*, hit_id: int) -> None:
    """Its HIT's counters after a Submitted assignment was approved or rejected: one more
    completed. Nothing else of `hit_refresh`'s derivation moves (the slot stays taken, the
    HIT's status follows only its slots and its clock, which the sweep applies), so one atomic
    UPDATE stands for reading the HIT under a lock, counting its assignments and saving it."""
    HIT.objects.filter(pk=hit_id).update(completed=F("completed") + 1)


def assignment_approve(
    *,
    assignment: Assignment,
    at: datetime,
    feedback: str = "",
    override_rejection: bool = False,
    allow_overdraft: bool = False,
    completed: bool = False,
) -> bool:
    """Approve and charge, inside the caller's transaction; False when the status moved on.

    Approves from Submitted, or from Rejected with `override_rejection`; with `completed`, its
    HIT counts one more completed assignment (`hit_refresh` would derive the same). Raises
    RequestError when the balance cannot cover the cost (unless `allow_overdraft`): the
    caller's transaction then writes nothing.

    On PostgreSQL the writes are one statement (`_approve_sql`). Every approval charges the
    requester's one row, so concurrent approvals queue for its lock, which is held from the
    charge to the commit: run as three statements, that was two more round trips of a busy
    web process, and the approvals' lock waits a seventh of pg_stat_activity's samples during
    an approval pass (issue 26). Elsewhere (SQLite: one writer at a time) the same writes one
    after the other.
    """
    source = Status.REJECTED if override_rejection else Status.SUBMITTED
    amount = billing.assignment_cost(assignment.hit)
    if connection.vendor != "postgresql":
        updated = Assignment.objects.filter(pk=assignment.pk, status=source).update(
            status=Status.APPROVED, approval_time=at, rejection_time=None, requester_feedback=feedback
        )
        if not updated:
            return False
        if completed:
            hit_completed_count(hit_id=assignment.hit_id)
        billing.requester_charge(
            requester_id=assignment.hit.requester_id, amount=amount, allow_overdraft=allow_overdraft
        )
        assignment.status = Status.APPROVED
        return True
    params: dict[str, int | str | bool | datetime | Decimal] = {
        "pk": assignment.pk,
        "source": source,
        "approved": Status.APPROVED,
        "at": at,
        "feedback": feedback,
        "requester": assignment.hit.requester_id,
        "amount": amount,
        "overdraft": allow_overdraft,
        "completed": completed,
    }
    with connection.cursor() as cursor:
        cursor.execute(_approve_sql(), params)
        approved, charged = cursor.fetchone()
    if not approved:
        return False
    if not charged:
        raise billing.insufficient_funds(amount)
    assignment.status = Status.APPROVED
    return True


@cache
def _approve_sql() -> str:
    """The approval's writes in one statement: the assignment's conditional UPDATE (which
    waits for a concurrent one and re-reads the status, so only one of two approvals finds it
    Submitted), and only for the row it approved, the charge (unless the balance is short:
    then it reports 0 and the caller's transaction is rolled back) and the HIT's count."""
    return f"""
        WITH approved AS (
            UPDATE {Assignment._meta.db_table}
            SET status = %(approved)s, approval_time = %(at)s, rejection_time = NULL, requester_feedback = %(feedback)s
            WHERE id = %(pk)s AND status = %(source)s
            RETURNING hit_id
        ), charged AS (
            UPDATE {Requester._meta.db_table} SET balance = balance - %(amount)s
            WHERE id = %(requester)s AND (%(overdraft)s OR balance >= %(amount)s) AND EXISTS (SELECT 1 FROM approved)
            RETURNING id
        ), counted AS (
            UPDATE {HIT._meta.db_table} SET completed = completed + 1
            WHERE %(completed)s AND id IN (SELECT hit_id FROM approved)
            RETURNING id
        )
        SELECT (SELECT count(*) FROM approved), (SELECT count(*) FROM charged)
    """
