"""Money: MTurk's fees (reference §5) and charging the requester's balance.

Fee: 20 % of the reward, another 20 % when the HIT has 10 or more assignments, another
5 % with a Masters requirement; 20 % of a bonus; at least $0.01 each, rounded half-up to
the cent. Approval (including auto-approval) charges reward + fee, a bonus charges
bonus + fee; rejection charges nothing.
"""

from decimal import ROUND_HALF_UP, Decimal

from django.db.models import F

from .errors import INSUFFICIENT_FUNDS, RequestError
from .models import HIT, Requester
from .qualifications import MASTERS

CENT = Decimal("0.01")
BASE_RATE = Decimal("0.20")
MANY_ASSIGNMENTS_RATE = Decimal("0.20")
MASTERS_RATE = Decimal("0.05")
MANY_ASSIGNMENTS = 10


def fee(amount: Decimal, rate: Decimal) -> Decimal:
    return max(CENT, (amount * rate).quantize(CENT, rounding=ROUND_HALF_UP))


def assignment_cost(hit: HIT) -> Decimal:
    """What approving one assignment of `hit` costs the requester."""
    hit_type = hit.hit_type
    rate = BASE_RATE
    if hit.max_assignments >= MANY_ASSIGNMENTS:
        rate += MANY_ASSIGNMENTS_RATE
    if any(r["QualificationTypeId"] in MASTERS for r in hit_type.qualification_requirements):
        rate += MASTERS_RATE
    return hit_type.reward + fee(hit_type.reward, rate)


def bonus_cost(amount: Decimal) -> Decimal:
    return amount + fee(amount, BASE_RATE)


def requester_charge(*, requester_id: int, amount: Decimal, allow_overdraft: bool = False) -> None:
    """Debit the balance in one conditional UPDATE; refuse when it cannot cover `amount`.

    Auto-approval pays workers whatever the balance (`allow_overdraft`), as MTurk does.
    """
    rows = Requester.objects.filter(pk=requester_id)
    if not allow_overdraft:
        rows = rows.filter(balance__gte=amount)
    if not rows.update(balance=F("balance") - amount):
        raise insufficient_funds(amount)


def insufficient_funds(amount: Decimal) -> RequestError:
    """What MTurk answers when the balance cannot cover `amount`."""
    return RequestError(
        f"Your account balance is insufficient to cover {amount:.2f} (reward or bonus plus fees).",
        code=INSUFFICIENT_FUNDS,
    )
