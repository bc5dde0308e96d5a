"""Agreement between two annotators of one concept map (Falke & Gurevych, EMNLP 2017, §5.6:
selection 84 % (κ 0.66), merges over all concept pairs 95 % (κ 0.70), labels kept 85 % (κ 0.69)).

Pure (no Django); plain lists and dicts in, plain numbers out.

Decisions (`decisions_agreement`): two equally long vectors, one decision per item. Merge
decisions are mostly "no", so % agreement alone flatters and κ alone can mislead; all four are
reported: % agreement, Cohen's κ (1960), Krippendorff's α (nominal; 2004) and the F1 of the
positive class (2·both / (a + b), symmetric; Hripcsak & Rothschild 2005).

Merges as clusterings (`clustering_agreement`), the family compared by Geiss (2009, seed 002):
V_β (Rosenberg & Hirschberg 2007; Vlachos et al. 2009), with β = 1 (V1), β = |L|/|C| (Vbeta:
L the second annotator's clusters, C the first's) and β = 0.5 (V0.5); NMI (normalised by the
geometric mean of the two entropies, Strehl & Ghosh 2002; with the arithmetic mean it would
equal V1); NVI = VI / log N (Meilă 2007's variation of information, VI = H(C|L) + H(L|C),
normalised by its maximum for N items, natural logarithms; 0 is identical). An item that an
annotator left out of the map is counted either as its own singleton cluster or in one
shared "left out" bucket: both are reported, beside a random baseline (the second annotator's
cluster sizes shuffled over the items, 100 times with a fixed seed; mean scores).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal, TypeVar

import krippendorff
import numpy as np

__all__ = [
    "BASELINE_RUNS",
    "BASELINE_SEED",
    "ClusteringScores",
    "DecisionAgreement",
    "clustering_agreement",
    "clustering_scores",
    "clustering_scores_counted",
    "decisions_agreement",
    "nvi_compute",
]

BASELINE_RUNS = 100
BASELINE_SEED = 2009
LeftOut = Literal["singletons", "bucket"]
Item = TypeVar("Item", bound=Hashable)


@dataclass(frozen=True)
class DecisionAgreement:
    """Agreement on one decision set; a figure is None where it is undefined (e.g. κ when both
    annotators made one and the same decision throughout)."""

    n: int
    percent: float | None
    kappa: float | None
    alpha: float | None
    f1_positive: float | None

    def as_dict(self) -> dict[str, Any]:
        """The figures as a plain dict."""
        return asdict(self)


def decisions_agreement(
    a: Sequence[Hashable], b: Sequence[Hashable], *, positive: Hashable = True
) -> DecisionAgreement:
    """% agreement, Cohen's κ, Krippendorff's α (nominal) and positive-class F1 of two
    annotators' decisions on the same items (item i is a[i] and b[i])."""
    if len(a) != len(b):
        raise ValueError(f"decision vectors differ in length: {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return DecisionAgreement(0, None, None, None, None)
    percent = sum(x == y for x, y in zip(a, b)) / n
    values = sorted({*a, *b}, key=repr)
    kappa: float | None = None
    alpha: float | None = None
    if len(values) > 1:
        codes = {value: index for index, value in enumerate(values)}
        coded_a = [codes[x] for x in a]
        coded_b = [codes[y] for y in b]
        from sklearn.metrics import cohen_kappa_score  # see _mutual_information

        kappa_value = float(cohen_kappa_score(coded_a, coded_b))
        kappa = None if math.isnan(kappa_value) else kappa_value
        alpha = float(
            krippendorff.alpha(
                reliability_data=np.array([coded_a, coded_b], dtype=float), level_of_measurement="nominal"
            )
        )
    positives_a = sum(x == positive for x in a)
    positives_b = sum(y == positive for y in b)
    both = sum(x == positive and y == positive for x, y in zip(a, b))
    f1 = 2 * both / (positives_a + positives_b) if positives_a + positives_b else None
    return DecisionAgreement(n, percent, kappa, alpha, f1)


@dataclass(frozen=True)
class ClusteringScores:
    """The Geiss (2009) family for one pair of clusterings of the same N items."""

    n: int
    v1: float
    vbeta: float
    beta: float
    v05: float
    nmi: float | None
    nvi: float | None

    def as_dict(self) -> dict[str, Any]:
        """The figures as a plain dict."""
        return asdict(self)


def _entropy(labels: Sequence[Hashable]) -> float:
    n = len(labels)
    return -sum((count / n) * math.log(count / n) for count in Counter(labels).values())


def _mutual_information(first: Sequence[Hashable], second: Sequence[Hashable]) -> float:
    # scikit-learn is imported where it is called: with the SciPy it loads it costs every Django
    # process (gunicorn, manage.py, Celery) about a second of CPU at start-up, and config.urls
    # reaches this module through the maps pages.
    from sklearn.metrics import mutual_info_score

    return float(mutual_info_score(first, second))


def nvi_compute(first: Sequence[Hashable], second: Sequence[Hashable]) -> float | None:
    """NVI = VI / log N with VI = H(C) + H(L) − 2 I(C; L) (Meilă 2007), natural logarithms;
    None for fewer than two items."""
    n = len(first)
    if n < 2:
        return None
    information = _mutual_information(first, second)
    vi = _entropy(first) + _entropy(second) - 2 * information
    return max(vi, 0.0) / math.log(n)


def _v_beta(h: float, c: float, beta: float) -> float:
    return (1 + beta) * h * c / (beta * h + c) if beta * h + c else 0.0


def _scores_from(
    first: Sequence[Hashable], second: Sequence[Hashable], h: float, c: float, information: float
) -> ClusteringScores:
    beta = len(set(second)) / len(set(first))
    h_first, h_second = _entropy(first), _entropy(second)
    if h_first == 0 and h_second == 0:
        nmi: float | None = 1.0
    elif h_first == 0 or h_second == 0:
        nmi = None
    else:
        nmi = information / math.sqrt(h_first * h_second)
    nvi = max(h_first + h_second - 2 * information, 0.0) / math.log(len(first)) if len(first) > 1 else None
    return ClusteringScores(len(first), _v_beta(h, c, 1.0), _v_beta(h, c, beta), beta, _v_beta(h, c, 0.5), nmi, nvi)


def clustering_scores(first: Sequence[Hashable], second: Sequence[Hashable]) -> ClusteringScores:
    """V1, Vbeta (β = |L|/|C|), V0.5, NMI (geometric) and NVI of two label vectors over the
    same items: `first` the classes C, `second` the clusters L. Homogeneity h, completeness c
    and the mutual information come from scikit-learn; V_β = (1 + β)·h·c / (β·h + c)."""
    if len(first) != len(second):
        raise ValueError(f"clusterings differ in length: {len(first)} and {len(second)}")
    if not first:
        raise ValueError("no items to compare")
    from sklearn.metrics import homogeneity_completeness_v_measure  # see _mutual_information

    h, c, _ = homogeneity_completeness_v_measure(first, second)
    return _scores_from(first, second, float(h), float(c), _mutual_information(first, second))


def clustering_scores_counted(first: Sequence[Hashable], second: Sequence[Hashable]) -> ClusteringScores:
    """The same figures from counts alone (no scikit-learn call), for the random baseline's
    hundreds of comparisons; tests hold it equal to `clustering_scores`. h = I / H(C) and
    c = I / H(L) (1 where the entropy is 0, as scikit-learn has it)."""
    n = len(first)
    joint = Counter(zip(first, second))
    count_first, count_second = Counter(first), Counter(second)
    information = sum((k / n) * math.log(k * n / (count_first[a] * count_second[b])) for (a, b), k in joint.items())
    h_first, h_second = _entropy(first), _entropy(second)
    h = information / h_first if h_first else 1.0
    c = information / h_second if h_second else 1.0
    return _scores_from(first, second, h, c, information)


def _labels(assignment: Mapping[Item, Hashable], items: Sequence[Item], left_out: LeftOut) -> list[str]:
    labels = []
    for item in items:
        if item in assignment:
            labels.append(f"c:{assignment[item]!r}")
        elif left_out == "bucket":
            labels.append("left-out")
        else:
            labels.append(f"s:{item!r}")
    return labels


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def clustering_agreement(
    a: Mapping[Item, Hashable],
    b: Mapping[Item, Hashable],
    *,
    items: Sequence[Item] | None = None,
    runs: int = BASELINE_RUNS,
    seed: int = BASELINE_SEED,
) -> dict[str, dict[str, Any]]:
    """Two annotators' merges as clusterings: `a` and `b` map an item (a concept label) to its
    cluster (the concept it was merged into); `items` is every item either could have used
    (default: the union of both). Per treatment of left-out items ("singletons", "bucket"):
    the scores and `baseline`, their means over `runs` random clusterings with b's cluster
    sizes (random.Random(seed): the same figures on every run)."""
    universe = list(items) if items is not None else sorted({*a, *b}, key=repr)
    result: dict[str, dict[str, Any]] = {}
    for left_out in ("singletons", "bucket"):
        first = _labels(a, universe, left_out)
        second = _labels(b, universe, left_out)
        scores = clustering_scores(first, second)
        rng = random.Random(seed)
        baseline_runs = []
        for _ in range(runs):
            shuffled = list(second)
            rng.shuffle(shuffled)
            baseline_runs.append(clustering_scores_counted(first, shuffled))
        baseline = {
            key: _mean([getattr(run, key) for run in baseline_runs]) for key in ("v1", "vbeta", "v05", "nmi", "nvi")
        }
        result[left_out] = {**scores.as_dict(), "baseline": baseline}
    return result
