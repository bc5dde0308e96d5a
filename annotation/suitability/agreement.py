"""Agreement among the experts of a labelling study (pure: NumPy and `krippendorff`).

Input: long-format labels (item, rater, category). Items with one label count towards no
agreement figure.

- % agreement: the mean over items of the share of agreeing rater pairs.
- Fleiss' κ (Fleiss 1971), with raters per item n_i allowed to vary: P_i = (Σ_j n_ij² − n_i) /
  (n_i (n_i − 1)), P̄ the mean of P_i, p_j the share of all labels in category j,
  P_e = Σ_j p_j², κ = (P̄ − P_e) / (1 − P_e).
- Krippendorff's α, nominal, from the `krippendorff` package.
- Majority label per item: the most frequent category; None on a tie.
"""

from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable

import krippendorff
import numpy as np


def _by_item(labels: Iterable[tuple[Hashable, Hashable, Hashable]]) -> dict[Hashable, dict[Hashable, Hashable]]:
    items: dict[Hashable, dict[Hashable, Hashable]] = defaultdict(dict)
    for item, rater, category in labels:
        items[item][rater] = category
    return items


def percent_agreement(labels: Iterable[tuple[Hashable, Hashable, Hashable]]) -> float | None:
    shares = []
    for ratings in _by_item(labels).values():
        values = list(ratings.values())
        n = len(values)
        if n < 2:
            continue
        agreeing = sum(c * (c - 1) for c in Counter(values).values())
        shares.append(agreeing / (n * (n - 1)))
    return float(np.mean(shares)) if shares else None


def fleiss_kappa_counts(counts: np.ndarray) -> float | None:
    """κ from an items × categories matrix of label counts (rows with n_i < 2 dropped)."""
    table = np.asarray(counts, dtype=float)
    n_i = table.sum(axis=1)
    table, n_i = table[n_i >= 2], n_i[n_i >= 2]
    if len(table) == 0:
        return None
    p_i = ((table**2).sum(axis=1) - n_i) / (n_i * (n_i - 1))
    p_bar = p_i.mean()
    p_j = table.sum(axis=0) / table.sum()
    p_e = float((p_j**2).sum())
    if p_e == 1.0:
        return None
    return float((p_bar - p_e) / (1 - p_e))


def fleiss_kappa(labels: Iterable[tuple[Hashable, Hashable, Hashable]]) -> float | None:
    items = _by_item(labels)
    categories = sorted({c for ratings in items.values() for c in ratings.values()}, key=str)
    column = {c: j for j, c in enumerate(categories)}
    counts = np.zeros((len(items), len(categories)))
    for i, ratings in enumerate(items.values()):
        for category in ratings.values():
            counts[i, column[category]] += 1
    return fleiss_kappa_counts(counts)


def krippendorff_alpha(labels: Iterable[tuple[Hashable, Hashable, Hashable]]) -> float | None:
    items = _by_item(labels)
    raters = sorted({r for ratings in items.values() for r in ratings}, key=str)
    categories = sorted({c for ratings in items.values() for c in ratings.values()}, key=str)
    paired = [ratings for ratings in items.values() if len(ratings) >= 2]
    if not paired or len(categories) < 2:
        return None
    code = {c: j for j, c in enumerate(categories)}
    data = np.full((len(raters), len(paired)), np.nan)
    for k, ratings in enumerate(paired):
        for r, rater in enumerate(raters):
            if rater in ratings:
                data[r, k] = code[ratings[rater]]
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


def majority(labels: Iterable[tuple[Hashable, Hashable, Hashable]]) -> dict[Hashable, Hashable | None]:
    result: dict[Hashable, Hashable | None] = {}
    for item, ratings in _by_item(labels).items():
        ranked = Counter(ratings.values()).most_common()
        result[item] = None if len(ranked) > 1 and ranked[0][1] == ranked[1][1] else ranked[0][0]
    return result
