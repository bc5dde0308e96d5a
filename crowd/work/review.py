"""Reviewing work: approve, reject with a reason, block or unblock a worker, pay a bonus.

Each action calls the marketplace first and records the outcome only after the call
succeeded, in its own transaction, under row locks (the HIT for its ledger entries, then
the assignment, or the bonus or worker). Every action is safe to repeat:

* approve / reject: `InvalidState` from the marketplace means the assignment moved on
  (approved, auto-approved, rejected); GetAssignment tells which, and that is recorded.
* bonus: the Bonus row is written first with its token, only if the bonus fits under the
  campaign's budget cap; the marketplace is called with the token as
  `UniqueRequestToken`, so a retried send never pays twice.

Approval is the default outcome of work (see crowd.work.sync); rejection, blocking and bonuses
are explicit admin decisions with a reason, recorded as WorkerDecision. A rejection's
reason is shown to the worker; a block's is not.
"""

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from annotation.models import Campaign
from config.errors import ApplicationError, Conflict, NotFound
from crowd.marketplaces.base import (
    CENT,
    DuplicateRequest,
    InvalidState,
    Marketplace,
    MarketplaceError,
    MarketplaceUnavailable,
    OutcomeUnknown,
)
from crowd.marketplaces.registry import get_marketplace
from crowd.models import CONFIRMED, HIT, Assignment, Bonus, Worker, WorkerBlock, WorkerDecision
from crowd.work import ledger

Status = Assignment.Status
FEEDBACK_MAX = 1024  # characters MTurk accepts in RequesterFeedback


def _assignment(assignment_id: int) -> Assignment:
    return Assignment.objects.select_related("task__batch__topic__campaign", "worker", "hit").get(pk=assignment_id)


def _marketplace_check(assignment: Assignment) -> HIT:
    """The assignment's HIT; raises unless the marketplace knows the assignment."""
    if assignment.verification not in CONFIRMED or assignment.hit is None:
        raise ApplicationError(
            f"Assignment {assignment} is not known to the marketplace ({assignment.get_verification_display()}): "
            "there is nothing to approve, reject or pay there.",
            code="assignment_not_at_marketplace",
        )
    return assignment.hit


def _reason_check(reason: str, *, what: str) -> str:
    reason = reason.strip()
    if not reason:
        raise ApplicationError(f"{what} needs a reason.", code="reason_required")
    if len(reason) > FEEDBACK_MAX:
        raise ApplicationError(f"The reason is longer than {FEEDBACK_MAX} characters.", code="reason_too_long")
    return reason


@dataclass(frozen=True)
class Review:
    """A decision the marketplace has applied to one of our assignments (its pk)."""

    assignment_id: int
    status: str  # Approved | Rejected
    reason: str = ""


def review_record(*, assignment_id: int, status: str, reason: str = "") -> bool:
    """Record an approval or rejection the marketplace has applied; True when it changed our row."""
    return reviews_record(reviews=[Review(assignment_id, status, reason)]) > 0


def reviews_record(*, reviews: Sequence[Review]) -> int:
    """Record decisions the marketplace has applied, many at once: each assignment's status
    and its ledger entry, in one transaction under row locks (the HITs, then the
    assignments), in a handful of queries whatever their number. How many rows changed."""
    wanted = {review.assignment_id: review for review in reviews}
    if not wanted:
        return 0
    with transaction.atomic():
        hit_ids = Assignment.objects.filter(pk__in=list(wanted)).values("hit_id")
        hits = {hit.pk: hit for hit in HIT.objects.select_for_update().filter(pk__in=hit_ids).order_by("pk")}
        # The assignments' own columns under their locks: no join, so no other table's row is
        # locked, and no model built (a sync records a chunk's every approval here).
        locked = Assignment.objects.select_for_update().filter(pk__in=list(wanted)).order_by("pk")
        changed = [pk for pk, status in locked.values_list("pk", "status") if status != wanted[pk].status]
        decisions: dict[tuple[str, str], list[int]] = defaultdict(list)
        for pk in changed:
            review = wanted[pk]
            decisions[review.status, review.reason if review.status == Status.REJECTED else ""].append(pk)
        now = timezone.now()
        for (status, reason), pks in decisions.items():
            Assignment.objects.filter(pk__in=pks).update(status=status, reviewed_at=now, reject_reason=reason)
        # only an assignment with a HIT is decided at a marketplace
        decided = (
            Assignment.objects.filter(pk__in=changed, hit__isnull=False)
            .order_by("pk")
            .values_list("pk", "hit_id", "assignment_id", "worker__external_id", "task__batch__topic__campaign_id")
            if changed
            else []
        )
        ledger.assignments_reviewed(
            reviews=[
                ledger.AssignmentReview(
                    campaign_id=campaign_id,
                    hit=hits[hit_id],
                    assignment_id=assignment_id,
                    worker_id=worker_id,
                    approved=wanted[pk].status == Status.APPROVED,
                )
                for pk, hit_id, assignment_id, worker_id, campaign_id in decided
            ]
        )
    return len(changed)


def _status_at_marketplace(marketplace, assignment: Assignment) -> str:
    """After InvalidState: the assignment's status as the marketplace holds it now."""
    remote = marketplace.assignment_get(assignment.assignment_id)
    if remote.worker_id != assignment.worker.external_id:
        raise MarketplaceError(
            f"Assignment {assignment.assignment_id} now belongs to worker {remote.worker_id} at the marketplace, "
            f"not to {assignment.worker}.",
            code="assignment_reassigned",
        )
    return remote.status


def approve_at_marketplace(*, marketplace: Marketplace, assignment: Assignment, feedback: str = "") -> str:
    """Approve at the marketplace (nothing recorded here); the assignment's status there now:
    Approved, or what it moved on to (auto-approved, rejected), or still Submitted when the
    marketplace refuses to approve yet (eventual consistency: try again later)."""
    try:
        marketplace.assignment_approve(assignment.assignment_id, feedback=feedback)
    except InvalidState:
        return _status_at_marketplace(marketplace, assignment)
    return Status.APPROVED


def assignment_approve(*, assignment_id: int, feedback: str = "") -> bool:
    """Approve (and pay) the assignment. True once it is approved, now or before; False when
    the marketplace still shows it as Submitted but refuses to approve (eventual consistency:
    try again at the next sync)."""
    assignment = _assignment(assignment_id)
    if assignment.status != Status.SUBMITTED:
        return assignment.status == Status.APPROVED
    hit = _marketplace_check(assignment)
    marketplace = get_marketplace(assignment.task.batch.topic.campaign, environment=hit.environment)
    status = approve_at_marketplace(marketplace=marketplace, assignment=assignment, feedback=feedback)
    if status == Status.SUBMITTED:
        return False
    review_record(assignment_id=assignment.pk, status=status)
    return status == Status.APPROVED


def assignment_reject(*, assignment_id: int, reason: str, decided_by=None) -> None:
    """Reject with `reason`, which the worker sees. Approved work cannot be rejected."""
    reason = _reason_check(reason, what="A rejection")
    assignment = _assignment(assignment_id)
    if assignment.status == Status.REJECTED:
        return
    if assignment.status == Status.APPROVED:
        raise Conflict(
            f"Assignment {assignment} is approved and paid already; it cannot be rejected.", code="already_approved"
        )
    hit = _marketplace_check(assignment)
    marketplace = get_marketplace(assignment.task.batch.topic.campaign, environment=hit.environment)
    status: str
    try:
        marketplace.assignment_reject(assignment.assignment_id, feedback=reason)
        status = Status.REJECTED
    except InvalidState:
        status = _status_at_marketplace(marketplace, assignment)
        if status == Status.SUBMITTED:
            raise
    review_record(assignment_id=assignment.pk, status=status, reason=reason)
    if status == Status.APPROVED:
        raise Conflict(
            f"Assignment {assignment} was approved (perhaps automatically) before the rejection.",
            code="already_approved",
        )
    WorkerDecision.objects.create(
        campaign=assignment.task.batch.topic.campaign,
        worker=assignment.worker,
        action="reject",
        reason=f"assignment {assignment.assignment_id}: {reason}",
        decided_by=decided_by,
    )


def worker_in_campaign(*, worker_id: int, campaign_id: int) -> Worker:
    """The worker, if they answered in the campaign: the one rule of whom a researcher's
    decisions (block, exclude, include) may reach. Anyone else is refused, whatever id is
    typed: a worker id is not secret, and another researcher's worker is not hers to judge."""
    worker = Worker.objects.filter(pk=worker_id, assignments__task__batch__topic__campaign_id=campaign_id).first()
    if worker is None:
        raise NotFound(
            f"Worker {worker_id} never answered in this campaign: a decision about a worker applies only to "
            "those who worked in it. Nothing was changed.",
            code="worker_not_in_campaign",
        )
    return worker


def _marketplace_block_allowed(campaign: Campaign, worker: Worker) -> bool:
    """A marketplace's block is account-wide (MTurk's CreateWorkerBlock stops the worker from
    every HIT of the requester account, whoever's campaign it serves), and one account may
    serve several researchers. So it is sent only when the channel confirmed an answer of the
    worker in this owner's campaigns and the worker answered in no other owner's campaign;
    otherwise the block holds on our pages only."""
    theirs = Assignment.objects.filter(worker=worker)
    if campaign.owner_id is None:
        others = theirs.exclude(task__batch__topic__campaign=campaign)
        own = theirs.filter(task__batch__topic__campaign=campaign)
    else:
        others = theirs.exclude(task__batch__topic__campaign__owner_id=campaign.owner_id)
        own = theirs.filter(task__batch__topic__campaign__owner_id=campaign.owner_id)
    return own.confirmed().exists() and not others.exists()


def worker_block(*, worker_id: int, campaign_id: int, reason: str, decided_by=None) -> WorkerBlock:
    """Block a worker who answered in the campaign: our pages turn them away from every
    campaign of its owner (`WorkerBlock.objects.reaching`), and the marketplace's account
    blocks them too when no other researcher's work is at stake (`_marketplace_block_allowed`).
    Safe to repeat."""
    reason = _reason_check(reason, what="A block")
    campaign = Campaign.objects.get(pk=campaign_id)
    worker = worker_in_campaign(worker_id=worker_id, campaign_id=campaign_id)
    existing = WorkerBlock.objects.filter(campaign=campaign, worker=worker).first()
    if existing is not None:
        return existing
    remote = _marketplace_block_allowed(campaign, worker)
    if remote:
        get_marketplace(campaign).worker_block(worker.external_id, reason=reason)
    with transaction.atomic():
        block, created = WorkerBlock.objects.get_or_create(
            campaign=campaign,
            worker=worker,
            defaults={"reason": reason, "at_marketplace": remote, "decided_by": decided_by},
        )
        if created:
            where = "" if remote else " (on our pages only: the worker also works for other researchers of the account)"
            WorkerDecision.objects.create(
                campaign=campaign, worker=worker, action="block", reason=reason + where, decided_by=decided_by
            )
    return block


def worker_unblock(*, worker_id: int, campaign_id: int, reason: str, decided_by=None) -> None:
    """Lift every block that reaches the campaign, on our pages and, where one was set there,
    at the marketplace: the worker may take its owner's tasks again (quality control's
    exclusions stay as they are). Safe to repeat."""
    reason = _reason_check(reason, what="Lifting a block")
    campaign = Campaign.objects.get(pk=campaign_id)
    worker = worker_in_campaign(worker_id=worker_id, campaign_id=campaign_id)
    blocks = WorkerBlock.objects.reaching(campaign).filter(worker=worker)
    if blocks.filter(at_marketplace=True).exists():
        get_marketplace(campaign).worker_unblock(worker.external_id, reason=reason)
    with transaction.atomic():
        deleted, _ = blocks.delete()
        if deleted:
            WorkerDecision.objects.create(
                campaign=campaign, worker=worker, action="unblock", reason=reason, decided_by=decided_by
            )


def bonus_grant(*, assignment_id: int, amount: Decimal, reason: str, decided_by=None) -> Bonus:
    """Record a bonus for the assignment's worker and pay it (see `bonus_send`)."""
    reason = _reason_check(reason, what="A bonus")
    if amount < CENT or amount != amount.quantize(CENT):
        raise ApplicationError(f"A bonus must be at least $0.01, in whole cents, not {amount}.", code="invalid_amount")
    assignment = _assignment(assignment_id)
    _marketplace_check(assignment)
    bonus = _bonus_record(assignment=assignment, amount=amount, reason=reason, decided_by=decided_by)
    return bonus_send(bonus_id=bonus.pk)


@transaction.atomic
def _bonus_record(*, assignment: Assignment, amount: Decimal, reason: str, decided_by) -> Bonus:
    """The Bonus row, written only when the bonus and its fee fit under the campaign's budget
    cap beside everything committed and every bonus granted but not paid yet; under a lock
    on the campaign, so two grants cannot both take the last of the headroom."""
    campaign = Campaign.objects.select_for_update().get(pk=assignment.task.batch.topic.campaign_id)
    ledger.budget_check(
        campaign=campaign,
        cost=ledger.bonus_cost(amount=amount, channel=assignment.worker.channel),
        what=f"A bonus of ${amount} to {assignment.worker}",
        remedy="Raise the budget cap or pay a smaller bonus. Nothing was paid.",
    )
    return Bonus.objects.create(
        assignment=assignment, amount=amount, reason=reason, token=uuid.uuid4().hex, created_by=decided_by
    )


@transaction.atomic
def _bonus_refused(*, bonus_id: int, reason: str) -> None:
    """The marketplace refused to pay: the bonus no longer counts against the budget cap, and
    the refusal is recorded with the marketplace's reason."""
    bonus = (
        Bonus.objects.select_for_update()
        .select_related("assignment__worker", "assignment__task__batch__topic")
        .get(pk=bonus_id)
    )
    if bonus.sent_at is not None or bonus.refused_at is not None:
        return
    bonus.refused_at, bonus.refused_reason = timezone.now(), reason
    bonus.save(update_fields=["refused_at", "refused_reason"])
    WorkerDecision.objects.create(
        campaign_id=bonus.assignment.task.batch.topic.campaign_id,
        worker=bonus.assignment.worker,
        action="bonus_refused",
        reason=f"${bonus.amount} for assignment {bonus.assignment.assignment_id} refused by the marketplace: {reason}",
        decided_by=bonus.created_by,
    )


def bonus_send(*, bonus_id: int) -> Bonus:
    """Pay a recorded bonus once: a repeat is a no-op, and the token guards the marketplace call."""
    bonuses = Bonus.objects.select_related(
        "assignment__task__batch__topic__campaign", "assignment__worker", "assignment__hit"
    )
    bonus = bonuses.get(pk=bonus_id)
    if bonus.sent_at is not None or bonus.refused_at is not None:
        return bonus
    assignment = bonus.assignment
    campaign = assignment.task.batch.topic.campaign
    # bonus_grant records a bonus only after _marketplace_check, and nothing clears Assignment.hit.
    assert assignment.hit is not None, "a bonus is granted only on an assignment with a HIT"
    try:
        get_marketplace(campaign, environment=assignment.hit.environment).bonus_send(
            worker_id=assignment.worker.external_id,
            assignment_id=assignment.assignment_id,
            amount=bonus.amount,
            reason=bonus.reason,
            token=bonus.token,
        )
    except DuplicateRequest:
        pass  # an earlier send with this token was paid; only its record was lost
    except (MarketplaceUnavailable, OutcomeUnknown):
        raise  # try again later, or look first: the bonus stays granted against the cap
    except MarketplaceError as refused:
        _bonus_refused(bonus_id=bonus_id, reason=refused.message)
        raise
    with transaction.atomic():
        bonus = Bonus.objects.select_for_update().select_related("assignment__worker").get(pk=bonus_id)
        if bonus.sent_at is None:
            bonus.sent_at = timezone.now()
            bonus.save(update_fields=["sent_at"])
            ledger.bonus_paid(campaign_id=campaign.pk, bonus=bonus)
            WorkerDecision.objects.create(
                campaign=campaign,
                worker=assignment.worker,
                action="bonus",
                reason=f"${bonus.amount} for assignment {assignment.assignment_id}: {bonus.reason}",
                decided_by=bonus.created_by,
            )
    return bonus
