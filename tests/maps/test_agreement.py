"""maps.agreement against hand-computed values."""

import math

import pytest

from maps.agreement import (
    clustering_agreement,
    clustering_scores,
    clustering_scores_counted,
    decisions_agreement,
    nvi_compute,
)


def test_decisions_hand_computed():
    a = [1, 1, 0, 0, 1, 0, 0, 0, 0, 0]
    b = [1, 0, 0, 0, 1, 0, 0, 1, 0, 0]
    result = decisions_agreement(a, b, positive=1)
    # 8 of 10 alike; p_e = .3·.3 + .7·.7 = .58, κ = (.8 − .58) / (1 − .58)
    assert result.n == 10
    assert result.percent == pytest.approx(0.8)
    assert result.kappa == pytest.approx(0.22 / 0.42)
    # α nominal: D_o = 4/20 (two disagreeing units, both orders), D_e = 2·6·14 / (20·19)
    assert result.alpha == pytest.approx(1 - (4 / 20) / (168 / 380))
    # positive class: 2 both yes, 3 + 3 yes in all
    assert result.f1_positive == pytest.approx(4 / 6)


def test_decisions_undefined_figures_are_none():
    same = decisions_agreement([False] * 4, [False] * 4)
    assert (same.percent, same.kappa, same.alpha, same.f1_positive) == (1.0, None, None, None)
    assert decisions_agreement([], []).percent is None
    with pytest.raises(ValueError, match="differ in length"):
        decisions_agreement([True], [True, False])


def test_mostly_no_decisions_high_agreement_low_kappa():
    """Why κ is reported beside % agreement: merges are mostly "no"."""
    a = [False] * 95 + [True] * 5
    b = [False] * 95 + [False] * 4 + [True]
    result = decisions_agreement(a, b)
    assert result.percent == pytest.approx(0.96)
    assert result.kappa < 0.35
    assert result.f1_positive == pytest.approx(2 / 6)


def test_clustering_scores_hand_computed():
    first = ["x", "x", "y", "y"]  # C: {1, 2} {3, 4}
    second = ["p", "p", "p", "q"]  # L: {1, 2, 3} {4}
    h_c = math.log(2)
    h_l = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    information = 0.5 * math.log(4 / 3) + 0.25 * math.log(2 / 3) + 0.25 * math.log(2)
    h, c = information / h_c, information / h_l
    scores = clustering_scores(first, second)
    assert scores.beta == 1.0
    assert scores.v1 == pytest.approx(2 * h * c / (h + c))
    assert scores.vbeta == pytest.approx(scores.v1)
    assert scores.v05 == pytest.approx(1.5 * h * c / (0.5 * h + c))
    assert scores.nmi == pytest.approx(information / math.sqrt(h_c * h_l))
    assert scores.nvi == pytest.approx((h_c + h_l - 2 * information) / math.log(4))
    assert nvi_compute(first, first) == pytest.approx(0.0)
    assert nvi_compute(["a"], ["b"]) is None


def test_left_out_items_as_singletons_and_as_a_bucket():
    a = {"1": "x", "2": "x"}
    b = {"1": "x", "2": "y"}
    result = clustering_agreement(a, b, items=["1", "2", "3", "4"])
    assert result["singletons"]["beta"] == pytest.approx(4 / 3)
    assert result["bucket"]["beta"] == pytest.approx(3 / 2)
    expected = clustering_scores(["a", "a", "out", "out"], ["a", "b", "out", "out"])
    assert result["bucket"]["v1"] == pytest.approx(expected.v1)
    assert result["bucket"]["nvi"] == pytest.approx(expected.nvi)


def test_random_baseline_is_seeded_and_below_perfect_agreement():
    a = {str(i): i // 3 for i in range(12)}
    first = clustering_agreement(a, dict(a))
    assert first == clustering_agreement(a, dict(a))
    for left_out in ("singletons", "bucket"):
        assert first[left_out]["v1"] == pytest.approx(1.0)
        assert first[left_out]["nvi"] == pytest.approx(0.0)
        assert first[left_out]["baseline"]["v1"] < 1.0
        assert first[left_out]["baseline"]["nvi"] > 0.0


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (["x", "x", "y", "y"], ["p", "p", "p", "q"]),
        (["a", "b", "c", "a", "b", "c", "a"], ["1", "1", "2", "2", "3", "3", "3"]),
        (["a"] * 5, ["1", "2", "3", "4", "5"]),
        (["a", "b", "c"], ["z", "z", "z"]),
    ],
)
def test_counted_scores_equal_scikit_learns(first, second):
    """The baseline's fast path gives scikit-learn's figures."""
    fast, reference = clustering_scores_counted(first, second).as_dict(), clustering_scores(first, second).as_dict()
    assert fast == pytest.approx(reference, abs=1e-12)
