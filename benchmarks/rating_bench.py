"""TrueSkill refit: `ranking.rating.fit` beside trueskill's rate_1vs1 loop, same run.

20,000 comparisons over 112 items, generated deterministically (Thurstonian outcomes over
latent utilities ~ N(0, 1), unit noise). Prints both times, the speed ratio and the
largest |Δμ| and |Δσ| between the two results.

    .venv/bin/python benchmarks/rating_bench.py [--comparisons N]
"""

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import trueskill

from ranking.rating import default_env, fit

N_ITEMS = 112
SEED = 2017


def simulated_comparisons(n, seed=SEED):
    rng = random.Random(seed)
    utility = [rng.gauss(0, 1) for _ in range(N_ITEMS)]
    comparisons = []
    for _ in range(n):
        a, b = rng.sample(range(N_ITEMS), 2)
        if utility[a] + rng.gauss(0, 1) < utility[b] + rng.gauss(0, 1):
            a, b = b, a
        comparisons.append((a, b))
    return comparisons


def rate_1vs1_loop(comparisons, env):
    """What env.rate_1vs1 (a deprecated alias of this call) gives, one factor graph each."""
    ratings = {}
    for winner, loser in comparisons:
        ratings[winner], ratings[loser] = trueskill.rate_1vs1(
            ratings.get(winner, env.create_rating()), ratings.get(loser, env.create_rating()), env=env
        )
    return ratings


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comparisons", type=int, default=20_000)
    args = parser.parse_args()
    env = default_env()
    comparisons = simulated_comparisons(args.comparisons)

    fit_times = []
    for _ in range(5):
        started = time.perf_counter()
        ours = fit(comparisons, env=env)
        fit_times.append(time.perf_counter() - started)
    started = time.perf_counter()
    reference = rate_1vs1_loop(comparisons, env)
    loop_time = time.perf_counter() - started
    fit_time = statistics.median(fit_times)

    max_mu = max(abs(ours[key].mu - reference[key].mu) for key in reference)
    max_sigma = max(abs(ours[key].sigma - reference[key].sigma) for key in reference)
    print(f"TrueSkill refit, {len(comparisons):,} comparisons over {N_ITEMS} items, {env}")
    print(f"  rate_1vs1 loop:  {loop_time:8.3f} s  (one run)")
    print(f"  fit:             {fit_time:8.3f} s  (median of 5 runs)")
    print(f"  speed ratio:     {loop_time / fit_time:8.1f} x   (contract: >= 30 x)")
    print(f"  max |Δμ| = {max_mu:.2e}, max |Δσ| = {max_sigma:.2e}   (contract: <= 1e-6)")
    same = ours.keys() == reference.keys() and max(max_mu, max_sigma) <= 1e-6
    return 0 if same and loop_time / fit_time >= 30 else 1


if __name__ == "__main__":
    sys.exit(main())
