"""Verifying the least-certain 20 % of predicted negatives beside verifying a random 20 %.

Data: the shipped labelled OpenIE-5 extractions on CaRB test sentences
(tests/data/suitability/carb_openie5_labelled.tsv, 320 tuples, see tests/data/README.md).
Per seed: 5-fold cross-fitting (stratified, shuffled by the seed) gives every tuple an
out-of-fold margin from `annotation.suitability.classifier` — on each fold's training part
the suitable-class weight is chosen by inner cross-validation, as the app does. The predicted
negatives are the filter's removals; a budget of ⌈20 % × negatives⌉ is verified against the
gold label, either least certain first (smallest |margin|, `verification.queue_order`) or
uniformly at random (`random.Random(seed)`). A verified suitable one is kept (corrected), a
verified unsuitable one stays removed. Precision on negatives = removed and unsuitable /
removed, before and after each way of verifying. Mean ± sd over the seeds; the paired
difference is what the claim rests on.

    .venv/bin/python benchmarks/suitability_bench.py [--seeds N] [--share 0.2]
"""

import argparse
import csv
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from sklearn.model_selection import StratifiedKFold  # noqa: E402

from annotation.suitability import classifier, verification  # noqa: E402
from annotation.suitability.features import features  # noqa: E402

DATA = ROOT / "tests" / "data" / "suitability" / "carb_openie5_labelled.tsv"


def load() -> tuple[np.ndarray, np.ndarray]:
    with DATA.open(newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    x = [
        features(subject=r["subject"], relation=r["relation"], object=r["object"], confidence=float(r["confidence"]))
        for r in rows
    ]
    return np.asarray(x), np.asarray([int(r["suitable"]) for r in rows])


def out_of_fold_margins(x: np.ndarray, y: np.ndarray, seed: int) -> np.ndarray:
    margins = np.empty(len(y))
    for train, test in StratifiedKFold(n_splits=5, shuffle=True, random_state=seed).split(x, y):
        weight, _ = classifier.weight_choose(x[train], y[train], seed=seed)
        margins[test] = classifier.fit(x[train], y[train], suitable_weight=weight).margins(x[test])
    return margins


def precision_after(negatives: list[int], verified: set[int], y: np.ndarray) -> float:
    removed = [i for i in negatives if i not in verified or y[i] == 0]
    return sum(1 for i in removed if y[i] == 0) / len(removed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--share", type=float, default=0.2)
    args = parser.parse_args()
    started = time.perf_counter()
    x, y = load()
    before, uncertain, randomly, removed_share = [], [], [], []
    for seed in range(args.seeds):
        margins = out_of_fold_margins(x, y, seed)
        negatives = [i for i in range(len(y)) if margins[i] < 0]
        budget = verification.budget(negatives=len(negatives), share=args.share)
        least_certain = set(verification.queue_order({i: float(margins[i]) for i in negatives})[:budget])
        at_random = set(random.Random(seed).sample(negatives, budget))
        before.append(precision_after(negatives, set(), y))
        uncertain.append(precision_after(negatives, least_certain, y))
        randomly.append(precision_after(negatives, at_random, y))
        removed_share.append(len(negatives) / len(y))
    gains = [u - r for u, r in zip(uncertain, randomly, strict=True)]

    def line(name: str, values: list[float]) -> str:
        return f"{name:<34} {statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"

    print(
        f"{len(y)} labelled tuples ({int((y == 0).sum())} unsuitable), {args.seeds} seeds, budget {args.share:.0%} of predicted negatives"
    )
    print(f"predicted negatives: {statistics.mean(removed_share):.1%} of the tuples")
    print("precision on negatives:")
    print(line("  no verification", before))
    print(line("  least-certain 20 % verified", uncertain))
    print(line("  random 20 % verified", randomly))
    print(
        f"least-certain minus random: {statistics.mean(gains):+.3f} (paired sd {statistics.stdev(gains):.3f}; "
        f"ahead in {sum(g > 0 for g in gains)} of {len(gains)} seeds, behind in {sum(g < 0 for g in gains)}): "
        f"{'MET' if statistics.mean(gains) > 0 else 'NOT met'}"
    )
    print(f"total {time.perf_counter() - started:.1f} s")
    print(
        json.dumps(
            {
                "benchmark": "suitability",
                "seeds": args.seeds,
                "share": args.share,
                "tuples": len(y),
                "precision_before": round(statistics.mean(before), 4),
                "precision_least_certain": round(statistics.mean(uncertain), 4),
                "precision_random": round(statistics.mean(randomly), 4),
                "gain_mean": round(statistics.mean(gains), 4),
                "gain_sd": round(statistics.stdev(gains), 4),
                "predicted_negative_share": round(statistics.mean(removed_share), 4),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
