"""The suitability classifier: a linear SVM over `features`, weighted against false negatives
(pure: NumPy and scikit-learn, no Django).

Labels: 1 = suitable (keep), 0 = unsuitable (remove). A *negative* is a proposition predicted
unsuitable, i.e. one the filter would remove; a *false negative* is a suitable proposition
removed — content the crowd never sees. Falke & Gurevych 2017 (§5.3) tuned the class weights
against false negatives and report precision on negatives (the share of removed
propositions that really are unsuitable).

How the weight is chosen (`weight_choose`): the suitable class gets weight w from
`WEIGHT_GRID` (the unsuitable class 1); for each w, stratified k-fold cross-validation on the
*training* split alone gives precision and recall on negatives; the chosen w is the smallest
one whose cross-validated precision on negatives reaches `target_precision` (a larger w makes
removing costlier, so fewer and surer removals); when none does, the w with the highest
precision on negatives. The held-out split is never seen while choosing.

Margin: the signed distance from the separating hyperplane, `decision_function` divided by
‖coef‖; negative margin → predicted unsuitable; |margin| small → uncertain.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

WEIGHT_GRID: tuple[float, ...] = (1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
DEFAULT_TARGET_PRECISION = 0.9


@dataclass(frozen=True)
class NegativeMetrics:
    """Precision and recall of the unsuitable class (0), with the counts behind them."""

    precision: float | None  # removed and unsuitable / removed; None when nothing is removed
    recall: float | None  # removed and unsuitable / unsuitable; None when nothing is unsuitable
    true_negatives: int
    false_negatives: int  # suitable but removed
    unsuitable: int
    n: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "precision": self.precision,
            "recall": self.recall,
            "true_negatives": self.true_negatives,
            "false_negatives": self.false_negatives,
            "unsuitable": self.unsuitable,
            "n": self.n,
        }


def negative_metrics(truth: Sequence[int] | np.ndarray, predicted: Sequence[int] | np.ndarray) -> NegativeMetrics:
    t = np.asarray(truth, dtype=int)
    p = np.asarray(predicted, dtype=int)
    true_neg = int(np.sum((p == 0) & (t == 0)))
    false_neg = int(np.sum((p == 0) & (t == 1)))
    unsuitable = int(np.sum(t == 0))
    return NegativeMetrics(
        precision=true_neg / (true_neg + false_neg) if true_neg + false_neg else None,
        recall=true_neg / unsuitable if unsuitable else None,
        true_negatives=true_neg,
        false_negatives=false_neg,
        unsuitable=unsuitable,
        n=len(t),
    )


@dataclass
class Model:
    """A fitted scaler and linear SVM; `margins` of new rows, plain numbers to store."""

    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    suitable_weight: float

    def margins(self, rows: Sequence[Sequence[float]]) -> np.ndarray:
        x = (np.asarray(rows, dtype=float) - np.asarray(self.mean)) / np.asarray(self.scale)
        coef = np.asarray(self.coef)
        norm = float(np.linalg.norm(coef)) or 1.0
        result: np.ndarray = (x @ coef + self.intercept) / norm
        return result

    def as_dict(self) -> dict[str, Any]:
        return {
            "mean": self.mean,
            "scale": self.scale,
            "coef": self.coef,
            "intercept": self.intercept,
            "suitable_weight": self.suitable_weight,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Model":
        return cls(**{name: data[name] for name in ("mean", "scale", "coef", "intercept", "suitable_weight")})


def fit(rows: Sequence[Sequence[float]], labels: Sequence[int], *, suitable_weight: float, c: float = 1.0) -> Model:
    x = np.asarray(rows, dtype=float)
    scaler = StandardScaler().fit(x)
    scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    svm = LinearSVC(C=c, class_weight={0: 1.0, 1: suitable_weight}, max_iter=20000, dual="auto")
    svm.fit((x - scaler.mean_) / scale, np.asarray(labels, dtype=int))
    return Model(
        mean=[float(v) for v in scaler.mean_],
        scale=[float(v) for v in scale],
        coef=[float(v) for v in svm.coef_[0]],
        intercept=float(svm.intercept_[0]),
        suitable_weight=suitable_weight,
    )


def weight_choose(
    rows: Sequence[Sequence[float]],
    labels: Sequence[int],
    *,
    seed: int,
    target_precision: float = DEFAULT_TARGET_PRECISION,
    folds: int = 5,
) -> tuple[float, list[dict[str, Any]]]:
    """The weight of the suitable class (see the module docstring) and each candidate's
    cross-validated figures."""
    x = np.asarray(rows, dtype=float)
    y = np.asarray(labels, dtype=int)
    folds = max(2, min(folds, int(np.bincount(y, minlength=2).min())))
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    tried = []
    for weight in WEIGHT_GRID:
        predicted = np.empty_like(y)
        for train, test in splitter.split(x, y):
            model = fit(x[train], y[train], suitable_weight=weight)
            predicted[test] = (model.margins(x[test]) >= 0).astype(int)
        metrics = negative_metrics(y, predicted)
        tried.append({"suitable_weight": weight, **metrics.as_dict()})
    reaching = [t for t in tried if t["precision"] is not None and t["precision"] >= target_precision]
    if reaching:
        return reaching[0]["suitable_weight"], tried
    best = max(tried, key=lambda t: (t["precision"] or 0.0, -t["suitable_weight"]))
    return best["suitable_weight"], tried


@dataclass
class Training:
    model: Model
    held_out: list[int]  # indices of the held-out rows
    held_out_margins: list[float]
    held_out_metrics: NegativeMetrics
    tried: list[dict[str, Any]] = field(default_factory=list)


def train(
    rows: Sequence[Sequence[float]],
    labels: Sequence[int],
    *,
    seed: int,
    test_share: float = 0.3,
    target_precision: float = DEFAULT_TARGET_PRECISION,
) -> Training:
    """Split (stratified, `test_share` held out), choose the weight on the training part,
    fit on it, and measure precision and recall on negatives on the held-out part.
    Needs at least 2 rows of each class in each part."""
    y = np.asarray(labels, dtype=int)
    counts = np.bincount(y, minlength=2)
    if len(y) < 10 or counts.min() < 4:
        raise ValueError(
            f"Training needs at least 10 labelled propositions and 4 of each class; got {counts[1]} suitable "
            f"and {counts[0]} unsuitable."
        )
    index = np.arange(len(y))
    train_index, test_index = train_test_split(index, test_size=test_share, stratify=y, random_state=seed)
    x = np.asarray(rows, dtype=float)
    weight, tried = weight_choose(x[train_index], y[train_index], seed=seed, target_precision=target_precision)
    model = fit(x[train_index], y[train_index], suitable_weight=weight)
    margins = model.margins(x[test_index])
    metrics = negative_metrics(y[test_index], (margins >= 0).astype(int))
    return Training(
        model=model,
        held_out=[int(i) for i in test_index],
        held_out_margins=[float(m) for m in margins],
        held_out_metrics=metrics,
        tried=tried,
    )
