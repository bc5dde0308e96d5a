"""ranking/rating.py: the closed-form refit equals trueskill.rate_1vs1 applied in order.

`env.rate_1vs1` is a deprecated alias of `trueskill.rate_1vs1(..., env=env)`, which is
what the reference below calls. Tolerance: 1e-6 on μ and σ (the contract); in practice
the two agree to ~1e-12.
"""

import math
import subprocess
import sys
from pathlib import Path

import pytest
import trueskill
from hypothesis import given, settings
from hypothesis import strategies as st

from ranking.rating import _truncation_moments, default_env, fit

ROOT = Path(__file__).resolve().parents[2]
TOLERANCE = 1e-6


def rate_in_order(comparisons, env, items=()):
    """The reference: trueskill's factor graph, one rate_1vs1 per comparison."""
    ratings = {key: env.create_rating() for key in items}
    for winner, loser in comparisons:
        ratings[winner], ratings[loser] = trueskill.rate_1vs1(
            ratings.get(winner, env.create_rating()), ratings.get(loser, env.create_rating()), env=env
        )
    return ratings


def assert_same_ratings(got, expected):
    assert got.keys() == expected.keys()
    for key in expected:
        assert got[key].mu == pytest.approx(expected[key].mu, abs=TOLERANCE)
        assert got[key].sigma == pytest.approx(expected[key].sigma, abs=TOLERANCE)


def comparison_sequences(max_items=10, max_length=60):
    pairs = st.tuples(st.integers(0, max_items - 1), st.integers(0, max_items - 1))
    return st.lists(pairs.filter(lambda pair: pair[0] != pair[1]), max_size=max_length)


def test_single_update_by_hand():
    # s² = σ² + τ² = 69.45139; c = √(2β² + 2s²) = 13.17668; t ≈ 0 (draw margin ~2e-7),
    # so v = φ(0)/Φ(0) = √(2/π) and w = v²: μ = 25 ± s²/c·v, σ² = s²(1 − s²/c²·w).
    ratings = fit([("winner", "loser")])

    assert ratings["winner"].mu == pytest.approx(29.205473, abs=1e-5)
    assert ratings["loser"].mu == pytest.approx(20.794527, abs=1e-5)
    assert ratings["winner"].sigma == pytest.approx(7.194816, abs=1e-5)
    assert ratings["loser"].sigma == pytest.approx(7.194816, abs=1e-5)


def test_default_env_is_the_documented_one():
    env = default_env()

    assert (env.mu, env.sigma, env.beta, env.tau, env.draw_probability) == pytest.approx(
        (25, 25 / 3, 25 / 6, 25 / 300, 0)
    )


@settings(deadline=None, max_examples=150)
@given(comparison_sequences())
def test_fit_equals_rate_1vs1_in_order(comparisons):
    env = default_env()

    assert_same_ratings(fit(comparisons), rate_in_order(comparisons, env))


@settings(deadline=None, max_examples=60)
@given(
    comparison_sequences(max_items=6, max_length=40),
    st.floats(-50, 50),
    st.floats(0.5, 20),
    st.floats(0.1, 10),
    st.floats(0, 1),
    st.floats(0, 0.5),
)
def test_fit_equals_rate_1vs1_with_any_env(comparisons, mu, sigma, beta, tau, draw_probability):
    env = trueskill.TrueSkill(mu=mu, sigma=sigma, beta=beta, tau=tau, draw_probability=draw_probability)
    try:
        expected = rate_in_order(comparisons, env)
    except FloatingPointError:
        with pytest.raises(FloatingPointError):
            fit(comparisons, env=env)
        return

    assert_same_ratings(fit(comparisons, env=env), expected)


@settings(deadline=None, max_examples=20)
@given(comparison_sequences(max_items=5, max_length=15))
def test_fit_uses_the_envs_own_gaussian_functions(comparisons):
    env = trueskill.TrueSkill(mu=0, sigma=2, beta=1, tau=0.02, draw_probability=0.05, backend="scipy")

    assert_same_ratings(fit(comparisons, env=env), rate_in_order(comparisons, env))


@pytest.mark.parametrize("beta", [25 / 6, 1.0, 0.1])
def test_extreme_upset_matches(beta):
    # "A" beats 60 items twenty times over, each of which beats "Z"; then "Z" beats "A":
    # t reaches about -20, where v ≈ −t and w = v (v + t) loses most of its digits.
    env = trueskill.TrueSkill(mu=25, sigma=25 / 3, beta=beta, tau=0, draw_probability=0)
    comparisons = [pair for _ in range(20) for i in range(60) for pair in (("A", i), (i, "Z"))]
    comparisons.append(("Z", "A"))

    assert_same_ratings(fit(comparisons, env=env), rate_in_order(comparisons, env))


@pytest.mark.parametrize("env", [default_env(), trueskill.TrueSkill(draw_probability=0.1, backend="scipy")])
def test_v_and_w_match_the_env_down_to_underflow(env):
    margin = trueskill.calc_draw_margin(env.draw_probability, 2, env)
    truncation_moments = _truncation_moments(env)
    for step in range(-4500, 1001):
        t, epsilon = step / 100, margin
        try:
            expected = (env.v_win(t, epsilon), env.w_win(t, epsilon))
        except FloatingPointError:
            with pytest.raises(FloatingPointError):
                truncation_moments(t, epsilon)
            continue
        assert truncation_moments(t, epsilon) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_items_appear_even_if_never_compared():
    env = default_env()

    ratings = fit([("a", "b")], items=["c", "a"])

    assert set(ratings) == {"a", "b", "c"}
    assert (ratings["c"].mu, ratings["c"].sigma) == (env.mu, env.sigma)
    assert_same_ratings(ratings, rate_in_order([("a", "b")], env, items=["c", "a"]))


def test_empty_input():
    assert fit([]) == {}
    ratings = fit([], items=[1, 2])
    assert {key: (rating.mu, rating.sigma) for key, rating in ratings.items()} == {
        1: (25, 25 / 3),
        2: (25, 25 / 3),
    }


def test_accepts_any_iterable_of_pairs():
    comparisons = [(1, 2), (2, 3), (3, 1)]

    assert_same_ratings(fit(iter(comparisons)), fit(comparisons))


def test_rejects_what_it_cannot_rate():
    with pytest.raises(ValueError):
        fit([("a", "a")])
    dynamic = trueskill.TrueSkill(draw_probability=lambda rating1, rating2, env: 0.1)
    with pytest.raises(ValueError):
        fit([("a", "b")], env=dynamic)


def test_ratings_are_trueskill_ratings_with_finite_values():
    ratings = fit([(i, (i + 1) % 5) for i in range(5)] * 10)

    assert all(isinstance(rating, trueskill.Rating) for rating in ratings.values())
    assert all(math.isfinite(rating.mu) and rating.sigma > 0 for rating in ratings.values())


def test_imports_no_django():
    code = "import sys, ranking.rating; sys.exit('django' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0
