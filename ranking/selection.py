"""Choosing the next batch of comparison HITs from the TrueSkill posterior (no Django).

Falke & Gurevych (EMNLP 2017) publish comparisons in batches "based on the confidence of
the TrueSkill model" (Herbrich et al. 2007). With crowd noise (two full runs of the
paper's system correlate only 0.73-0.82) the gap between two near-equal items is far
smaller than what a few votes can measure, so groups of neighbours in the ranking place
no item globally (their errors add up along the chain), and plain uncertainty sampling
does worse than random. `next_batch` therefore decides *who* is asked by coverage and
*with whom* by information:

1. the batch's slots go to the keys whose ranks most need labels: need = (labels + 1) /
   (floor + f(μ)), f(μ) = exp(−z²/2) the density of a normal fitted to the μs (z the
   standardised μ, f = 1 at the mean). An error δ in a skill moves the item's rank by
   about n · f(μ) · δ, so keys in the crowded middle of the ranking (where the top-50
   boundary also lies) earn more comparisons than the extremes. The floor keeps the
   extremes from being starved: a key never asked (need ≤ 1 / floor = 10) comes before
   every key with more than 10 labels (a group of five answered by three workers gives
   it 12). A key is in at most ceil(slots / keys) groups of a batch;
2. pairs are scored by the information their outcome brings about the two skills
   (BALD, Houlsby et al. 2011, for TrueSkill's probit model, with the performance noise
   β of `crowd_env`), high only when the order is in doubt *and* that doubt comes from
   the posterior: a settled pair that is a coin flip scores ~0;
3. pairs that already have labels are discounted by 1 / (1 + labels / 2): the crowd
   disagrees systematically on some pairs (majority agreement 0.73-0.78 in the paper),
   so the model's i.i.d. view overvalues repeats;
4. groups are packed greedily: the seed is the free key with the most information to
   gain with the other free keys, then the key adding the most to the group (sum over
   the members plus the weakest link times the group size, so all C(g, 2) pairs of a
   group are informative).

Fit the ratings with `crowd_env()`: TrueSkill's default β = σ/2 takes a crowd vote for
far stronger evidence than it is, so the posterior collapses after a few votes and the
order of the votes decides the ranking. benchmarks/selection_bench.py reports both envs
against random groups, and how β was chosen.

Exact ties go to the key that comes first in an rng-shuffled order, and every group is
presented in a shuffled order (the order shown in a drag-and-drop HIT must not hint at
the current ranking).
"""

import math
import random
from collections.abc import Hashable, Mapping
from typing import TypeVar

import numpy as np
import trueskill
from scipy.special import ndtr

from ranking.rating import DEFAULT_MU, DEFAULT_SIGMA, DEFAULT_TAU

K = TypeVar("K", bound=Hashable)

# Performance noise for crowd votes: 1.5 prior σ (3x TrueSkill's default β = σ/2). A
# Thurstonian worker whose noise sd is 1.25 times the spread of the true utilities
# (the run-to-run reliability the paper reports) has β = 1.25σ; the ten pairs read off
# one worker's ordering of five share that worker's noise, so a little more. Chosen on
# tuning seeds disjoint from the benchmark's (selection_bench.py --tune): any β in
# 1.25σ-2.5σ scores within ~0.005 Spearman, for next_batch and for random groups.
CROWD_BETA = 1.5 * DEFAULT_SIGMA
DENSITY_FLOOR = 0.1
REPEAT_DISCOUNT_LABELS = 2.0

# Houlsby et al. (2011): h(Φ(x)) ≈ exp(−x² / (π ln 2)), h the binary entropy in bits.
_BALD_C2 = math.pi * math.log(2) / 2


def crowd_env() -> trueskill.TrueSkill:
    """The TrueSkill environment for crowd votes: μ 25, σ 25/3, β 1.5σ, τ σ/100, no draws."""
    return trueskill.TrueSkill(mu=DEFAULT_MU, sigma=DEFAULT_SIGMA, beta=CROWD_BETA, tau=DEFAULT_TAU, draw_probability=0)


def next_batch(
    ratings: Mapping[K, trueskill.Rating],
    counts: Mapping[frozenset[K], float],
    n_pairs: int = 100,
    group_size: int = 5,
    rng: random.Random | None = None,
) -> list[tuple[K, ...]]:
    """Groups of `group_size` distinct keys whose C(group_size, 2) pairs are worth labelling.

    ratings: {key: trueskill.Rating}, best fit with `crowd_env()` (a Rating does not
    carry its environment; the information gain assumes β = CROWD_BETA);
    counts: {frozenset({a, b}): labels already seen}; rng: random.Random (None: a fresh
    one). Returns max(1, ceil(n_pairs / C(g, 2))) groups. With fewer keys than
    `group_size` every group holds all keys; with fewer than two keys there is no pair
    to ask about and the result is []. Deterministic for a given rng state and ratings
    order.
    """
    if group_size < 2:
        raise ValueError("a group needs at least two keys")
    rng = random.Random() if rng is None else rng
    keys = list(ratings)
    rng.shuffle(keys)
    if len(keys) < 2:
        return []
    size = min(group_size, len(keys))
    n_groups = max(1, math.ceil(n_pairs / math.comb(size, 2)))
    if size < group_size:
        groups = [list(keys) for _ in range(n_groups)]
    else:
        mu = np.array([ratings[key].mu for key in keys], dtype=float)
        sigma = np.array([ratings[key].sigma for key in keys], dtype=float)
        labels = _label_counts(keys, counts)
        gains = expected_information_gain(mu, sigma, CROWD_BETA)
        gains /= 1 + labels / REPEAT_DISCOUNT_LABELS
        need = (labels.sum(axis=1) + 1) / (DENSITY_FLOOR + mu_density(mu))
        packed = _pack(gains, _neediest(need, n_groups * size), n_groups, size)
        groups = [[keys[index] for index in group] for group in packed]
    for group in groups:
        rng.shuffle(group)
    return [tuple(group) for group in groups]


def expected_information_gain(mu: np.ndarray, sigma: np.ndarray, beta: float) -> np.ndarray:
    """Mutual information (bits) between the outcome of a vs b and their skills, all pairs.

    With m = (μa − μb) / (√2 β) and v = (σa² + σb²) / (2β²) (Houlsby et al. 2011):
    I = h(Φ(m / √(1 + v))) − √(C² / (v + C²)) · exp(−m² / (2 (v + C²))), C² = π ln 2 / 2.
    """
    m = (mu[:, None] - mu[None, :]) / (math.sqrt(2) * beta)
    v = (sigma[:, None] ** 2 + sigma[None, :] ** 2) / (2 * beta**2)
    p: np.ndarray = np.clip(ndtr(m / np.sqrt(1 + v)), 1e-15, 1 - 1e-15)
    outcome_entropy = -(p * np.log2(p) + (1 - p) * np.log2(1 - p))
    noise_entropy = np.sqrt(_BALD_C2 / (v + _BALD_C2)) * np.exp(-(m**2) / (2 * (v + _BALD_C2)))
    gains: np.ndarray = np.maximum(outcome_entropy - noise_entropy, 0.0)
    np.fill_diagonal(gains, 0.0)
    return gains


def mu_density(mu: np.ndarray) -> np.ndarray:
    """exp(−z²/2), z = (μ − mean) / sd: a normal fitted to the μs, 1 at the mean.

    All 1 when the μs are equal (nothing is known yet, so only labels decide).
    """
    spread = float(np.std(mu))
    if spread == 0:
        return np.ones_like(mu)
    density: np.ndarray = np.exp(-(((mu - mu.mean()) / spread) ** 2) / 2)
    return density


def _label_counts(keys: list[K], counts: Mapping[frozenset[K], float]) -> np.ndarray:
    index = {key: position for position, key in enumerate(keys)}
    matrix = np.zeros((len(keys), len(keys)))
    for pair, labels in counts.items():
        a, b = tuple(pair)
        if a in index and b in index:
            matrix[index[a], index[b]] = matrix[index[b], index[a]] = labels
    return matrix


def _neediest(need: np.ndarray, slots: int) -> np.ndarray:
    """Mask of the `slots` keys with the lowest need score (all keys if there are fewer)."""
    chosen = np.zeros(len(need), dtype=bool)
    chosen[np.argsort(need, kind="stable")[:slots]] = True
    return chosen


def _pack(gains: np.ndarray, eligible: np.ndarray, n_groups: int, size: int) -> list[list[int]]:
    """Greedy groups of `size` indices, drawn from `eligible` while it has open keys;
    each index in at most ceil(slots / n) groups."""
    n = len(gains)
    cap = math.ceil(n_groups * size / n)
    uses = np.zeros(n, dtype=int)
    groups: list[list[int]] = []
    for _ in range(n_groups):
        open_keys = _open(uses, cap, eligible, [])
        seed_scores = gains[:, open_keys].sum(axis=1)
        members = [int(np.argmax(np.where(open_keys, seed_scores, -np.inf)))]
        while len(members) < size:
            to_members = gains[members]
            scores = to_members.sum(axis=0) + len(members) * to_members.min(axis=0)
            open_keys = _open(uses, cap, eligible, members)
            members.append(int(np.argmax(np.where(open_keys, scores, -np.inf))))
        uses[members] += 1
        groups.append(members)
    return groups


def _open(uses: np.ndarray, cap: int, eligible: np.ndarray, members: list[int]) -> np.ndarray:
    """Keys a group may take next: eligible, not in the group and under the cap; failing
    that, any key under the cap not in the group; failing that, any key not in the group."""
    not_member = np.ones(len(uses), dtype=bool)
    not_member[members] = False
    for allowed in (eligible & (uses < cap), uses < cap):
        if (allowed & not_member).any():
            return allowed & not_member
    return not_member
