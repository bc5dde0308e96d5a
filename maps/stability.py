"""Stability of the gold input: how the crowd's top 50 moves when the crowd is resampled
(seed 004's bootstrap applied to the Likert round of Falke & Gurevych 2017, §5.3).

Pure (NumPy, and Spearman's ρ from `crowd.agreement`). For each k, two independent resamples draw, per proposition, k
of its workers' scores with replacement; each resample ranks the propositions by their mean
(ties broken at random) and keeps its top `top`. Reported per k, as means over `runs` pairs:
the Jaccard index of the two top sets, Spearman's ρ between the two resamples' means, and the
share of `tracked` propositions (a final map's sources) that a resample keeps in its top.

This is the Likert stage only: the comparison rounds' TrueSkill refit is not resampled here.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from crowd.agreement import spearman_rho

__all__ = ["StabilityPoint", "bootstrap_stability"]

STABILITY_SEED = 4  # seed 004


@dataclass(frozen=True)
class StabilityPoint:
    k: int  # workers drawn per proposition
    jaccard: float  # top-`top` sets of two resamples
    spearman: float | None  # the two resamples' means (None where a resample is constant)
    tracked_share: float | None  # tracked propositions kept in a resample's top (None: nothing tracked)


def _resample_top(
    items: Sequence[Hashable], scores: Sequence[np.ndarray], k: int, top: int, rng: np.random.Generator
) -> tuple[np.ndarray, set[Hashable]]:
    means = np.array([rng.choice(s, size=k, replace=True).mean() if len(s) else 0.0 for s in scores])
    order = np.lexsort((rng.random(len(items)), -means))  # by mean, descending; ties at random
    return means, {items[i] for i in order[:top]}


def bootstrap_stability(
    scores: Mapping[Hashable, Sequence[float]],
    *,
    ks: Sequence[int],
    top: int = 50,
    runs: int = 100,
    seed: int = STABILITY_SEED,
    tracked: Collection[Hashable] = (),
) -> list[StabilityPoint]:
    """One StabilityPoint per k in `ks` (see the module docstring); `scores` maps a proposition
    to its workers' Likert scores."""
    items = list(scores)
    arrays = [np.asarray(scores[item], dtype=float) for item in items]
    rng = np.random.default_rng(seed)
    wanted = set(tracked) & set(items)
    points = []
    for k in ks:
        jaccards, rhos, shares = [], [], []
        for _ in range(runs):
            first_means, first_top = _resample_top(items, arrays, k, top, rng)
            second_means, second_top = _resample_top(items, arrays, k, top, rng)
            union = first_top | second_top
            jaccards.append(len(first_top & second_top) / len(union) if union else 1.0)
            if np.ptp(first_means) > 0 and np.ptp(second_means) > 0:
                rhos.append(spearman_rho(first_means, second_means))
            if wanted:
                shares.append(len(wanted & first_top) / len(wanted))
        points.append(
            StabilityPoint(
                k=k,
                jaccard=float(np.mean(jaccards)),
                spearman=float(np.mean(rhos)) if rhos else None,
                tracked_share=float(np.mean(shares)) if shares else None,
            )
        )
    return points
