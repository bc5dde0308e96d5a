"""What MTurk charges, fees included (reference/mturk.md §5). Decimal only.

MTurk charges 20 % of the reward, another 20 % when the HIT has 10 or more assignments
(decided by the HIT's MaxAssignments, not by the batch), and 20 % of a bonus; each fee is
at least $0.01 and is rounded half-up to the cent. Fees are charged per approved
assignment and per bonus, so they are computed and rounded per assignment here too.
"""

from collections.abc import Iterable
from decimal import Decimal

from crowd.marketplaces.base import CENT
from crowd.marketplaces.base import fee as _fee

BASE_RATE = Decimal("0.20")
MANY_ASSIGNMENTS_RATE = Decimal("0.20")
MANY_ASSIGNMENTS = 10


def fee(amount: Decimal, rate: Decimal) -> Decimal:
    return _fee(amount, rate, minimum=CENT)


def assignment_cost(*, reward: Decimal, max_assignments: int) -> Decimal:
    """Reward plus fee for one approved assignment of a HIT with `max_assignments`."""
    rate = BASE_RATE + (MANY_ASSIGNMENTS_RATE if max_assignments >= MANY_ASSIGNMENTS else 0)
    return reward + fee(reward, rate)


def hit_cost(*, reward: Decimal, max_assignments: int) -> Decimal:
    """Every assignment of one HIT approved."""
    return max_assignments * assignment_cost(reward=reward, max_assignments=max_assignments)


def hits_cost(*, reward: Decimal, max_assignments: Iterable[int]) -> Decimal:
    """Publishing one HIT per entry of `max_assignments`, all at `reward`."""
    return sum((hit_cost(reward=reward, max_assignments=n) for n in max_assignments), Decimal("0.00"))


def bonus_cost(amount: Decimal) -> Decimal:
    return amount + fee(amount, BASE_RATE)
