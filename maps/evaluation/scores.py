"""Precision, recall and F1 and their macro average, as the corpus's jar computes them.

Pure (no Django). `eval.Result` in UKPLab/emnlp2017-cmapsum-corpus: P = matched system items /
system items, R = matched gold items / gold items, F1 = 2PR / (P + R), each 0 where the
division is undefined (the jar turns NaN into 0). The corpus average is a macro average with
P, R and F1 averaged separately (`eval.Evaluation.getAvgResults`), so the averaged F1 is not
the harmonic mean of the averaged P and R.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Scores", "scores_compute", "scores_macro_average"]


@dataclass(frozen=True)
class Scores:
    """P, R and F1 of one system map against one gold map (or their macro average)."""

    p: float
    r: float
    f1: float

    def as_dict(self) -> dict[str, float]:
        """`{"p", "r", "f1"}`, the shape `evaluate_maps --json` prints."""
        return {"p": self.p, "r": self.r, "f1": self.f1}


def scores_compute(system_matched: int, system_size: int, gold_matched: int, gold_size: int) -> Scores:
    """P, R and F1 from counts, 0 where undefined (`eval.Result.computePrecision` etc.)."""
    p = system_matched / system_size if system_size else 0.0
    r = gold_matched / gold_size if gold_size else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return Scores(p, r, f1)


def scores_macro_average(scores: Iterable[Scores]) -> Scores:
    """P, R and F1 averaged separately over topics (`eval.Evaluation.getAvgResults`, macro)."""
    items = list(scores)
    if not items:
        raise ValueError("no scores to average")
    n = len(items)
    return Scores(sum(s.p for s in items) / n, sum(s.r for s in items) / n, sum(s.f1 for s in items) / n)
