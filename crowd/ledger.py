"""Money per campaign: what published work may cost, and what was paid (fees included).

Entries (crowd.LedgerEntry), each written once per `(kind, reference)`:

    committed  task:<uuid>                  publishing a task: every assignment at reward + fee
    spent      assignment:<id>:<worker>     an approved assignment (by us or auto-approval)
    released   assignment:<id>:<worker>     a rejected assignment: nothing paid
    released   hit:<id>:unfilled            slots of an expired HIT nobody filled
    bonus      bonus:<token>                a bonus plus its fee

Committed (net) = committed − released + bonus: the most the campaign can end up paying
for what it published, and what the budget cap bounds: publishing (crowd.publishing) and
granting a bonus (crowd.review) are refused with BudgetExceeded when they would take it,
together with bonuses granted but not yet paid, over the cap. Spent = spent + bonus. Writers
hold a row lock on what the entry is about (the campaign, HIT, assignment or bonus), so
the existence check before the insert cannot race.
"""

from dataclasses import dataclass
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import Sum

from config.errors import ApplicationError
from crowd import fees
from crowd.models import HIT, Bonus, LedgerEntry

Kind = LedgerEntry.Kind
ZERO = Decimal("0.00")


class BudgetExceeded(ApplicationError):
    code = "budget_exceeded"


@dataclass(frozen=True)
class Money:
    committed: Decimal
    spent: Decimal
    cap: Decimal

    @property
    def outstanding(self) -> Decimal:
        """Committed but not paid yet: work in progress or awaiting approval."""
        return self.committed - self.spent

    @property
    def headroom(self) -> Decimal:
        return self.cap - self.committed


def campaign_money(*, campaign) -> Money:
    entries = LedgerEntry.objects.filter(campaign=campaign).values("kind").annotate(total=Sum("amount"))
    return _money(dict(entries.values_list("kind", "total")), cap=campaign.budget_cap)


def campaigns_money(*, campaigns) -> dict[int, Money]:
    """`campaign_money` of each campaign, in one query (for list pages)."""
    campaigns = list(campaigns)
    totals: dict[int, dict[str, Decimal]] = {campaign.pk: {} for campaign in campaigns}
    entries = LedgerEntry.objects.filter(campaign__in=campaigns).values("campaign_id", "kind")
    for campaign_id, kind, total in entries.annotate(total=Sum("amount")).values_list("campaign_id", "kind", "total"):
        totals[campaign_id][kind] = total
    return {campaign.pk: _money(totals[campaign.pk], cap=campaign.budget_cap) for campaign in campaigns}


def _money(totals: dict[str, Decimal], *, cap: Decimal) -> Money:
    # SQLite sums decimals through floats: back to cents.
    committed, released, spent, bonus = (
        (totals.get(kind) or ZERO).quantize(fees.CENT)
        for kind in (Kind.COMMITTED, Kind.RELEASED, Kind.SPENT, Kind.BONUS)
    )
    return Money(committed=committed - released + bonus, spent=spent + bonus, cap=cap)


def entry_record(*, campaign_id: int, kind: str, reference: str, amount: Decimal, note: str = "") -> bool:
    """Write the entry unless one with this kind and reference exists; True when written.

    The writers' row locks make the check exact; the unique constraint
    (ledger_unique_reference) stands behind it, so a writer that forgot its lock records
    nothing twice either."""
    if amount <= 0 or LedgerEntry.objects.filter(campaign_id=campaign_id, kind=kind, reference=reference).exists():
        return False
    try:
        with transaction.atomic():
            LedgerEntry.objects.create(
                campaign_id=campaign_id, kind=kind, reference=reference, amount=amount, note=note
            )
    except IntegrityError:
        return False
    return True


def task_reference(task_uuid) -> str:
    return f"task:{task_uuid}"


def assignment_reference(*, assignment_id: str, worker_id: str) -> str:
    return f"assignment:{assignment_id}:{worker_id}"


def assignment_paid(*, campaign_id: int, hit: HIT, assignment_id: str, worker_id: str) -> bool:
    """An approved assignment: reward + fee spent."""
    return entry_record(
        campaign_id=campaign_id,
        kind=Kind.SPENT,
        reference=assignment_reference(assignment_id=assignment_id, worker_id=worker_id),
        amount=fees.assignment_cost(reward=hit.reward, max_assignments=hit.max_assignments, channel=hit.channel),
        note=f"approved, HIT {hit.hit_id}",
    )


def assignment_unpaid(*, campaign_id: int, hit: HIT, assignment_id: str, worker_id: str) -> bool:
    """A rejected assignment: its commitment is released."""
    return entry_record(
        campaign_id=campaign_id,
        kind=Kind.RELEASED,
        reference=assignment_reference(assignment_id=assignment_id, worker_id=worker_id),
        amount=fees.assignment_cost(reward=hit.reward, max_assignments=hit.max_assignments, channel=hit.channel),
        note=f"rejected, HIT {hit.hit_id}",
    )


def unfilled_released(*, campaign_id: int, hit: HIT, unfilled: int) -> bool:
    """Slots of a HIT that closed before every assignment was taken."""
    return entry_record(
        campaign_id=campaign_id,
        kind=Kind.RELEASED,
        reference=f"hit:{hit.hit_id}:unfilled",
        amount=unfilled
        * fees.assignment_cost(reward=hit.reward, max_assignments=hit.max_assignments, channel=hit.channel),
        note=f"{unfilled} assignment(s) never taken",
    )


def bonus_paid(*, campaign_id: int, bonus: Bonus) -> bool:
    return entry_record(
        campaign_id=campaign_id,
        kind=Kind.BONUS,
        reference=f"bonus:{bonus.token}",
        amount=fees.bonus_cost(bonus.amount, channel=bonus.assignment.worker.channel),
        note=f"bonus {bonus.amount} to {bonus.assignment.worker}",
    )


def bonuses_pending(*, campaign) -> Decimal:
    """Bonuses granted in the campaign but not paid yet, with their fees: not in the ledger
    until paid, but already promised."""
    pending = Bonus.objects.filter(assignment__task__batch__topic__campaign=campaign, sent_at__isnull=True)
    return sum(
        (
            fees.bonus_cost(amount, channel=channel)
            for amount, channel in pending.values_list("amount", "assignment__worker__channel")
        ),
        ZERO,
    )
