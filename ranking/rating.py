"""TrueSkill refit over pairwise comparisons, in closed form (no Django).

One comparison "winner beat loser" is one TrueSkill 1-vs-1 update (Herbrich, Minka &
Graepel 2007, "TrueSkill: a Bayesian skill rating system"; Moser 2010, "Computing your
skill"). With the dynamics factor applied first, s² = σ² + τ², and
c² = 2β² + s_w² + s_l², t = (μ_w − μ_l) / c, ε = draw margin / c:

    μ_w' = μ_w + s_w²/c · v(t, ε)         σ_w'² = s_w² · (1 − s_w²/c² · w(t, ε))
    μ_l' = μ_l − s_l²/c · v(t, ε)         σ_l'² = s_l² · (1 − s_l²/c² · w(t, ε))

with v = φ(t−ε)/Φ(t−ε) and w = v·(v + t − ε). This is exactly what `trueskill.rate_1vs1`
computes through its factor graph (for two players the message schedule converges in one
pass), so `fit` reproduces applying it in order, only without building a graph per
comparison. The ranking method is Falke & Gurevych (EMNLP 2017).
"""

import math
from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

import trueskill
from trueskill import backends

K = TypeVar("K", bound=Hashable)
TruncationMoments = Callable[[float, float], tuple[float, float]]

DEFAULT_MU = 25.0
DEFAULT_SIGMA = DEFAULT_MU / 3
DEFAULT_BETA = DEFAULT_SIGMA / 2
DEFAULT_TAU = DEFAULT_SIGMA / 100

_SQRT2 = math.sqrt(2)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)


def default_env() -> trueskill.TrueSkill:
    """The environment Salience rates with: μ 25, σ 25/3, β σ/2, τ σ/100, no draws."""
    return trueskill.TrueSkill(
        mu=DEFAULT_MU, sigma=DEFAULT_SIGMA, beta=DEFAULT_BETA, tau=DEFAULT_TAU, draw_probability=0
    )


def fit(
    comparisons: Iterable[tuple[K, K]], items: Iterable[K] | None = None, env: trueskill.TrueSkill | None = None
) -> dict[K, trueskill.Rating]:
    """Rate every key by TrueSkill over `(winner, loser)` comparisons in chronological order.

    Equals applying `trueskill.rate_1vs1(ratings[winner], ratings[loser], env=env)` to each
    comparison in turn, starting from `env.create_rating()` for every key (|Δμ|, |Δσ| well
    below 1e-6; see tests/ranking/test_rating.py). Keys in `items` appear even if never
    compared. Like trueskill, raises FloatingPointError when an upset is too extreme for
    the env's Gaussian functions, and ValueError for a key compared with itself or a
    draw probability that is a function of the ratings (not supported here).
    """
    env = default_env() if env is None else env
    if callable(env.draw_probability):
        raise ValueError("fit needs a fixed draw probability, not a function of the ratings")
    margin = trueskill.calc_draw_margin(env.draw_probability, 2, env)
    truncation = _truncation_moments(env)
    beta_sq2 = 2 * env.beta**2
    tau_sq = env.tau**2
    prior = (float(env.mu), float(env.sigma) ** 2)
    state: dict[K, tuple[float, float]] = dict.fromkeys(items or (), prior)  # key -> (μ, σ²)

    for winner, loser in comparisons:
        if winner == loser:
            raise ValueError(f"{winner!r} cannot be compared with itself")
        mu_w, var_w = state.get(winner, prior)
        mu_l, var_l = state.get(loser, prior)
        var_w += tau_sq
        var_l += tau_sq
        c = math.sqrt(beta_sq2 + var_w + var_l)
        v, w = truncation((mu_w - mu_l) / c, margin / c)
        c_sq = c * c
        state[winner] = (mu_w + var_w / c * v, var_w * (1 - var_w / c_sq * w))
        state[loser] = (mu_l - var_l / c * v, var_l * (1 - var_l / c_sq * w))

    return {key: trueskill.Rating(mu, math.sqrt(var)) for key, (mu, var) in state.items()}


def _truncation_moments(env: trueskill.TrueSkill) -> TruncationMoments:
    """The function (t, ε) -> (v, w) of a win, as `env.v_win` and `env.w_win` compute it.

    For trueskill's built-in backend the same Gaussian approximations are inlined (one
    call instead of six); any other backend goes through the env's own cdf and pdf. Either
    way the large-upset branch matches trueskill: when Φ(t−ε) underflows, v = −(t−ε), and
    a w outside (0, 1) raises FloatingPointError.
    """
    if env.cdf is backends.cdf and env.pdf is backends.pdf:
        return _builtin_truncation_moments
    cdf, pdf = env.cdf, env.pdf

    def truncation_moments(t: float, epsilon: float) -> tuple[float, float]:
        x = t - epsilon
        denominator = cdf(x)
        v = pdf(x) / denominator if denominator else -x
        return v, _checked_w(v, x)

    return truncation_moments


def _builtin_truncation_moments(t: float, epsilon: float) -> tuple[float, float]:
    """v and w with trueskill.backends' cdf (Numerical Recipes erfc) and pdf, inlined."""
    x = t - epsilon
    z = -x / _SQRT2
    abs_z = abs(z)
    u = 1.0 / (1.0 + abs_z / 2.0)
    erfc = u * math.exp(
        -abs_z * abs_z
        - 1.26551223
        + u
        * (
            1.00002368
            + u
            * (
                0.37409196
                + u
                * (
                    0.09678418
                    + u
                    * (
                        -0.18628806
                        + u * (0.27886807 + u * (-1.13520398 + u * (1.48851587 + u * (-0.82215223 + u * 0.17087277))))
                    )
                )
            )
        )
    )
    denominator = 0.5 * (2.0 - erfc if z < 0 else erfc)
    v = _INV_SQRT_2PI * math.exp(-(x**2 / 2)) / denominator if denominator else -x
    return v, _checked_w(v, x)


def _checked_w(v: float, x: float) -> float:
    w = v * (v + x)
    if 0 < w < 1:
        return w
    raise FloatingPointError("TrueSkill update out of floating-point range (extreme upset)")
