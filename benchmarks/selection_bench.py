"""Choosing comparison batches: `ranking.selection.next_batch` beside random 5-item groups.

Simulation (Falke & Gurevych, EMNLP 2017, comparison rounds): 112 items with latent
utilities ~ N(0, 1). A Thurstonian worker orders a group of five by utility + N(0, noise²),
independently per worker and item; each group (one HIT) is answered by 5 workers, so it
yields 10 pairs × 5 = 50 comparisons. After every batch TrueSkill is refit from scratch
(`ranking.rating.fit`) over all comparisons, as the pipeline does.

Two TrueSkill environments, each a separate table in which both methods are fit with the
same env: `default` (`ranking.rating.default_env`, β = σ/2) and `crowd`
(`ranking.selection.crowd_env`, β = 1.5σ). The crowd β was chosen with `--tune` on
seeds TUNING_SEEDS, disjoint from the reported seeds 0..N-1.

Budget accounting: the budget is a fraction of all C(112, 2) = 6216 pairs; every group
is charged its C(5, 2) = 10 pairs, also when a pair was asked before (HITs are paid
per group), so 10 % = 622 pairs = 62 groups for both methods. Batches hold 100 pairs
(10 groups); a batch is cut short where a reported budget ends, for both methods, and
one run per seed is scored at each budget on the way to 20 %. The distinct pairs each
method covered are printed too.

Noise: fixed at NOISE_SD, calibrated so that two independent full runs of the paper's
system (default env) at the 10 % budget correlate ~0.75 (Spearman of μ), the middle of
the paper's run-to-run 0.73-0.82; the run-to-run correlation of every method and env is
printed, and `--calibrate` prints it over a range of noise levels. The same seeds,
truths and worker noise streams serve both methods and both envs. An ablation line
shows how much of the effect is coverage alone (random groups over the least-asked keys).

    .venv/bin/python benchmarks/selection_bench.py [--quick] [--seeds N] [--noise SD] [--calibrate] [--tune]
"""

import argparse
import math
import random
import statistics
import sys
import time
from itertools import combinations
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import trueskill

from ranking.rating import DEFAULT_MU, DEFAULT_SIGMA, DEFAULT_TAU, default_env, fit
from ranking.selection import crowd_env, next_batch
from ranking.stats import spearman, top_k_overlap

N_ITEMS = 112
ALL_PAIRS = math.comb(N_ITEMS, 2)
GROUP_SIZE = 5
PAIRS_PER_GROUP = math.comb(GROUP_SIZE, 2)
ASSIGNMENTS = 5
BATCH_PAIRS = 100
BUDGETS = (0.02, 0.05, 0.10, 0.15, 0.20)
CALIBRATION_BUDGET = 0.10
NOISE_SD = 1.25
SENSITIVITY_NOISE = (0.7, 1.0, 2.0)
TOP_K = 50
ENVS = {"default": default_env, "crowd": crowd_env}
TUNING_SEEDS = range(200, 260)
TUNING_BETAS = (0.5, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0)  # × σ


def random_groups(ratings, counts, n_pairs=BATCH_PAIRS, group_size=GROUP_SIZE, rng=None):
    """The baseline: uniformly random groups of distinct keys, as many as next_batch returns."""
    keys = list(ratings)
    n_groups = max(1, math.ceil(n_pairs / math.comb(group_size, 2)))
    return [tuple(rng.sample(keys, group_size)) for _ in range(n_groups)]


def least_asked_random_groups(ratings, counts, n_pairs=BATCH_PAIRS, group_size=GROUP_SIZE, rng=None):
    """Ablation, coverage only: random groups over the keys with the fewest labels so far."""
    labels = dict.fromkeys(ratings, 0)
    for pair, seen in counts.items():
        for key in pair:
            labels[key] += seen
    keys = list(ratings)
    rng.shuffle(keys)
    n_groups = max(1, math.ceil(n_pairs / math.comb(group_size, 2)))
    chosen = sorted(keys, key=labels.get)[: n_groups * group_size]
    rng.shuffle(chosen)
    return [tuple(chosen[i * group_size : (i + 1) * group_size]) for i in range(n_groups)]


def groups_for(budget):
    return round(budget * ALL_PAIRS / PAIRS_PER_GROUP)


def worker_comparisons(group, utility, noise, rng):
    order = sorted(group, key=lambda key: utility[key] + rng.gauss(0, noise), reverse=True)
    return list(combinations(order, 2))


def ask(group, utility, noise, rng, comparisons, counts):
    """Publish one group: ASSIGNMENTS workers each order it; record their comparisons."""
    for pair in combinations(group, 2):
        counts[frozenset(pair)] = counts.get(frozenset(pair), 0) + ASSIGNMENTS
    for _ in range(ASSIGNMENTS):
        comparisons.extend(worker_comparisons(group, utility, noise, rng))


def simulate(choose, utility, noise, run_seed, budgets, env):
    """One campaign fit with `env`; returns {budget: (μ by key, distinct pairs covered)}."""
    choice_rng, worker_rng = random.Random(run_seed), random.Random(run_seed + 1)
    comparisons, counts, asked, results = [], {}, 0, {}
    ratings = fit(comparisons, items=utility, env=env)
    for budget in budgets:
        while asked < groups_for(budget):
            n_groups = min(BATCH_PAIRS // PAIRS_PER_GROUP, groups_for(budget) - asked)
            for group in choose(ratings, counts, n_groups * PAIRS_PER_GROUP, GROUP_SIZE, choice_rng):
                ask(group, utility, noise, worker_rng, comparisons, counts)
            asked += n_groups
            ratings = fit(comparisons, items=utility, env=env)
        results[budget] = ({key: rating.mu for key, rating in ratings.items()}, len(counts))
    return results


def truth(seed):
    rng = random.Random(seed)
    return {key: rng.gauss(0, 1) for key in range(N_ITEMS)}


def information_bound(seeds, noise, budget):
    """Spearman with the truth of an estimate that saw, for each ordering an item was in, the
    item's noisy utility itself rather than only its place in the ordering: the posterior
    mean of u under the N(0, 1) prior from the mean of m draws of u + N(0, noise²), m the
    budget's orderings per item, spread evenly. An ordering is a function of those draws,
    so no choice of groups and no fit of the orderings knows more. (Spreading the orderings
    by the true density instead did worse, 0.926 against 0.938 at 10 %.)"""
    draws = groups_for(budget) * ASSIGNMENTS * GROUP_SIZE
    scores = []
    for seed in seeds:
        utility, rng = truth(seed), random.Random(f"bound:{seed}")
        per_item = [draws // N_ITEMS + (index < draws % N_ITEMS) for index in range(N_ITEMS)]
        rng.shuffle(per_item)
        estimate = {}
        for key, m in zip(utility, per_item, strict=True):
            observed = utility[key] + sum(rng.gauss(0, noise) for _ in range(m)) / m
            estimate[key] = observed / (1 + noise**2 / m)
        scores.append(spearman(estimate, utility))
    return scores, draws / N_ITEMS


def mean_sd(values):
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


METHODS = {"next_batch": next_batch, "random": random_groups}


def budget_curve(seeds, noise, env):
    """Per method and budget: Spearman with the truth, top-50 overlap, distinct pairs."""
    scores = {(method, budget): [] for method in METHODS for budget in BUDGETS}
    for seed in seeds:
        utility = truth(seed)
        for method, choose in METHODS.items():
            for budget, (mu, distinct) in simulate(choose, utility, noise, 1000 * seed, BUDGETS, env).items():
                scores[method, budget].append((spearman(mu, utility), top_k_overlap(mu, utility, TOP_K), distinct))
    return scores


def run_to_run(seeds, noise, env):
    """Spearman between the μ of two independent runs on the same truth, at 10 %."""
    correlations = {method: [] for method in METHODS}
    for seed in seeds:
        utility = truth(seed)
        for method, choose in METHODS.items():
            runs = [
                simulate(choose, utility, noise, 1000 * seed + offset, [CALIBRATION_BUDGET], env) for offset in (0, 500)
            ]
            correlations[method].append(spearman(runs[0][CALIBRATION_BUDGET][0], runs[1][CALIBRATION_BUDGET][0]))
    return correlations


def batch_time(repeats):
    """Median seconds for next_batch on 112 items, from the state after a 10 % run."""
    utility, rng, env = truth(0), random.Random(0), crowd_env()
    comparisons, counts = [], {}
    for _ in range(groups_for(CALIBRATION_BUDGET) // 10):
        for group in next_batch(fit(comparisons, items=utility, env=env), counts, rng=rng):
            ask(group, utility, NOISE_SD, rng, comparisons, counts)
    ratings = fit(comparisons, items=utility, env=env)
    times = []
    for repeat in range(repeats):
        started = time.perf_counter()
        next_batch(ratings, counts, n_pairs=BATCH_PAIRS, rng=random.Random(repeat))
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def score_at_10_percent(choose, seeds, noise, env):
    """Mean Spearman and top-50 overlap of one method at 10 %."""
    scored = []
    for seed in seeds:
        utility = truth(seed)
        mu = simulate(choose, utility, noise, 1000 * seed, [CALIBRATION_BUDGET], env)[CALIBRATION_BUDGET][0]
        scored.append((spearman(mu, utility), top_k_overlap(mu, utility, TOP_K)))
    return [statistics.mean(column) for column in zip(*scored)]


def noise_sensitivity(seeds, env):
    for noise in SENSITIVITY_NOISE:
        nb, rnd = (score_at_10_percent(choose, seeds, noise, env) for choose in METHODS.values())
        print(
            f"  noise {noise:.2f}: next_batch {nb[0]:.3f} / {nb[1]:.3f}, random {rnd[0]:.3f} / {rnd[1]:.3f}, "
            f"Δ {nb[0] - rnd[0]:+.3f} / {nb[1] - rnd[1]:+.3f}"
        )


def beta_tuning(noise):
    """Spearman / top-50 at 10 % on the tuning seeds for a range of β, both methods."""
    print(
        f"β for crowd votes, tuning seeds {TUNING_SEEDS.start}..{TUNING_SEEDS.stop - 1}, "
        f"{CALIBRATION_BUDGET:.0%} budget (Spearman / top-50, means; next_batch's information gain "
        f"always uses ranking.selection.CROWD_BETA)"
    )
    for ratio in TUNING_BETAS:
        env = trueskill.TrueSkill(
            mu=DEFAULT_MU, sigma=DEFAULT_SIGMA, beta=ratio * DEFAULT_SIGMA, tau=DEFAULT_TAU, draw_probability=0
        )
        nb, rnd = (score_at_10_percent(choose, TUNING_SEEDS, noise, env) for choose in METHODS.values())
        print(f"  β = {ratio:.2f}σ: next_batch {nb[0]:.3f} / {nb[1]:.3f}, random {rnd[0]:.3f} / {rnd[1]:.3f}")


def env_report(name, seeds, noise, full):
    """Run-to-run, the budget curve and (full) noise sensitivity and ablation for one env.

    Returns the paired Spearman differences, the top-50 gain and random's mean Spearman at 10 %."""
    env = ENVS[name]()
    print(f"\n== env {name}: β {env.beta:.2f}, τ {env.tau:.3f} (σ {env.sigma:.2f}); both methods fit with it ==")
    correlations = run_to_run(seeds, noise, env)
    print(
        f"run-to-run Spearman at {CALIBRATION_BUDGET:.0%} (two independent runs, same truth): "
        + ", ".join(f"{method} {mean_sd(values)}" for method, values in correlations.items())
    )

    scores = budget_curve(seeds, noise, env)
    print(
        f"{'budget':>6} {'groups':>6} | {'Spearman next_batch':>19} {'random':>13} {'Δ':>6} | "
        f"{'top-50 next_batch':>17} {'random':>13} {'Δ':>6} | distinct pairs nb / rnd"
    )
    for budget in BUDGETS:
        ours, theirs = scores["next_batch", budget], scores["random", budget]
        delta = [statistics.mean(row[i] for row in ours) - statistics.mean(row[i] for row in theirs) for i in (0, 1)]
        print(
            f"{budget:>6.0%} {groups_for(budget):>6} | {mean_sd([r[0] for r in ours]):>19} "
            f"{mean_sd([r[0] for r in theirs]):>13} {delta[0]:>+6.3f} | {mean_sd([r[1] for r in ours]):>17} "
            f"{mean_sd([r[1] for r in theirs]):>13} {delta[1]:>+6.3f} | "
            f"{statistics.mean(r[2] for r in ours):.0f} / {statistics.mean(r[2] for r in theirs):.0f}"
        )

    if full:
        print(f"sensitivity to worker noise, {CALIBRATION_BUDGET:.0%} budget (Spearman / top-50, means):")
        noise_sensitivity(seeds, env)
        coverage_only = score_at_10_percent(least_asked_random_groups, seeds, noise, env)
        print(
            f"ablation, noise {noise}, {CALIBRATION_BUDGET:.0%}: random groups over the least-asked keys "
            f"(coverage only) {coverage_only[0]:.3f} / {coverage_only[1]:.3f}"
        )

    ours, theirs = scores["next_batch", CALIBRATION_BUDGET], scores["random", CALIBRATION_BUDGET]
    differences = [a[0] - b[0] for a, b in zip(ours, theirs)]
    top_gain = statistics.mean(r[1] for r in ours) - statistics.mean(r[1] for r in theirs)
    return differences, top_gain, statistics.mean(r[0] for r in theirs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 seeds, no noise sensitivity")
    parser.add_argument("--seeds", type=int, help="number of seeds (default 20, --quick 4)")
    parser.add_argument("--noise", type=float, default=NOISE_SD)
    parser.add_argument("--calibrate", action="store_true", help="run-to-run correlation over noise levels")
    parser.add_argument("--tune", action="store_true", help="the β grid on the tuning seeds")
    args = parser.parse_args()
    seeds = range(args.seeds or (4 if args.quick else 20))

    if args.calibrate:
        print(f"run-to-run Spearman at {CALIBRATION_BUDGET:.0%}, {len(seeds)} seeds, default env")
        for noise in (1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6):
            correlations = run_to_run(seeds, noise, default_env())
            print(f"  noise {noise:.2f}: " + ", ".join(f"{m} {mean_sd(c)}" for m, c in correlations.items()))
        return 0
    if args.tune:
        beta_tuning(args.noise)
        return 0

    started = time.perf_counter()
    print(
        f"{N_ITEMS} items, utilities ~ N(0, 1); Thurstonian workers, noise sd {args.noise}; "
        f"groups of {GROUP_SIZE} x {ASSIGNMENTS} assignments; batches of {BATCH_PAIRS} pairs; "
        f"{len(seeds)} seeds ({seeds.start}..{seeds.stop - 1}); mean ± sd over seeds"
    )
    targets = {name: env_report(name, seeds, args.noise, full=not args.quick) for name in ENVS}

    bound, per_item = information_bound(seeds, args.noise, CALIBRATION_BUDGET)
    print(
        f"\ninformation bound at {CALIBRATION_BUDGET:.0%} ({per_item:.1f} orderings per item): an estimate that saw "
        f"each item's noisy utility in every ordering, not just its place, has Spearman {mean_sd(bound)}"
    )

    seconds = batch_time(repeats=10 if args.quick else 50)
    print(
        f"\nnext_batch for {N_ITEMS} items, one batch of {BATCH_PAIRS} pairs: median {seconds * 1000:.1f} ms "
        f"(<= 100 ms: {'met' if seconds <= 0.1 else 'NOT met'})"
    )
    for name, (differences, top_gain, random_mean) in targets.items():
        gain = statistics.mean(differences)
        print(
            f"targets at {CALIBRATION_BUDGET:.0%}, env {name}: Spearman Δ {gain:+.3f} "
            f"(paired sd {statistics.stdev(differences):.3f}; >= +0.10: {'met' if gain >= 0.10 else 'NOT met'}; "
            f"random + 0.10 = {random_mean + 0.10:.3f} against the information bound {statistics.mean(bound):.3f}), "
            f"top-50 Δ {top_gain:+.3f} (> 0: {'met' if top_gain > 0 else 'NOT met'})"
        )
    print(f"total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
