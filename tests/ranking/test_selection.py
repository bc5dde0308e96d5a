"""ranking/selection.py: shape of a batch, determinism, coverage and what it prefers.

How much better than random groups it ranks is measured in benchmarks/selection_bench.py,
not asserted here.
"""

import math
import random
import statistics
import subprocess
import sys
from collections import Counter
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
import trueskill
from hypothesis import given, settings
from hypothesis import strategies as st

from ranking.rating import DEFAULT_SIGMA, default_env, fit
from ranking.selection import crowd_env, expected_information_gain, mu_density, next_batch

ROOT = Path(__file__).resolve().parents[2]


def fresh_ratings(n):
    env = default_env()
    return {key: env.create_rating() for key in range(n)}


def spread_ratings(n, sigma=2.0):
    return {key: trueskill.Rating(mu=float(key), sigma=sigma) for key in range(n)}


def add_labels(counts, group, labels=5):
    for a, b in combinations(group, 2):
        pair = frozenset((a, b))
        counts[pair] = counts.get(pair, 0) + labels


@pytest.mark.parametrize(("n_pairs", "n_groups"), [(100, 10), (101, 11), (95, 10), (10, 1), (1, 1), (0, 1)])
def test_batch_has_about_n_pairs_in_groups_of_distinct_keys(n_pairs, n_groups):
    groups = next_batch(fresh_ratings(112), {}, n_pairs=n_pairs, rng=random.Random(1))

    assert len(groups) == n_groups
    assert all(len(group) == 5 == len(set(group)) for group in groups)
    assert all(key in range(112) for group in groups for key in group)


def test_other_group_sizes():
    groups = next_batch(spread_ratings(40), {}, n_pairs=30, group_size=3, rng=random.Random(2))

    assert len(groups) == 10
    assert all(len(set(group)) == 3 for group in groups)


def test_same_rng_state_same_batch():
    ratings, counts = spread_ratings(112), {}
    add_labels(counts, (0, 1, 2, 3, 4))

    first = next_batch(ratings, counts, rng=random.Random(42))
    again = next_batch(ratings, counts, rng=random.Random(42))
    other = next_batch(ratings, counts, rng=random.Random(43))

    assert first == again
    assert first != other


def test_without_rng_it_still_returns_a_batch():
    assert len(next_batch(fresh_ratings(20), {})) == 10


def test_fewer_keys_than_group_size_gives_groups_of_all_keys():
    groups = next_batch(fresh_ratings(3), {}, n_pairs=10, group_size=5, rng=random.Random(3))

    assert len(groups) == math.ceil(10 / 3)
    assert all(sorted(group) == [0, 1, 2] for group in groups)


def test_fewer_than_two_keys_have_no_pairs_to_ask():
    assert next_batch({}, {}, rng=random.Random(4)) == []
    assert next_batch(fresh_ratings(1), {}, rng=random.Random(4)) == []


def test_group_size_below_two_is_refused():
    with pytest.raises(ValueError):
        next_batch(fresh_ratings(10), {}, group_size=1)


def test_never_seen_pairs_are_preferred_when_uncertainty_is_equal():
    ratings, counts = fresh_ratings(10), {}
    for a, b in combinations(range(10), 2):
        if not (a >= 5 and b >= 5):
            counts[frozenset((a, b))] = 5

    (group,) = next_batch(ratings, counts, n_pairs=10, rng=random.Random(5))

    assert sorted(group) == [5, 6, 7, 8, 9]


def test_never_seen_pair_is_chosen_over_seen_ones():
    ratings = fresh_ratings(6)
    counts = {frozenset(pair): 5 for pair in combinations(range(6), 2) if set(pair) != {2, 4}}

    (group,) = next_batch(ratings, counts, n_pairs=1, group_size=2, rng=random.Random(6))

    assert sorted(group) == [2, 4]


def test_counts_for_unknown_keys_are_ignored():
    counts = {frozenset(("gone", 0)): 5}

    assert len(next_batch(fresh_ratings(12), counts, rng=random.Random(7))) == 10


def test_a_batch_spreads_over_many_keys():
    groups = next_batch(spread_ratings(112), {}, n_pairs=100, rng=random.Random(8))

    appearances = Counter(key for group in groups for key in group)
    assert max(appearances.values()) == 1  # 50 slots over 112 keys: nobody twice
    many = next_batch(spread_ratings(20), {}, n_pairs=100, rng=random.Random(8))
    assert max(Counter(key for group in many for key in group).values()) <= math.ceil(50 / 20)


def test_groups_hold_keys_close_in_mu():
    groups = next_batch(spread_ratings(112), {}, n_pairs=100, rng=random.Random(9))

    spans = [max(group) - min(group) for group in groups]  # μ = key here
    assert np.median(spans) < 112 / 4


def test_information_gain_ignores_coin_flips_the_model_is_sure_about():
    mu = np.array([0.0, 0.0, 0.0, 0.0, 10.0])
    sigma = np.array([0.05, 0.05, 5.0, 5.0, 5.0])

    gains = expected_information_gain(mu, sigma, beta=25 / 6)

    assert gains[0, 1] < 0.01  # a settled coin flip: nothing to learn
    assert gains[2, 3] > 0.3  # an uncertain, close pair
    assert gains[2, 3] > gains[2, 4] > 0  # farther apart: less to learn
    assert np.allclose(gains, gains.T) and np.all(np.diag(gains) == 0)


def test_keys_never_asked_come_first():
    ratings, counts = spread_ratings(112), {}
    for start in range(0, 60, 5):
        add_labels(counts, range(start, start + 5), labels=3)  # 12 labels per key

    groups = next_batch(ratings, counts, n_pairs=100, rng=random.Random(10))

    assert all(key >= 60 for group in groups for key in group)


def test_with_equal_labels_the_crowded_middle_is_asked_first():
    groups = next_batch(spread_ratings(112), {}, n_pairs=100, rng=random.Random(11))

    # μ = key, evenly spread: the normal fitted to the μs is densest at 55.5.
    assert {key for group in groups for key in group} == set(range(31, 81))


def test_mu_density_is_one_at_the_mean_and_symmetric():
    assert np.array_equal(mu_density(np.full(4, 25.0)), np.ones(4))
    density = mu_density(np.array([-2.0, -1.0, 0.0, 1.0, 2.0]))
    assert density[2] == 1.0
    assert np.allclose(density, density[::-1]) and density[0] < density[1] < density[2]
    assert density[3] == pytest.approx(math.exp(-1 / 2 / 2))  # z = 1 / sd, sd = √2


def test_crowd_env_differs_from_the_default_only_in_beta():
    crowd, default = crowd_env(), default_env()

    assert crowd.beta == pytest.approx(1.5 * DEFAULT_SIGMA) == pytest.approx(3 * default.beta)
    assert (crowd.mu, crowd.sigma, crowd.tau, crowd.draw_probability) == (
        default.mu,
        default.sigma,
        default.tau,
        default.draw_probability,
    )


def test_a_crowd_vote_is_weaker_evidence_than_a_default_one():
    crowd, default = fit([("a", "b")], env=crowd_env()), fit([("a", "b")])

    assert 25 < crowd["a"].mu < default["a"].mu
    assert default["a"].sigma < crowd["a"].sigma < DEFAULT_SIGMA


@settings(deadline=None, max_examples=5)
@given(st.integers(0, 2**32 - 1))
def test_every_key_is_asked_and_the_middle_more_than_the_extremes(seed):
    rng = random.Random(seed)
    utility = {key: rng.gauss(0, 1) for key in range(112)}
    comparisons, counts, appearances = [], {}, Counter()
    for round_number in range(6):
        ratings = fit(comparisons, items=utility, env=crowd_env())
        for group in next_batch(ratings, counts, rng=rng):
            appearances.update(group)
            add_labels(counts, group)
            for _ in range(5):
                order = sorted(group, key=lambda key: utility[key] + rng.gauss(0, 1.25), reverse=True)
                comparisons.extend(combinations(order, 2))
        if round_number == 1:
            assert max(appearances.values()) == 1  # 100 slots: nobody twice before all are asked
        if round_number == 2:
            assert set(appearances) == set(utility)  # 150 slots over 112 keys: everyone

    ranked = sorted(utility, key=utility.get)
    middle, extremes = ranked[28:84], ranked[:14] + ranked[-14:]
    assert statistics.mean(appearances[key] for key in middle) > statistics.mean(appearances[key] for key in extremes)


def test_imports_no_django():
    code = "import sys, ranking.selection, ranking.stats; sys.exit('django' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0
