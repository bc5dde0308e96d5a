"""Crowd-level agreement and stability statistics, plus the long-format tables they share
with the per-worker quality control in `crowd.quality` (which re-exports every public
name here).

Pure core: NumPy only, no Django (ranks and Spearman's ρ are computed here rather than taken
from `scipy.stats`, whose import costs every Django process seconds of CPU at start-up).
Labels are `(worker, item, score)` triples and comparison votes `(worker, item_a, item_b,
winner)`; workers and items are any hashable keys. A statistic that is undefined is NaN (or
None per worker), never an exception; each docstring lists when that happens. Malformed input — a non-finite score, a vote whose
winner is not one of its two different items — raises ValueError.

Sources: Falke & Gurevych (2017), "Bringing Structure into Summaries: Crowdsourcing a
Benchmark Corpus of Concept Maps", EMNLP — meta-worker and majority agreement, repeated
runs. Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", Annenberg School
for Communication, University of Pennsylvania. van Halteren & Teufel (2004), "Evaluating
Information Content by Factoid Analysis: Human Annotation and Stability", EMNLP.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, NamedTuple, TypeVar

import numpy as np
from numpy.typing import ArrayLike

NAN = float("nan")

# A series whose root-mean-square deviation is below this fraction of its largest absolute
# value is treated as constant: derived values (means of other workers) carry rounding
# noise of about 1e-16 relative, which must not turn into a spurious correlation.
CONSTANT_TOLERANCE = 1e-9

# Upper bound on the number of sampled label indices held in memory at once.
BOOTSTRAP_CHUNK = 2_000_000
# Integer labels whose sums over a sample take at most this many values are ranked by
# counting (a 1–5 scale at 5 labels per item: 21 values), several times faster than sorting.
MAX_COUNTED_RANKS = 4_096

K = TypeVar("K", bound=Hashable)


def factorize(keys: Iterable[Hashable]) -> tuple[np.ndarray, list[Any]]:
    """Integer codes for `keys` in first-seen order, and the distinct keys by code.

    A dict, so keys may be any hashable (tuples, mixed types); integer keys (database ids)
    take `np.unique`, several times faster, with the same codes."""
    keys = list(keys)
    if keys and type(keys[0]) is int:
        array = np.asarray(keys)
        if array.ndim == 1 and array.dtype.kind == "i":
            return _factorize_integers(array)
    index: dict[Hashable, int] = {}
    codes = np.fromiter((index.setdefault(key, len(index)) for key in keys), np.intp, len(keys))
    return codes, list(index)


def _factorize_integers(array: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    distinct, first, inverse = np.unique(array, return_index=True, return_inverse=True)
    order = np.argsort(first)  # codes in first-seen order, as the dict gives them
    code = np.empty_like(order)
    code[order] = np.arange(len(order))
    return code[inverse].astype(np.intp), distinct[order].tolist()


@dataclass(frozen=True)
class LabelTable:
    """Likert labels as parallel arrays: `worker[i]`, `item[i]` index `workers`, `items`."""

    workers: list[Any]
    items: list[Any]
    worker: np.ndarray
    item: np.ndarray
    score: np.ndarray

    def subset(self, mask: np.ndarray) -> LabelTable:
        """The labels where `mask` holds, keeping the worker and item codes."""
        return LabelTable(self.workers, self.items, self.worker[mask], self.item[mask], self.score[mask])


def label_table(labels: Iterable[tuple[Hashable, Hashable, float]]) -> LabelTable:
    """Factorize `(worker, item, score)` triples; scores must be finite numbers."""
    rows = list(labels)
    workers, items, scores = columns(rows, 3)
    worker, worker_keys = factorize(workers)
    item, item_keys = factorize(items)
    score = np.asarray(scores, dtype=float)
    if not np.isfinite(score).all():
        raise ValueError("label scores must be finite numbers")
    return LabelTable(worker_keys, item_keys, worker, item, score)


def columns(rows: Sequence[tuple[Any, ...]], width: int) -> list[list[Any]]:
    """The rows' first `width` columns, each as a list."""
    # map(itemgetter) is about seven times faster than zip(*rows) on 250,000 rows.
    return [list(map(itemgetter(column), rows)) for column in range(width)]


@dataclass(frozen=True)
class VoteTable:
    """Comparison votes as arrays: `pair[i]` numbers the unordered pair of vote i and
    `first_won[i]` says whether the pair's first-seen item won."""

    workers: list[Any]
    worker: np.ndarray
    pair: np.ndarray
    first_won: np.ndarray
    pair_count: int

    def subset(self, mask: np.ndarray) -> VoteTable:
        return VoteTable(self.workers, self.worker[mask], self.pair[mask], self.first_won[mask], self.pair_count)


def vote_table(votes: Iterable[tuple[Hashable, Hashable, Hashable, Hashable]]) -> VoteTable:
    """Factorize `(worker, item_a, item_b, winner)` votes; the winner must be a or b."""
    rows = list(votes)
    workers, items_a, items_b, winners = columns(rows, 4)
    worker, worker_keys = factorize(workers)
    codes, _ = factorize([*items_a, *items_b, *winners])
    a, b, winner = np.split(codes, 3)
    invalid = (a == b) | ((winner != a) & (winner != b))
    if invalid.any():
        raise ValueError(f"vote {rows[int(np.argmax(invalid))]!r}: the winner must be one of two different items")
    low, high = np.minimum(a, b), np.maximum(a, b)
    pair_keys, pair = np.unique(low * (int(codes.max(initial=0)) + 1) + high, return_inverse=True)
    return VoteTable(worker_keys, worker, pair, winner == low, len(pair_keys))


def grouped_pearson(
    group: np.ndarray, x: np.ndarray, y: np.ndarray, groups: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pearson r of x and y within each group: r = Σdx·dy / √(Σdx²·Σdy²), deviations
    from the group means (two passes, so large offsets cost no precision).

    Returns (r, n, x_constant, y_constant); r is NaN where n < 3 or a side is constant."""
    n = np.bincount(group, minlength=groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        dx = x - (np.bincount(group, x, groups) / n)[group]
        dy = y - (np.bincount(group, y, groups) / n)[group]
    sxx = np.bincount(group, dx * dx, groups)
    syy = np.bincount(group, dy * dy, groups)
    sxy = np.bincount(group, dx * dy, groups)
    x_constant = sxx <= n * (CONSTANT_TOLERANCE * _group_max_abs(group, x, groups)) ** 2
    y_constant = syy <= n * (CONSTANT_TOLERANCE * _group_max_abs(group, y, groups)) ** 2
    defined = (n >= 3) & ~x_constant & ~y_constant
    r = np.full(groups, NAN)
    r[defined] = np.clip(sxy[defined] / np.sqrt(sxx[defined] * syy[defined]), -1.0, 1.0)
    return r, n, x_constant, y_constant


def _group_max_abs(group: np.ndarray, values: np.ndarray, groups: int) -> np.ndarray:
    largest = np.zeros(groups)
    np.maximum.at(largest, group, np.abs(values))
    return largest


def pearson(x: ArrayLike, y: ArrayLike) -> float:
    """Pearson r of two equal-length sequences; NaN when n < 3 or either is constant."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return float(grouped_pearson(np.zeros(len(x), np.intp), x, y, 1)[0][0])


def average_ranks(values: ArrayLike) -> np.ndarray:
    """Ranks 1…n along the last axis, tied values sharing the mean of their places:
    rank(v) = #(values < v) + (#(values = v) + 1) / 2, as `scipy.stats.rankdata(values,
    axis=-1)` gives them. A row that holds a NaN is all NaN."""
    array = np.asarray(values, dtype=float)
    order = np.argsort(array, axis=-1, kind="stable")
    ordered = np.take_along_axis(array, order, axis=-1)
    place = np.broadcast_to(np.arange(array.shape[-1]), array.shape)
    starts = np.ones(array.shape, dtype=bool)
    starts[..., 1:] = ordered[..., 1:] != ordered[..., :-1]
    ends = np.ones(array.shape, dtype=bool)
    ends[..., :-1] = starts[..., 1:]
    # Each sorted place's run of equal values spans places first…last; its rank is their mean + 1.
    first = np.maximum.accumulate(np.where(starts, place, 0), axis=-1)
    last = np.flip(np.minimum.accumulate(np.flip(np.where(ends, place, array.shape[-1]), axis=-1), axis=-1), axis=-1)
    ranks = np.empty(array.shape)
    np.put_along_axis(ranks, order, (first + last) / 2 + 1, axis=-1)
    ranks[np.isnan(array).any(axis=-1)] = NAN
    return ranks


def spearman_rho(x: ArrayLike, y: ArrayLike) -> float:
    """Spearman's ρ of two equal-length sequences: Pearson r of their `average_ranks`
    (computed as `scipy.stats.spearmanr` does). NaN when n < 2, either side is constant or
    either holds a NaN."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 2 or np.isnan(x).any() or np.isnan(y).any() or (x == x[0]).all() or (y == y[0]).all():
        return NAN
    # Ranks as columns, as spearmanr stacks them: the same summation order, the same bits.
    return float(np.corrcoef(np.column_stack((average_ranks(x), average_ranks(y))), rowvar=False)[1, 0])


def meta_worker_agreement(labels: Iterable[tuple[Hashable, Hashable, float]], n: int = 5) -> float:
    """Likert agreement of Falke & Gurevych (2017): sort each item's labels; meta-worker j
    holds the j-th smallest; agreement = mean over j of Pearson(meta-worker j, mean of the
    other n − 1 meta-workers), over the items with exactly `n` labels (workers ignored).

    Meta-workers whose r is undefined (a constant column) are left out of the mean. NaN
    when n < 2, fewer than 3 items have exactly n labels, or no meta-worker's r is defined.
    """
    table = label_table(labels)
    counts = np.bincount(table.item)
    chosen = counts[table.item] == n
    if n < 2 or np.count_nonzero(chosen) < 3 * n:
        return NAN
    item, score = table.item[chosen], table.score[chosen]
    meta = score[np.lexsort((score, item))].reshape(-1, n)
    others = (meta.sum(axis=1, keepdims=True) - meta) / (n - 1)
    rs = [pearson(meta[:, j], others[:, j]) for j in range(n)]
    defined = [r for r in rs if not math.isnan(r)]
    return float(np.mean(defined)) if defined else NAN


def majority_agreement(votes: Iterable[tuple[Hashable, Hashable, Hashable, Hashable]]) -> float:
    """Comparison agreement of Falke & Gurevych (2017): the share of votes that agree with
    the majority winner of their unordered pair, Σ_p max(w_p, n_p − w_p) / Σ_p n_p.

    Pairs with a tied majority, and pairs with a single vote (a majority of one agrees with
    itself and says nothing), are skipped. NaN when no pair is left."""
    table = vote_table(votes)
    votes_per_pair = np.bincount(table.pair, minlength=table.pair_count)
    first_wins = np.bincount(table.pair, table.first_won, table.pair_count)
    countable = (votes_per_pair >= 2) & (2 * first_wins != votes_per_pair)
    if not countable.any():
        return NAN
    majority = np.maximum(first_wins, votes_per_pair - first_wins)
    return float(majority[countable].sum() / votes_per_pair[countable].sum())


def krippendorff_alpha(labels: Iterable[tuple[Hashable, Hashable, float]], level: str = "interval") -> float:
    """Krippendorff's α = 1 − D_o/D_e = 1 − (n−1)·Σ o_ck δ²_ck / Σ n_c·n_k δ²_ck with
    the coincidence matrix o_ck = Σ_u (c–k pairs in unit u)/(m_u − 1) (Krippendorff 2011).

    Items are units; every label is one value (workers are not needed). δ² is (c − k)² for
    "interval", [c ≠ k] for "nominal" and (Σ_{g=c..k} n_g − (n_c + n_k)/2)² for "ordinal".
    Nominal and ordinal build a matrix over the distinct values, so they suit scales with
    few values (Likert). Items with fewer than 2 labels are dropped. 1.0 for perfect
    agreement; NaN when no item has 2 labels or all pairable values are equal."""
    if level not in ("interval", "ordinal", "nominal"):
        raise ValueError(f"level must be 'interval', 'ordinal' or 'nominal', not {level!r}")
    table = label_table(labels)
    per_unit = np.bincount(table.item)
    pairable = per_unit[table.item] >= 2
    unit, value = table.item[pairable], table.score[pairable]
    if value.size == 0 or value.min() == value.max():
        return NAN
    m = per_unit[unit].astype(float)
    n = value.size
    if level == "interval":
        # Σ_{i,j in u} (x_i − x_j)² = 2·m_u·Σ_i (x_i − x̄_u)²
        unit_mean = np.bincount(unit, value, len(per_unit)) / np.maximum(per_unit, 1)
        observed = np.sum(2 * m * (value - unit_mean[unit]) ** 2 / (m - 1))
        expected = 2 * n * np.sum((value - value.mean()) ** 2)
        return float(1 - (n - 1) * observed / expected)
    distinct, code = np.unique(value, return_inverse=True)
    units, unit_code = np.unique(unit, return_inverse=True)
    counts = np.bincount(unit_code * len(distinct) + code, minlength=len(units) * len(distinct)).reshape(len(units), -1)
    weight = 1 / (counts.sum(axis=1) - 1)
    coincidence = counts.T @ (counts * weight[:, None]) - np.diag(weight @ counts)
    marginal = coincidence.sum(axis=0)
    delta2 = _ordinal_delta2(marginal) if level == "ordinal" else 1.0 - np.eye(len(distinct))
    expected = np.sum(np.outer(marginal, marginal) * delta2)
    return float(1 - (n - 1) * np.sum(coincidence * delta2) / expected)


def _ordinal_delta2(marginal: np.ndarray) -> np.ndarray:
    """δ²_ck = (Σ_{g=c..k} n_g − (n_c + n_k)/2)² over the sorted distinct values."""
    index = np.arange(len(marginal))
    low, high = np.minimum.outer(index, index), np.maximum.outer(index, index)
    cumulative = np.cumsum(marginal)
    delta2: np.ndarray = (cumulative[high] - cumulative[low] + (marginal[low] - marginal[high]) / 2) ** 2
    return delta2


class StabilityPoint(NamedTuple):
    """One point of the bootstrap stability curve: labels per item, mean and sample SD of
    Spearman's ρ over the draws, and the number of items ranked."""

    size: int
    mean: float
    sd: float
    items: int


def bootstrap_stability(
    labels: Iterable[tuple[Hashable, Hashable, float]],
    sizes: Iterable[int] | None = None,
    draws: int = 200,
    rng: np.random.Generator | random.Random | int | None = None,
) -> list[StabilityPoint]:
    """How stable a ranking by mean score is with N labels per item (van Halteren &
    Teufel 2004): per draw, sample N labels per item twice (with replacement from that
    item's labels), rank the items by mean in each sample, ρ = Spearman between the two.

    `sizes` default to 1 … the most labels any item has. Items with a single label are left
    out (its two samples are always identical), the same items at every size. `rng` is a
    NumPy Generator, a `random.Random` (seeds a Generator from 128 of its bits), an int
    seed or None (fresh entropy). mean is NaN when fewer than 3 items take part or no
    draw's ρ is defined (all means tied); sd is NaN with fewer than 2 defined draws."""
    table = label_table(labels)
    generator = _numpy_generator(rng)
    counts = np.bincount(table.item)
    eligible = counts >= 2
    starts = (np.cumsum(counts) - counts)[eligible]
    counts = counts[eligible]
    ordered = table.score[np.argsort(table.item, kind="stable")]
    if sizes is None:
        sizes = range(1, int(counts.max(initial=0)) + 1)
    points = []
    for size in sizes:
        rhos = _bootstrap_rhos(ordered, starts, counts, size, draws, generator) if len(counts) >= 3 else np.array([])
        defined = rhos[~np.isnan(rhos)]
        mean = float(defined.mean()) if defined.size else NAN
        sd = float(defined.std(ddof=1)) if defined.size >= 2 else NAN
        points.append(StabilityPoint(int(size), mean, sd, len(counts)))
    return points


def _bootstrap_rhos(
    ordered: np.ndarray, starts: np.ndarray, counts: np.ndarray, size: int, draws: int, generator: np.random.Generator
) -> np.ndarray:
    """Spearman ρ between two bootstrap samples' item means, one per draw."""
    chunk = max(1, BOOTSTRAP_CHUNK // (2 * len(counts) * size))
    low = float(ordered.min(initial=0))
    span = size * int(ordered.max(initial=0) - low) + 1
    integers = bool(np.all(ordered == np.round(ordered))) and span <= MAX_COUNTED_RANKS
    rhos = []
    for done in range(0, draws, chunk):
        shape = (min(chunk, draws - done), 2, len(counts), size)
        # ⌊u·count⌋ with u uniform in [0, 1): an index below each item's count, several times
        # faster than integers() with per-item bounds.
        offsets = (generator.random(shape) * counts[:, None]).astype(np.intp)
        sample = ordered[starts[:, None] + offsets]
        if integers:  # the labels of a scale: rank the sums by counting, the same ranks as the means'
            ranks = _counted_average_ranks((sample.sum(axis=-1) - size * low).astype(np.intp), span)
        else:
            ranks = average_ranks(sample.mean(axis=-1))
        ranks -= ranks.mean(axis=-1, keepdims=True)
        first, second = ranks[:, 0], ranks[:, 1]
        spread = np.sqrt((first**2).sum(axis=-1) * (second**2).sum(axis=-1))
        with np.errstate(invalid="ignore", divide="ignore"):
            rhos.append(np.where(spread > 0, (first * second).sum(axis=-1) / spread, NAN))
    return np.concatenate(rhos) if rhos else np.array([])


def _counted_average_ranks(values: np.ndarray, span: int) -> np.ndarray:
    """Average ranks along the last axis of integers in [0, span), as `average_ranks` gives them:
    rank(v) = #(values < v) + (#(values = v) + 1) / 2, by counting instead of sorting."""
    rows = values.reshape(-1, values.shape[-1])
    cells = rows + (np.arange(len(rows)) * span)[:, None]
    counts = np.bincount(cells.ravel(), minlength=len(rows) * span).reshape(len(rows), span)
    average = np.cumsum(counts, axis=1) - counts + (counts + 1) / 2
    ranks: np.ndarray = average.ravel()[cells].reshape(values.shape)
    return ranks


def _numpy_generator(rng: np.random.Generator | random.Random | int | None) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, random.Random):
        return np.random.default_rng(rng.getrandbits(128))
    return np.random.default_rng(rng)


@dataclass(frozen=True)
class RunReliability:
    """Agreement of two runs' estimates over their shared items; `reason` says why a
    coefficient is NaN (empty when both are defined)."""

    pearson: float
    spearman: float
    n: int
    reason: str = ""


def run_reliability(a: Mapping[K, float | None], b: Mapping[K, float | None]) -> RunReliability:
    """Pearson and Spearman between two runs' estimates of the same items (Falke &
    Gurevych 2017 repeated whole runs: r = 0.73–0.82). Items missing from either run, or
    with a None/NaN estimate in either, are left out. NaN with fewer than 3 shared items or
    when a run's estimates are all equal."""
    shared = [key for key in a if key in b and _finite(a[key]) and _finite(b[key])]
    x = np.array([a[key] for key in shared], dtype=float)
    y = np.array([b[key] for key in shared], dtype=float)
    if len(shared) < 3:
        return RunReliability(NAN, NAN, len(shared), "fewer than 3 shared items")
    r = pearson(x, y)
    if math.isnan(r):
        return RunReliability(NAN, NAN, len(shared), "a run's estimates are all equal")
    return RunReliability(r, pearson(average_ranks(x), average_ranks(y)), len(shared))


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
