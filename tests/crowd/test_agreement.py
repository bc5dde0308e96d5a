"""Crowd-level agreement statistics (crowd.agreement, re-exported by crowd.quality)
against hand-computed and published values, plus invariants."""

import math
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays
from scipy.stats import rankdata, spearmanr

from crowd.agreement import average_ranks, spearman_rho
from crowd.quality import (
    bootstrap_stability,
    krippendorff_alpha,
    majority_agreement,
    meta_worker_agreement,
    run_reliability,
)

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example C: four
# observers, twelve units, values 1-5, None = missing. Unit 12 has one value and drops out.
KRIPPENDORFF_2011 = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}
KRIPPENDORFF_LABELS = [
    (observer, unit, value)
    for observer, values in KRIPPENDORFF_2011.items()
    for unit, value in enumerate(values, start=1)
    if value is not None
]

labels_strategy = st.lists(st.tuples(st.sampled_from("abcde"), st.integers(0, 7), st.integers(1, 5)), max_size=40)


def test_meta_worker_agreement_with_two_meta_workers_is_pearson_of_min_and_max():
    # n = 2: meta-worker 0 holds the min, 1 the max, each one's "others" is the other.
    # min = (1, 2, 3), max = (2, 3, 5): dx = (-1, 0, 1), dy = (-4/3, -1/3, 5/3);
    # Σdxdy = 3, Σdx² = 2, Σdy² = 42/9 → r = 3 / √(84/9) = 9/√84.
    labels = [
        ("w1", "p", 2),
        ("w2", "p", 1),
        ("w1", "q", 3),
        ("w3", "q", 2),
        ("w2", "r", 5),
        ("w3", "r", 3),
        ("w1", "s", 4),
    ]  # s has 1 label: ignored
    assert meta_worker_agreement(labels, n=2) == pytest.approx(9 / math.sqrt(84), abs=1e-12)


def test_meta_worker_agreement_averages_the_meta_workers():
    # Sorted labels per item: (1,2,3) (2,3,5) (1,1,2) (3,4,5) → meta-workers (columns)
    # m0 = (1,2,1,3), m1 = (2,3,1,4), m2 = (3,5,2,5).
    # j=0: others (m1+m2)/2 = (5/2, 4, 3/2, 9/2): Σdxdy = 29/8, Σdx² = 11/4, Σdy² = 91/16
    #      → r0 = 0.916602; j=1: others (2, 7/2, 3/2, 4): 9/2, 5, 17/4 → r1 = 0.976187;
    # j=2: others (3/2, 5/2, 1, 7/2): 37/8, 27/4, 59/16 → r2 = 0.927030; mean 0.939940.
    items = {"p": (3, 1, 2), "q": (5, 2, 3), "r": (1, 2, 1), "s": (4, 5, 3)}
    labels = [(f"w{k}", item, score) for item, scores in items.items() for k, score in enumerate(scores)]
    labels += [("w9", "t", 5), ("w8", "t", 1)]  # two labels, not n = 3: ignored
    assert meta_worker_agreement(labels, n=3) == pytest.approx(0.9399398320623039, abs=1e-12)


@pytest.mark.parametrize(
    "labels, n",
    [
        ([], 5),
        ([("w1", "p", 1), ("w2", "p", 2), ("w1", "q", 3), ("w2", "q", 4)], 2),  # 2 items < 3
        ([(f"w{k}", item, 3) for k in range(2) for item in "pqrs"], 2),  # constant
        ([(f"w{k}", item, k) for k in range(2) for item in "pqrs"], 1),  # n < 2
    ],
)
def test_meta_worker_agreement_is_nan_when_undefined(labels, n):
    assert math.isnan(meta_worker_agreement(labels, n=n))


def test_majority_agreement_counts_votes_agreeing_with_their_pair_majority():
    votes = [
        ("w1", "a", "b", "a"),
        ("w2", "b", "a", "a"),
        ("w3", "a", "b", "b"),  # 2 of 3
        ("w1", "a", "c", "c"),
        ("w2", "c", "a", "c"),
        ("w3", "a", "c", "c"),
        ("w4", "a", "c", "a"),  # 3 of 4
        ("w1", "b", "c", "b"),
        ("w2", "b", "c", "c"),  # tied: skipped
        ("w1", "c", "d", "d"),  # single: skipped
    ]
    assert majority_agreement(votes) == pytest.approx(5 / 7)


def test_majority_agreement_is_nan_with_nothing_to_count():
    assert math.isnan(majority_agreement([]))
    assert math.isnan(majority_agreement([("w1", "a", "b", "a"), ("w2", "a", "b", "b")]))


def test_majority_agreement_rejects_a_winner_outside_the_pair():
    with pytest.raises(ValueError, match="winner"):
        majority_agreement([("w1", "a", "b", "c")])


@given(
    st.lists(
        st.tuples(st.sampled_from("uvw"), st.sampled_from("abcd"), st.sampled_from("abcd"), st.booleans()), max_size=30
    )
)
def test_majority_agreement_is_a_share_or_nan(raw):
    votes = [(w, a, b, a if first else b) for w, a, b, first in raw if a != b]
    share = majority_agreement(votes)
    assert math.isnan(share) or 0.5 < share <= 1.0


@pytest.mark.parametrize(
    "level, expected",
    [
        # Published values 0.743, 0.849, 0.815; the exact fractions come from an independent
        # brute-force enumeration of all value pairs (n = 40 pairable values).
        ("nominal", 113 / 152),
        ("interval", 951 / 1120),
        ("ordinal", 108577 / 133160),
    ],
)
def test_krippendorff_alpha_matches_krippendorff_2011(level, expected):
    alpha = krippendorff_alpha(KRIPPENDORFF_LABELS, level=level)
    assert alpha == pytest.approx(expected, abs=1e-12)
    assert round(alpha, 3) == {"nominal": 0.743, "interval": 0.849, "ordinal": 0.815}[level]


@pytest.mark.parametrize(
    "level, expected",
    [
        # Units u1 = (1, 2), u2 = (3, 3); u3 = (5) is unpairable. n = 4 values {1, 2, 3, 3}.
        # Observed Σ o·δ²: only u1 disagrees, ordered pairs (1,2), (2,1) weighted 1/(2-1).
        # interval: observed 2·1 = 2; expected Σ over ordered pairs of values
        #   2·(1 + 4 + 4 + 1 + 1 + 0) = 22 → α = 1 - 3·2/22 = 8/11.
        ("interval", 8 / 11),
        # nominal: observed 2; expected 2·5 disagreeing unordered pairs = 10 → 1 - 6/10.
        ("nominal", 0.4),
        # ordinal: marginals n1 = 1, n2 = 1, n3 = 2; δ²12 = (2 - 1)² = 1, δ²13 = (4 - 1.5)²
        #   = 6.25, δ²23 = (3 - 1.5)² = 2.25; observed 2·1 = 2; expected
        #   2·(1·1·1 + 1·2·6.25 + 1·2·2.25) = 36 → α = 1 - 3·2/36 = 5/6.
        ("ordinal", 5 / 6),
    ],
)
def test_krippendorff_alpha_on_a_hand_computed_example(level, expected):
    labels = [("a", "u1", 1), ("b", "u1", 2), ("a", "u2", 3), ("b", "u2", 3), ("a", "u3", 5)]
    assert krippendorff_alpha(labels, level=level) == pytest.approx(expected, abs=1e-12)


@given(
    st.lists(st.tuples(st.sampled_from([0.5, 1, 2, 3, 7.25]), st.integers(2, 4)), min_size=2, max_size=12),
    st.sampled_from(["interval", "ordinal", "nominal"]),
)
def test_krippendorff_alpha_is_one_for_perfect_agreement(units, level):
    labels = [(f"w{k}", unit, value) for unit, (value, count) in enumerate(units) for k in range(count)]
    alpha = krippendorff_alpha(labels, level=level)
    if len({value for value, _ in units}) == 1:
        assert math.isnan(alpha)
    else:
        assert alpha == pytest.approx(1.0, abs=1e-12)


def test_bootstrap_stability_ranks_integer_labels_as_any_others():
    # Integer labels are ranked by counting, others by sorting: the same ranks, so dividing
    # every label by 4 (no longer integers; quarters keep sums exact, so ties stay ties)
    # leaves each draw's ρ, and the curve, as it was.
    generator = random.Random(8)
    labels = [(f"w{k}", item, generator.randint(1, 5)) for item in range(200) for k in range(4)]
    counted = bootstrap_stability(labels, draws=30, rng=2)
    sorted_ = bootstrap_stability([(w, item, score / 4) for w, item, score in labels], draws=30, rng=2)
    for a, b in zip(counted, sorted_, strict=True):
        assert (a.size, a.items) == (b.size, b.items)
        assert a.mean == pytest.approx(b.mean, abs=1e-12) and a.sd == pytest.approx(b.sd, abs=1e-12)


@pytest.mark.parametrize(
    "labels",
    [
        [],
        [("a", "u1", 3), ("a", "u2", 4)],  # no pairable unit
        [("a", "u1", 3), ("b", "u1", 3), ("a", "u2", 3), ("b", "u2", 3)],  # one value overall
    ],
)
@pytest.mark.parametrize("level", ["interval", "ordinal", "nominal"])
def test_krippendorff_alpha_is_nan_when_undefined(labels, level):
    assert math.isnan(krippendorff_alpha(labels, level=level))


def test_krippendorff_alpha_rejects_an_unknown_level():
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha(KRIPPENDORFF_LABELS, level="ratio")


def test_bootstrap_stability_is_one_when_items_agree_internally():
    # Every label of an item is the same, so every sample mean is that value: ρ = 1.
    labels = [(f"w{k}", item, value) for item, value in enumerate([1, 2, 3, 4, 5, 2.5]) for k in range(3)]
    points = bootstrap_stability(labels, draws=20, rng=0)
    assert [point.size for point in points] == [1, 2, 3]
    for point in points:
        assert point.mean == pytest.approx(1.0) and point.sd == pytest.approx(0.0)
        assert point.items == 6


def test_bootstrap_stability_matches_the_hand_computed_distribution():
    # A = {1, 1}, B = {2, 2}, C = {1, 3}; N = 1: each sample draws C's 1 or 3 (p = 1/2).
    # Same draw twice → identical rankings, ρ = 1. Draws 1 and 3 → ranks (1.5, 3, 1.5)
    # vs (1, 2, 3): centred (-.5, 1, -.5)·(-1, 0, 1) = 0 → ρ = 0. So ρ ∈ {0, 1} with
    # p = 1/2 each: mean 0.5, sd ≈ 0.5; 400 draws put the mean within ±0.1 (4 SE).
    labels = [("w1", "A", 1), ("w2", "A", 1), ("w1", "B", 2), ("w2", "B", 2), ("w1", "C", 1), ("w2", "C", 3)]
    (point,) = bootstrap_stability(labels, sizes=[1], draws=400, rng=np.random.default_rng(7))
    assert point.mean == pytest.approx(0.5, abs=0.1)
    assert point.sd == pytest.approx(0.5, abs=0.05)


def test_bootstrap_stability_grows_with_labels_per_item_and_is_reproducible():
    generator = random.Random(3)
    truth = [generator.gauss(0, 1) for _ in range(300)]
    labels = [
        (f"w{k}", item, min(5, max(1, round(3 + t + generator.gauss(0, 1)))))
        for item, t in enumerate(truth)
        for k in range(5)
    ]
    curve = bootstrap_stability(labels, draws=50, rng=11)
    means = [point.mean for point in curve]
    assert means == sorted(means) and 0 < means[0] < means[-1] < 1
    assert bootstrap_stability(labels, draws=50, rng=11) == curve
    assert bootstrap_stability(labels, draws=50, rng=random.Random(5)) == bootstrap_stability(
        labels, draws=50, rng=random.Random(5)
    )


@pytest.mark.parametrize(
    "labels",
    [
        [],
        [("w1", "p", 1), ("w2", "p", 2), ("w1", "q", 3), ("w2", "q", 4)],  # 2 items
        [(f"w{k}", item, 3) for k in range(2) for item in "pqrs"],  # all tied
        [("w1", item, 3) for item in "pqrs"],  # 1 label each
    ],
)
def test_bootstrap_stability_is_nan_when_undefined(labels):
    for point in bootstrap_stability(labels, sizes=[1, 2], draws=5, rng=0):
        assert math.isnan(point.mean) and math.isnan(point.sd)


def test_run_reliability_by_hand():
    # Shared x, y, z, w (v only in b, u is None in b): a = (1, 2, 3, 4), b = (2, 1, 4, 3).
    # dx = (-1.5, -.5, .5, 1.5), dy = (-.5, -1.5, 1.5, .5): Σdxdy = 3, Σdx² = Σdy² = 5
    # → r = 0.6; the values are their own ranks, so Spearman is 0.6 too.
    a = {"x": 1, "y": 2, "z": 3, "w": 4, "u": 5}
    b = {"x": 2, "y": 1, "z": 4, "w": 3, "v": 9, "u": None}
    result = run_reliability(a, b)
    assert result.pearson == pytest.approx(0.6) and result.spearman == pytest.approx(0.6)
    assert result.n == 4 and result.reason == ""


def test_run_reliability_spearman_uses_ranks():
    # b is a monotone but non-linear function of a: Spearman 1, Pearson below 1.
    result = run_reliability({k: k for k in range(4)}, {0: 0, 1: 1, 2: 2, 3: 10})
    assert result.spearman == pytest.approx(1.0) and result.pearson < 0.9


@pytest.mark.parametrize(
    "a, b, reason",
    [
        ({}, {}, "fewer than 3 shared items"),
        ({"x": 1, "y": 2, "z": float("nan")}, {"x": 1, "y": 2, "z": 3}, "fewer than 3 shared"),
        ({"x": 1, "y": 2, "z": 3}, {"x": 4, "y": 4, "z": 4}, "all equal"),
    ],
)
def test_run_reliability_is_nan_with_a_reason(a, b, reason):
    result = run_reliability(a, b)
    assert math.isnan(result.pearson) and math.isnan(result.spearman)
    assert reason in result.reason


@given(labels_strategy)
def test_crowd_statistics_never_raise_on_small_inputs(labels):
    for value in (
        meta_worker_agreement(labels, n=2),
        krippendorff_alpha(labels),
        krippendorff_alpha(labels, "ordinal"),
        krippendorff_alpha(labels, "nominal"),
    ):
        assert math.isnan(value) or value <= 1.0 + 1e-12
    for point in bootstrap_stability(labels, draws=3, rng=0):
        assert math.isnan(point.mean) or -1.0 <= point.mean <= 1.0


# Few distinct values, so most draws have ties; infinities and signed zeros on purpose.
tied_values = st.sampled_from([0.0, -0.0, 1.0, 1.5, 2.0, -4.0, 1e300, math.inf, -math.inf])


def test_average_ranks_by_hand():
    ranks = average_ranks([[3, 1, 3, 2, 3], [0, 0, 0, 0, 0]])
    assert ranks.tolist() == [[4.0, 1.0, 4.0, 2.0, 4.0], [3.0, 3.0, 3.0, 3.0, 3.0]]


@given(arrays(np.float64, array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=9), elements=tied_values))
def test_average_ranks_match_scipy_along_the_last_axis(values):
    np.testing.assert_array_equal(average_ranks(values), rankdata(values, axis=-1))


@given(
    arrays(
        np.float64,
        array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=6),
        elements=tied_values | st.just(math.nan),
    )
)
def test_average_ranks_of_a_row_with_nan_are_nan_as_in_scipy(values):
    ranks = average_ranks(values)
    np.testing.assert_array_equal(ranks, rankdata(values, axis=-1))
    assert np.isnan(ranks).all(axis=-1).tolist() == np.isnan(values).any(axis=-1).tolist()


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")
@given(st.lists(st.tuples(tied_values, st.sampled_from([0.0, 1.0, 2.0, 2.0, 3.5, math.nan])), max_size=30))
def test_spearman_rho_matches_scipy(pairs):
    x, y = [p[0] for p in pairs], [p[1] for p in pairs]
    expected = spearmanr(x, y).statistic if len(pairs) >= 2 else math.nan
    rho = spearman_rho(x, y)
    assert (math.isnan(rho) and math.isnan(expected)) or rho == expected
