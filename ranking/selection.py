"""Choosing the next batch of comparison HITs from the TrueSkill posterior (no Django).

Falke & Gurevych (EMNLP 2017) publish comparisons in batches "based on the confidence of
the TrueSkill model" (Herbrich et al. 2007). Plain uncertainty sampling (the pairs whose
outcome is closest to a coin flip) does worse than random: it keeps re-comparing a few
items that are truly close and starves the rest. `next_batch` instead:

1. scores every pair by the information its outcome brings about the two skills
   (BALD, Houlsby et al. 2011, for the probit model TrueSkill uses), which is high only
   when the order is in doubt *and* that doubt comes from the posterior, not from the
   performance noise β: a settled pair that is a coin flip scores ~0;
2. discounts pairs that already have labels, 1 / (1 + labels / 2): the crowd disagrees
   systematically on some pairs (majority agreement 0.73-0.78 in the paper), so the
   model's i.i.d. view overvalues repeats, and a new pair also adds a new link between
   items;
3. weights pairs by the chance that their items are in the top 50 (which feed the
   concept maps), by up to 1.5x, so the top and its boundary get more without the rest
   being ignored;
4. spreads a batch over many items: a key is in at most ceil(slots / keys) groups of a
   batch (one for 10 groups of 5 over ~112 keys), so no item is starved and no batch
   hammers a few items. In benchmarks/selection_bench.py this coverage carries the
   whole gain over random groups: with TrueSkill's sequential refit, which pairs fill
   the groups (close in μ, spread out, or random) moves Spearman by less than 0.01;
5. packs each group greedily: the seed is the free key with the most information to
   gain with the other free keys, then the key adding the most information to the group
   (sum over the members plus the weakest link times the group size, so all 10 pairs of
   a group of 5 are informative — in practice, keys close in μ).

Exact ties go to the key that comes first in an rng-shuffled order, and every group is
presented in a shuffled order (the order shown in a drag-and-drop HIT must not hint at
the current ranking). See benchmarks/selection_bench.py for the effect against random
groups.
"""

import math
import random

import numpy as np
from scipy.special import ndtr

from ranking.rating import DEFAULT_BETA

TOP_K = 50
TOP_EMPHASIS = 0.5
REPEAT_DISCOUNT_LABELS = 2.0

# Houlsby et al. (2011): h(Φ(x)) ≈ exp(−x² / (π ln 2)), h the binary entropy in bits.
_BALD_C2 = math.pi * math.log(2) / 2


def next_batch(ratings, counts, n_pairs=100, group_size=5, rng=None):
    """Groups of `group_size` distinct keys whose C(group_size, 2) pairs are worth labelling.

    ratings: {key: trueskill.Rating} (β is the default environment's, as a Rating does
    not carry its environment); counts: {frozenset({a, b}): labels already seen};
    rng: random.Random (None: a fresh one). Returns max(1, ceil(n_pairs / C(g, 2)))
    groups. With fewer keys than `group_size` every group holds all keys; with fewer
    than two keys there is no pair to ask about and the result is [].
    Deterministic for a given rng state and ratings order.
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
        gains = _pair_gains(keys, ratings, counts)
        groups = _pack(gains, n_groups, size)
        groups = [[keys[index] for index in group] for group in groups]
    for group in groups:
        rng.shuffle(group)
    return [tuple(group) for group in groups]


def _pair_gains(keys, ratings, counts):
    """The n×n matrix of pair values: information gain × repeat discount × top weight."""
    mu = np.array([ratings[key].mu for key in keys], dtype=float)
    sigma = np.array([ratings[key].sigma for key in keys], dtype=float)
    gains = expected_information_gain(mu, sigma, DEFAULT_BETA)
    gains /= 1 + _label_counts(keys, counts) / REPEAT_DISCOUNT_LABELS
    weight = 1 + TOP_EMPHASIS * top_probability(mu, sigma, TOP_K)
    return gains * (weight[:, None] + weight[None, :]) / 2


def expected_information_gain(mu, sigma, beta):
    """Mutual information (bits) between the outcome of a vs b and their skills, all pairs.

    With m = (μa − μb) / (√2 β) and v = (σa² + σb²) / (2β²) (Houlsby et al. 2011):
    I = h(Φ(m / √(1 + v))) − √(C² / (v + C²)) · exp(−m² / (2 (v + C²))), C² = π ln 2 / 2.
    """
    m = (mu[:, None] - mu[None, :]) / (math.sqrt(2) * beta)
    v = (sigma[:, None] ** 2 + sigma[None, :] ** 2) / (2 * beta**2)
    p = np.clip(ndtr(m / np.sqrt(1 + v)), 1e-15, 1 - 1e-15)
    outcome_entropy = -(p * np.log2(p) + (1 - p) * np.log2(1 - p))
    noise_entropy = np.sqrt(_BALD_C2 / (v + _BALD_C2)) * np.exp(-(m**2) / (2 * (v + _BALD_C2)))
    gains = np.maximum(outcome_entropy - noise_entropy, 0.0)
    np.fill_diagonal(gains, 0.0)
    return gains


def top_probability(mu, sigma, k):
    """P(skill above the boundary between the k-th and (k+1)-th μ) = Φ((μ − b) / σ); 1 when ≤ k keys."""
    if len(mu) <= k:
        return np.ones_like(mu)
    descending = np.sort(mu)[::-1]
    boundary = (descending[k - 1] + descending[k]) / 2
    return ndtr((mu - boundary) / sigma)


def _label_counts(keys, counts):
    index = {key: position for position, key in enumerate(keys)}
    matrix = np.zeros((len(keys), len(keys)))
    for pair, labels in counts.items():
        a, b = tuple(pair)
        if a in index and b in index:
            matrix[index[a], index[b]] = matrix[index[b], index[a]] = labels
    return matrix


def _pack(gains, n_groups, size):
    """Greedy groups of `size` indices; each index in at most ceil(slots / n) groups."""
    n = len(gains)
    cap = math.ceil(n_groups * size / n)
    uses = np.zeros(n, dtype=int)
    groups = []
    for _ in range(n_groups):
        open_keys = _below_cap(uses, cap, [])
        seed_scores = gains[:, open_keys].sum(axis=1)
        members = [int(np.argmax(np.where(open_keys, seed_scores, -np.inf)))]
        while len(members) < size:
            to_members = gains[members]
            scores = to_members.sum(axis=0) + len(members) * to_members.min(axis=0)
            open_keys = _below_cap(uses, cap, members)
            members.append(int(np.argmax(np.where(open_keys, scores, -np.inf))))
        uses[members] += 1
        groups.append(members)
    return groups


def _below_cap(uses, cap, members):
    """Keys not in the group and under the cap; all keys not in the group if none is."""
    open_keys = uses < cap
    open_keys[members] = False
    if not open_keys.any():
        open_keys = np.ones(len(uses), dtype=bool)
        open_keys[members] = False
    return open_keys
