"""The simulated crowd of the quality issue (30 workers, 10 % spammers, 5 labels per item),
shared by the core tests and the database-level ones."""

import random
import statistics


def simulated_crowd(seed: int):
    """200 Likert HITs of five propositions, five assignments each (1,000 items, 5,000
    labels) from 30 workers picked uniformly per assignment. Latent importance t ~ N(0, 1);
    a good worker answers round(3 + t + noise), noise SD 0.5-1.0, clipped to 1..5. Three
    spammers (10 %): two answer uniformly at random, one always clicks the first option
    (5, "extremely important"). One HIT in five carries a trap (t = -3)."""
    rng = random.Random(seed)
    workers = [f"W{k:02d}" for k in range(30)]
    spammers = {"W00": "uniform", "W01": "uniform", "W02": "constant"}
    noise = {worker: rng.uniform(0.5, 1.0) for worker in workers}
    truth, traps, labels = {}, {}, []
    for hit in range(200):
        items = [f"h{hit}-p{k}" for k in range(5)]
        truth.update((item, rng.gauss(0, 1)) for item in items)
        if rng.random() < 0.2:
            traps[items[0]] = rng.choice(["obvious", "subtle"])
            truth[items[0]] = -3.0
        for worker in rng.sample(workers, 5):
            for item in items:
                if spammers.get(worker) == "uniform":
                    score = rng.randint(1, 5)
                elif spammers.get(worker) == "constant":
                    score = 5
                else:
                    score = min(5, max(1, round(3 + truth[item] + rng.gauss(0, noise[worker]))))
                labels.append((worker, item, score))
    return labels, truth, traps, set(spammers)


def correlation_with_truth(labels, truth, traps, excluded) -> float:
    scores = {}
    for worker, item, score in labels:
        if worker not in excluded and item not in traps:
            scores.setdefault(item, []).append(score)
    items = sorted(scores)
    return statistics.correlation([statistics.fmean(scores[item]) for item in items], [truth[item] for item in items])
