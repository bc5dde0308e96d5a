"""The verification queue and the running estimate of precision on negatives (pure).

Queue: the predicted negatives, least certain first (smallest |margin|); a person confirms
(unsuitable) or corrects (suitable) each. Budget: ⌈share × predicted negatives⌉ items.

Estimator of precision on negatives after verification. The propositions the filter removes
are the confirmed ones (C, all truly unsuitable by a person's word) and the predicted
negatives nobody verified yet (U). Verification goes least certain first, so the unverified
ones are those with |margin| ≥ m, m the largest |margin| verified so far; their precision
p_U is estimated on the classifier's held-out split, from the held-out predicted negatives
with |margin| ≥ m, as the posterior mean under a uniform prior, (tn + 1) / (n + 2)
(all held-out negatives when fewer than `min_held_out` lie beyond m). Then

    precision ≈ (C + p_U × U) / (C + U).

With nothing verified it is the held-out precision (smoothed); with every negative verified
it is 1.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass


def budget(*, negatives: int, share: float) -> int:
    return math.ceil(max(0.0, min(1.0, share)) * negatives)


def queue_order(margins: dict[int, float]) -> list[int]:
    """Keys of the predicted negatives, least certain first (ties by key)."""
    return sorted(margins, key=lambda key: (abs(margins[key]), key))


@dataclass(frozen=True)
class Estimate:
    precision: float | None
    confirmed: int
    corrected: int
    unverified: int
    unverified_precision: float | None
    threshold: float  # |margin| of the least certain negative not yet verified is at least this


def precision_estimate(
    *,
    confirmed: int,
    corrected: int,
    unverified: int,
    verified_margins: Sequence[float],
    held_out: Sequence[tuple[float, int]],
    min_held_out: int = 5,
) -> Estimate:
    """`held_out`: (margin, true label) of the held-out rows; see the module docstring."""
    threshold = max((abs(m) for m in verified_margins), default=0.0)
    negatives = [(abs(m), label) for m, label in held_out if m < 0]
    beyond = [label for m, label in negatives if m >= threshold]
    pool = beyond if len(beyond) >= min_held_out else [label for _, label in negatives]
    p_u = (sum(1 for label in pool if label == 0) + 1) / (len(pool) + 2)
    removed = confirmed + unverified
    precision = (confirmed + p_u * unverified) / removed if removed else None
    return Estimate(
        precision=precision,
        confirmed=confirmed,
        corrected=corrected,
        unverified=unverified,
        unverified_precision=p_u if unverified else None,
        threshold=threshold,
    )
