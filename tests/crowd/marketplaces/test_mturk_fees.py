"""MTurk's fees (reference/mturk.md §5), against the reference's worked examples."""

from decimal import Decimal as D

import pytest

from crowd.marketplaces.mturk import fees


@pytest.mark.parametrize(
    "amount, expected",
    [
        (D("0.50"), D("0.10")),
        (D("0.02"), D("0.01")),  # 0.004 → the $0.01 minimum
        (D("0.52"), D("0.10")),  # 0.104 rounds down
        (D("0.525"), D("0.11")),  # 0.105 rounds half-up
    ],
)
def test_fee_is_twenty_percent_rounded_half_up_with_a_one_cent_minimum(amount, expected):
    assert fees.fee(amount, fees.BASE_RATE) == expected


def test_worked_examples_of_the_reference():
    # 300 responses at $0.50 as 100 HITs × 3 assignments: $0.60 each.
    assert fees.hits_cost(reward=D("0.50"), max_assignments=[3] * 100) == D("180.00")
    # The same 300 responses as 1 HIT × 300 assignments: the 40 % tier, $0.70 each.
    assert fees.hits_cost(reward=D("0.50"), max_assignments=[300]) == D("210.00")
    assert fees.assignment_cost(reward=D("0.02"), max_assignments=1) == D("0.03")
    assert fees.bonus_cost(D("1.00")) == D("1.20")


def test_the_ten_assignment_tier_is_decided_per_hit():
    assert fees.assignment_cost(reward=D("0.50"), max_assignments=9) == D("0.60")
    assert fees.assignment_cost(reward=D("0.50"), max_assignments=10) == D("0.70")


def test_the_papers_likert_hit_costs_seven_cents_per_assignment():
    # $0.06 reward, 20 % = $0.012 → $0.01; five assignments per HIT.
    assert fees.hit_cost(reward=D("0.06"), max_assignments=5) == D("0.35")
    assert fees.hits_cost(reward=D("0.06"), max_assignments=[]) == D("0.00")
