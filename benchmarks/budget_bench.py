"""How many comparisons per item the comparison rounds need to beat the plain Likert mean.

The pipeline ranks a topic's compared propositions by TrueSkill μ; with a small pair budget
that order can be worse than the Likert means it started from (issue 25: 60-proposition topics
at the 10 % budget lost to the Likert order in 3 of 6 runs). This measures where the crossover
lies, with the simulated crowd of `simulate_crowd` (crowd/simulation/hits.py: `Judge`,
`crowd_make` — each worker rates round(3 + u + N(0, noise²)) on the 1–5 scale and orders a
group by u + N(0, noise²), noise ~ U(0.3, 0.9) per worker, latent u ~ N(0, 1)), worked as the
pipeline works it (ranking/pipeline.py):

- every item rated by `ASSIGNMENTS` distinct workers (the Likert round); Likert order = mean;
- comparison batches of up to `BATCH_PAIRS` pairs chosen by `ranking.selection.next_batch`
  from the latest refit (the first from flat ratings, as the pipeline does), each group of five
  ordered by `ASSIGNMENTS` distinct workers, TrueSkill refit (`ranking.rating.fit`, crowd env)
  after every batch, until the pair budget (a share of C(n, 2), each group charged its 10
  pairs) is spent;
- score: Spearman of each order with the latent truth, over the compared items.

Spammers are left out (quality control excludes them before both orders are made). Votes per
item = 2 × pairs asked × ASSIGNMENTS / n: each pair an assignment orders is one vote for two items.

    .venv/bin/python benchmarks/budget_bench.py [--quick] [--seeds N]

The last line is JSON: the threshold (votes per item) above which the final order beat the
Likert order on average and in most runs at every size tried; ranking/stopping.py
quotes it (VOTES_PER_ITEM_NEEDED).
"""

import argparse
import json
import math
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crowd.simulation.hits import Judge, crowd_make
from ranking.rating import fit
from ranking.selection import crowd_env, next_batch
from ranking.stats import spearman

ASSIGNMENTS = 5
GROUP_SIZE = 5
PAIRS_PER_GROUP = math.comb(GROUP_SIZE, 2)
BATCH_PAIRS = 100
WORKERS = 30
SIZES = (30, 60, 112)
FRACTIONS = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.40, 0.50)


def run(n_items: int, fraction: float, seed: int) -> tuple[float, float, float]:
    """(votes per item, Spearman of the Likert order, Spearman of the final order) for one run."""
    judge = Judge(seed=seed)
    workers = crowd_make(workers=WORKERS, spammers=0.0, trap_blind=0.0, seed=seed)
    rng = random.Random(f"budget:{seed}:{n_items}:{fraction}")
    items = list(range(n_items))
    truth = {item: judge.latent_of(item) for item in items}
    likert = {}
    for item in items:
        scores = [judge.likert(worker, [item], rng)[item] for worker in rng.sample(workers, ASSIGNMENTS)]
        likert[item] = statistics.fmean(scores)
    budget = math.ceil(fraction * n_items * (n_items - 1) / 2)
    env = crowd_env()
    votes: list[tuple[int, int]] = []
    counts: dict[frozenset, int] = {}
    ratings = fit([], items=items, env=env)
    asked, number = 0, 0
    while asked < budget:
        number += 1
        n_pairs = max(1, min(BATCH_PAIRS, budget - asked))
        groups = next_batch(
            ratings, counts, n_pairs=n_pairs, group_size=GROUP_SIZE, rng=random.Random(f"{seed}:{number}")
        )
        for group in groups:
            asked += PAIRS_PER_GROUP
            for worker in rng.sample(workers, ASSIGNMENTS):
                order = judge.ordering(worker, list(group), rng)
                for i, winner in enumerate(order):
                    for loser in order[i + 1 :]:
                        votes.append((winner, loser))
                        pair = frozenset((winner, loser))
                        counts[pair] = counts.get(pair, 0) + 1
        ratings = fit(votes, items=items, env=env)
    final = {item: ratings[item].mu for item in items}
    return 2 * len(votes) / n_items, spearman(likert, truth), spearman(final, truth)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 seeds, two sizes.")
    parser.add_argument("--seeds", type=int, default=8)
    args = parser.parse_args()
    seeds = range(3 if args.quick else args.seeds)
    sizes = SIZES[:2] if args.quick else SIZES
    print(f"{'items':>5} {'budget':>6} {'votes/item':>10} {'ρ Likert':>9} {'ρ final':>8} {'final wins':>10}")
    rows = []
    for n_items in sizes:
        for fraction in FRACTIONS:
            results = [run(n_items, fraction, seed) for seed in seeds]
            per_item = statistics.fmean(r[0] for r in results)
            rho_likert = statistics.fmean(r[1] for r in results)
            rho_final = statistics.fmean(r[2] for r in results)
            wins = sum(r[2] > r[1] for r in results)
            rows.append((n_items, fraction, per_item, rho_likert, rho_final, wins, len(results)))
            print(
                f"{n_items:>5} {fraction:>6.0%} {per_item:>10.1f} {rho_likert:>9.3f} {rho_final:>8.3f} "
                f"{wins:>5} of {len(results)}",
                flush=True,
            )
    # The threshold: the fewest votes per item from which on, at every size, the final order
    # beat the Likert order on average and in most runs.
    losing = [row[2] for row in rows if not (row[4] > row[3] and row[5] * 2 > row[6])]
    winning = [row[2] for row in rows if row[2] > max(losing, default=0)]
    threshold = math.ceil(max(losing, default=0)) if winning else None
    print(
        json.dumps(
            {
                "benchmark": "budget",
                "seeds": len(seeds),
                "sizes": list(sizes),
                "votes_per_item_threshold": threshold,
                "rows": [
                    {
                        "items": r[0],
                        "fraction": r[1],
                        "votes_per_item": round(r[2], 1),
                        "rho_likert": round(r[3], 3),
                        "rho_final": round(r[4], 3),
                        "final_wins": r[5],
                        "runs": r[6],
                    }
                    for r in rows
                ],
            }
        )
    )


if __name__ == "__main__":
    main()
