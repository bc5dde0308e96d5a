"""Likert aggregation and the shortlist for the comparison rounds (no Django).

Falke & Gurevych (EMNLP 2017): every proposition is rated on a 5-point scale by
five workers; the mean of the labels of non-excluded workers is its first importance
estimate, and the top 100 by that mean, plus every proposition tied with the 100th, go
on to pairwise comparisons.
"""

from collections.abc import Collection, Hashable, Iterable, Mapping
from typing import TypeVar

from ranking.stats import ranked_keys

K = TypeVar("K", bound=Hashable)


def likert_means(
    labels: Iterable[tuple[Hashable, K, float]],
    excluded_workers: Collection[Hashable] = frozenset(),
    traps: Collection[Hashable] = frozenset(),
) -> dict[K, tuple[float, int]]:
    """Per item the mean label and the label count: {item: (mean, n)}.

    labels: iterable of (worker, item, score). Labels of `excluded_workers` and labels
    on `traps` (trap propositions, which are not part of the ranking) are skipped; an
    item left with no label does not appear.
    """
    totals: dict[K, tuple[float, int]] = {}
    for worker, item, score in labels:
        if worker in excluded_workers or item in traps:
            continue
        total, count = totals.get(item, (0.0, 0))
        totals[item] = (total + score, count + 1)
    return {item: (total / count, count) for item, (total, count) in totals.items()}


def top_k_with_ties(scores: Mapping[K, float], k: int = 100) -> list[K]:
    """The k keys with the highest score, plus every key whose score equals the k-th's.

    scores: {key: mean}. A tie is exact float equality: means of integer labels tie
    whenever they are equal fractions (18/5 and 36/10 give the same float), while
    differently accumulated floats (0.1 + 0.2 and 0.3) do not. Order: score descending,
    then key ascending (by repr for unorderable key types). [] when k < 1 or no scores.
    """
    if k < 1 or not scores:
        return []
    ranked = ranked_keys(scores)
    kth_score = scores[ranked[min(k, len(ranked)) - 1]]
    cut = k
    while cut < len(ranked) and scores[ranked[cut]] == kth_score:
        cut += 1
    return ranked[:cut]
