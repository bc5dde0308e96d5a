"""Agreement between two rankings: Spearman's ρ and top-k overlap (no Django; ρ comes from
`crowd.agreement.spearman_rho`).

Used by the benchmarks to score a ranking against a simulated truth, and usable for the
refit snapshots (Spearman with the previous snapshot, entries into the top 50).
"""

import math
from collections.abc import Hashable, Mapping
from typing import TypeVar

from crowd.agreement import spearman_rho

K = TypeVar("K", bound=Hashable)


def ranked_keys(scores: Mapping[K, float]) -> list[K]:
    """Keys by score descending, then key ascending (by repr for unorderable key types)."""
    try:
        return sorted(scores, key=lambda key: (-scores[key], key))
    except TypeError:
        return sorted(scores, key=lambda key: (-scores[key], repr(key)))


def spearman(scores_a: Mapping[K, float], scores_b: Mapping[K, float]) -> float | None:
    """Spearman's ρ (ties get average ranks) over the keys both dicts share.

    Returns None with fewer than two shared keys or when either side is constant.
    """
    shared = [key for key in scores_a if key in scores_b]
    a = [scores_a[key] for key in shared]
    b = [scores_b[key] for key in shared]
    if len(shared) < 2 or len(set(a)) < 2 or len(set(b)) < 2:
        return None
    rho = spearman_rho(a, b)
    return None if math.isnan(rho) else rho


def top_k_overlap(scores_a: Mapping[K, float], scores_b: Mapping[K, float], k: int = 50) -> float:
    """|top k of a ∩ top k of b| / k, each top k taken in `ranked_keys` order (exactly k)."""
    if k < 1:
        return 0.0
    top_a = set(ranked_keys(scores_a)[:k])
    top_b = set(ranked_keys(scores_b)[:k])
    return len(top_a & top_b) / k
