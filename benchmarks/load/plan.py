"""Who answers what: each simulated worker's submissions, in order, split into rounds.

Worker w's k-th answer goes to task (w + k) mod n: no worker meets a task twice (the page
would say "already submitted"), the workers of one moment spread over many tasks, and each
task is published asking for exactly as many answers as it will get, so no legitimate
submission is refused. A seeded share of answers is sent twice, alternately after the reply
(RETRY) and at the same time from a second connection (RACE).
"""

import math
import random
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from benchmarks.load.client import RACE, RETRY, Job

MIN_TASKS = 100  # spread the answers over this many tasks at least
WARMUP_VIEWS_PER_TASK = 4  # page views per task before timing: fills both processes' caches


class Published(Protocol):
    uuid: str
    hit_id: str


def tasks_needed(*, workers: int, submissions: int) -> tuple[int, int]:
    """(how many tasks, how many answers the busiest of them gets)."""
    tasks = max(MIN_TASKS, math.ceil(submissions / workers))
    counts = spread(submissions, workers)
    answers = Counter((worker + k) % tasks for worker, count in enumerate(counts) for k in range(count))
    return tasks, max(answers.values())


def jobs_plan(
    *, tasks: Sequence[Published], workers: int, submissions: int, duplicates: float, seed: int
) -> list[list[Job]]:
    """Each worker's submissions in order; a `duplicates` share of them, drawn by seed, sent twice."""
    rng = random.Random(f"{seed}:duplicates")
    twice = sorted(rng.sample(range(submissions), round(submissions * duplicates)))
    mode = {index: (RETRY, RACE)[n % 2] for n, index in enumerate(twice)}
    jobs, index = [], 0
    for worker, count in enumerate(spread(submissions, workers)):
        own = []
        for k in range(count):
            task = tasks[(worker + k) % len(tasks)]
            own.append(Job(task.uuid, task.hit_id, f"3LOADBENCH{index:020d}", mode.get(index, "")))
            index += 1
        jobs.append(own)
    return jobs


def warmup_plan(*, tasks: Sequence[Published], worker: int, workers: int) -> list[Job]:
    """Worker `worker`'s share of the page views that warm the server up (never answered)."""
    views = [tasks[n % len(tasks)] for n in range(WARMUP_VIEWS_PER_TASK * len(tasks))]
    return [
        Job(task.uuid, task.hit_id, f"3LOADWARMUP{n:019d}") for n, task in enumerate(views) if n % workers == worker
    ]


def spread(total: int, parts: int) -> list[int]:
    """`total` split into `parts` near-equal counts."""
    return [total // parts + (part < total % parts) for part in range(parts)]


def chunk(items: list, part: int, parts: int) -> list:
    """Part `part` of `parts` near-equal, contiguous slices of `items`."""
    return items[part * len(items) // parts : (part + 1) * len(items) // parts]
