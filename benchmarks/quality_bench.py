"""Quality-control benchmark: the QC job (`campaign_quality_refresh`) end to end on
PostgreSQL with 250,000 Likert labels — 50,000 propositions × 5 workers, from 300 workers
(10 % spammers), 1 % of the propositions traps — with the time split by phase.

    .venv/bin/python benchmarks/quality_bench.py [--propositions 50000] [--workers 300]

PostgreSQL is started on loopback by the test tooling (tests/services.py); a fresh database
is migrated and filled with raw COPYs, then analysed, in a child process. The job runs
twice: first on a campaign without worker rows (every row inserted, every exclusion
recorded, every statistic computed), then again (every row updated, nothing to record, the
costly statistics of unchanged topics kept). Targets: total ≤ 5 s, of which the worker
computation ≤ 1 s. Last, the campaign's report as the page builds it — reading the stored
figures — beside computing its statistics per request, as the page did before they were
stored (same run, no target).
"""

import argparse
import json
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _harness as harness

ASSIGNMENTS_PER_TASK = 5
GROUP_SIZE = 5
TOPICS = 25
TRAP_SHARE = 0.01
SPAMMER_SHARE = 0.10
TARGETS = {"compute": 1.0, "total": 5.0}
PHASES = ("fetch", "compute", "statistics", "write", "total")


def campaign_fill(propositions: int, workers: int, seed: int = 2017) -> dict:
    """Propositions, Likert tasks of five, five assignments per task and their labels, by
    COPY. Good workers answer round(3 + t + noise), spammers uniformly; traps t = −3."""
    import numpy as np
    from django.db import connection
    from django.utils import timezone

    from annotation.campaigns import campaign_create
    from annotation.models import Batch, Proposition, Task, TaskItem, Topic
    from crowd.models import Assignment, LikertLabel, Worker

    rng = np.random.default_rng(seed)
    campaign = campaign_create(slug="bench", name="Quality benchmark")
    topics = [Topic.objects.create(campaign=campaign, key=f"topic-{k:02d}").pk for k in range(TOPICS)]
    batches = [Batch.objects.create(topic_id=topic, kind=Batch.Kind.LIKERT).pk for topic in topics]
    crowd = Worker.objects.bulk_create(Worker(external_id=f"A{k:012d}BENCH") for k in range(workers))
    worker_ids = np.array([worker.pk for worker in crowd])
    spammers = set(worker_ids[: int(SPAMMER_SHARE * workers)].tolist())
    noise = rng.uniform(0.5, 1.0, workers)

    now = timezone.now().isoformat()
    truth = rng.normal(0, 1, propositions)
    is_trap = rng.random(propositions) < TRAP_SHARE
    truth[is_trap] = -3.0
    tasks = propositions // GROUP_SIZE
    topic_of_task = np.arange(tasks) * TOPICS // tasks
    chosen = np.argsort(rng.random((tasks, workers)), axis=1)[:, :ASSIGNMENTS_PER_TASK]  # distinct per task
    with connection.cursor() as cursor:
        raw = cursor.cursor
        harness.copy_rows(
            raw,
            Proposition,
            harness.PROPOSITION_COLUMNS,
            (
                (
                    p + 1,
                    topics[topic_of_task[p // GROUP_SIZE]],
                    f"Statement {p}",
                    "matters",
                    "",
                    f"statement {p} – matters",
                    "",
                    f"p{p}",
                    ("obvious", "subtle")[p % 2] if is_trap[p] else "none",
                    now,
                )
                for p in range(propositions)
            ),
        )
        harness.copy_rows(
            raw,
            Task,
            harness.TASK_COLUMNS,
            (
                (t + 1, uuid.uuid4(), batches[topic_of_task[t]], "likert", t, ASSIGNMENTS_PER_TASK, now)
                for t in range(tasks)
            ),
        )
        harness.copy_rows(
            raw,
            TaskItem,
            ["id", "task_id", "proposition_id", "position"],
            ((p + 1, p // GROUP_SIZE + 1, p + 1, p % GROUP_SIZE) for p in range(propositions)),
        )
        harness.copy_rows(
            raw,
            Assignment,
            harness.ASSIGNMENT_COLUMNS,
            (
                (
                    t * ASSIGNMENTS_PER_TASK + a + 1,
                    t + 1,
                    worker_ids[chosen[t, a]],
                    f"ASG{t:09d}{a}",
                    "Submitted",
                    "verified",
                    "{}",
                    "false",
                    now,
                    "",
                )
                for t in range(tasks)
                for a in range(ASSIGNMENTS_PER_TASK)
            ),
        )
        labels = []
        for t in range(tasks):
            for a in range(ASSIGNMENTS_PER_TASK):
                worker = chosen[t, a]
                items = np.arange(t * GROUP_SIZE, (t + 1) * GROUP_SIZE)
                if worker_ids[worker] in spammers:
                    scores = rng.integers(1, 6, GROUP_SIZE)
                else:
                    scores = np.clip(np.rint(3 + truth[items] + rng.normal(0, noise[worker], GROUP_SIZE)), 1, 5)
                assignment = t * ASSIGNMENTS_PER_TASK + a + 1
                labels += [(assignment, worker_ids[worker], item + 1, int(score)) for item, score in zip(items, scores)]
        harness.copy_rows(raw, LikertLabel, harness.LIKERT_LABEL_COLUMNS, labels)
        cursor.execute("ANALYZE")
    return {"campaign_id": campaign.pk, "labels": len(labels), "traps": int(is_trap.sum()), "spammers": spammers}


def child(propositions: int, workers: int) -> dict:
    """Runs inside a fresh process with DATABASE_URL set to an empty database."""
    harness.django_setup()
    from django.core.management import call_command

    from annotation.models import Campaign
    from crowd.models import QualityStatistics
    from crowd.qc import statistics, worker_quality
    from crowd.qc.counted import counted_labels
    from crowd.qc.report import campaign_quality_report
    from crowd.qc.worker_quality import _quality_rows, campaign_quality_refresh, excluded_worker_ids

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    filled = campaign_fill(propositions, workers)
    fill_seconds = time.perf_counter() - started
    runs = []
    campaign = Campaign.objects.get(pk=filled["campaign_id"])
    timed: dict[str, float] = {}
    store_statistics = worker_quality.statistics_refresh

    def statistics_timed(**kwargs) -> None:
        started = time.perf_counter()
        store_statistics(**kwargs)
        timed["statistics"] = time.perf_counter() - started

    worker_quality.statistics_refresh = statistics_timed  # the job's own call, timed
    for _ in range(2):
        # The job's phases timed from outside: its reads and its worker computation on their
        # own, the statistics it stores as it runs them, then the whole job; writing is what
        # the whole takes beyond the three.
        marks = [time.perf_counter()]
        data = counted_labels(campaign_id=campaign.pk)
        marks.append(time.perf_counter())
        _quality_rows(campaign, data)
        marks.append(time.perf_counter())
        excluded = campaign_quality_refresh(campaign_id=campaign.pk)
        marks.append(time.perf_counter())
        fetch, compute, total = marks[1] - marks[0], marks[2] - marks[1], marks[3] - marks[2]
        write = max(0.0, total - fetch - compute - timed["statistics"])
        runs.append(
            {"fetch": fetch, "compute": compute, "statistics": timed["statistics"], "write": write, "total": total}
        )
    campaign = Campaign.objects.get(pk=filled["campaign_id"])
    started = time.perf_counter()
    campaign_quality_report(campaign)
    report_seconds = time.perf_counter() - started
    # The same figures computed from the labels, as the page did per request before the job
    # stored them: the campaign's statistics on every label and without the excluded.
    started = time.perf_counter()
    data = counted_labels(campaign_id=campaign.pk)
    statistics._costly(None, data.ratings, excluded_worker_ids(campaign.pk), campaign.assignments_per_hit)
    computed_seconds = time.perf_counter() - started
    return {
        "labels": filled["labels"],
        "traps": filled["traps"],
        "fill_seconds": fill_seconds,
        "runs": runs,
        "excluded": len(excluded),
        "excluded_spammers": len(excluded & filled["spammers"]),
        "spammers": len(filled["spammers"]),
        "report_seconds": report_seconds,
        "computed_seconds": computed_seconds,
        "statistics_rows": QualityStatistics.objects.filter(campaign=campaign).count(),
    }


def report(result: dict, propositions: int, workers: int) -> None:
    print(
        f"PostgreSQL: {result['labels']:,} Likert labels ({propositions:,} propositions × {ASSIGNMENTS_PER_TASK}) "
        f"from {workers} workers, {result['traps']} traps; filled by COPY in {result['fill_seconds']:.1f} s"
    )
    print(f"{'phase':<9}{'first run':>11}{'repeat':>10}   target")
    for phase in PHASES:
        first, repeat = (run[phase] for run in result["runs"])
        target = f"<= {TARGETS[phase]:g} s" if phase in TARGETS else ""
        print(f"{phase:<9}{first:>9.3f} s{repeat:>8.3f} s   {target}")
    print(
        f"excluded: {result['excluded']} workers, {result['excluded_spammers']} of the "
        f"{result['spammers']} spammers (default 5 % cap)"
    )
    print(
        f"statistics stored for the campaign and its topics: {result['statistics_rows']} rows; the repeat run keeps "
        "the costly figures of every topic whose labels and exclusions did not change"
    )
    print(
        f"campaign report, figures read (campaign_quality_report): {result['report_seconds']:.3f} s "
        f"vs computed from the labels per request, as before: {result['computed_seconds']:.3f} s (no target)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--propositions", type=int, default=50_000)
    parser.add_argument("--workers", type=int, default=300)
    parser.add_argument("--child", action="store_true")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.propositions, args.workers)))
        return
    from tests.services import fresh_database

    with harness.workdir_made() as workdir, harness.postgres_server(workdir) as server_url:
        env = harness.child_environment(fresh_database(server_url, "bench_quality"))
        sizes = ["--propositions", str(args.propositions), "--workers", str(args.workers)]
        result = harness.child_json([__file__, "--child", *sizes], env)
    report(result, args.propositions, args.workers)


if __name__ == "__main__":
    main()
