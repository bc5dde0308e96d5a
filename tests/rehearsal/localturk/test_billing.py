"""MTurk's fees, against the worked examples of the reference (§5)."""

from decimal import Decimal
from types import SimpleNamespace

import pytest

from rehearsal.localturk.billing import assignment_cost, bonus_cost, fee
from rehearsal.localturk.qualifications import LOCALE, MASTERS


def _hit(reward: str, max_assignments: int, requirements=()) -> SimpleNamespace:
    hit_type = SimpleNamespace(reward=Decimal(reward), qualification_requirements=list(requirements))
    return SimpleNamespace(hit_type=hit_type, max_assignments=max_assignments)


@pytest.mark.parametrize(
    "reward, max_assignments, requirements, cost",
    [
        ("0.50", 3, (), "0.60"),  # 100 HITs x 3 -> $180.00
        ("0.50", 300, (), "0.70"),  # 1 HIT x 300 -> $210.00
        ("0.02", 3, (), "0.03"),  # the $0.01 minimum fee
        ("0.06", 5, (), "0.07"),
        ("1.00", 3, ({"QualificationTypeId": MASTERS[0], "Comparator": "Exists"},), "1.25"),
        ("1.00", 3, ({"QualificationTypeId": LOCALE, "Comparator": "Exists"},), "1.20"),
    ],
)
def test_assignment_cost(reward, max_assignments, requirements, cost):
    assert assignment_cost(_hit(reward, max_assignments, requirements)) == Decimal(cost)


def test_bonus_cost_and_rounding():
    assert bonus_cost(Decimal("1.00")) == Decimal("1.20")
    assert fee(Decimal("0.52"), Decimal("0.20")) == Decimal("0.10")  # 0.104 -> 0.10
    assert fee(Decimal("0.525"), Decimal("0.20")) == Decimal("0.11")  # 0.105 -> 0.11
