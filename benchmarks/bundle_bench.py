"""The campaign's one download with every topic (ranking.bundle) at 30 topics × 1,750
propositions on PostgreSQL: time, peak memory and size, beside building the same zip in
memory (every file as a string, then the zip in a BytesIO) — what it must not do.

    .venv/bin/python benchmarks/bundle_bench.py [--topics 30] [--propositions 1750]

PostgreSQL is started on loopback by the test tooling (tests/services.py) and a fresh
database is filled by COPY in a child process: per topic the propositions with their scores
(the top 100 in the comparison rounds, the rest by Likert mean, ties as a real run has
them), 5 Likert labels per proposition from 20 workers, and 250 orderings of five (2,500
votes). Each way of writing the zip then runs in a fresh child process of its own, so its
peak resident memory (ru_maxrss, minus the process's before it starts) is its own.
"""

import argparse
import io
import json
import os
import random
import resource
import sys
import tempfile
import time
import uuid
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _harness as harness

WORKERS_PER_TOPIC = 20
GROUP = 5
COMPARED = 100
ORDERINGS = 250


def fill(topics: int, propositions: int) -> dict:
    """The campaign, by COPY; ids are assigned here so the rows can refer to each other."""
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from annotation.campaigns import campaign_create
    from annotation.models import Batch, Proposition, Task, Topic
    from crowd.models import Assignment, Comparison, LikertLabel, Worker
    from ranking.models import PropositionScore

    call_command("migrate", verbosity=0)
    rng = random.Random(2017)
    now = timezone.now().isoformat()
    campaign = campaign_create(slug="bench", name="Bundle benchmark")
    workers = [w.pk for w in Worker.objects.bulk_create(Worker(external_id=f"A{k:012d}BENCH") for k in range(200))]
    props, scores, tasks, assignments, labels, votes = [], [], [], [], [], []
    pid = tid = aid = 0
    for k in range(topics):
        topic = Topic.objects.create(campaign=campaign, key=f"topic-{k:02d}", state=Topic.State.DONE)
        likert = Batch.objects.create(topic=topic, kind=Batch.Kind.LIKERT, number=0)
        compare = Batch.objects.create(topic=topic, kind=Batch.Kind.COMPARISON, number=1)
        crowd = rng.sample(workers, WORKERS_PER_TOPIC)
        first = pid + 1
        for i in range(propositions):
            pid += 1
            text = f"Lender {k}-{i}"
            props.append((pid, topic.pk, text, "offers", "loans to students", text.lower(), "", "", "none", now))
        for start in range(first, pid + 1, GROUP):
            tid += 1
            tasks.append((tid, uuid.uuid4(), likert.pk, "likert", tid, GROUP, now))
            for worker in rng.sample(crowd, GROUP):
                aid += 1
                assignments.append((aid, tid, worker, f"ASG{aid:012d}", "Approved", "verified", "{}", "false", now, ""))
                labels += [(aid, worker, p, rng.randint(1, 5)) for p in range(start, min(start + GROUP, pid + 1))]
        for n, p in enumerate(range(first, pid + 1)):
            compared = n < COMPARED
            mu = 25.0 if compared and n >= COMPARED - 5 else 35.0 - n / 10 if compared else None  # 5 never compared
            sigma = 8.333 if compared and n >= COMPARED - 5 else 1.5 if compared else None
            mean = round(5 - n / propositions * 4, 1)  # means of five labels repeat: ties
            scores.append((p, mean, 5, "true" if compared else "false", mu, sigma, 25 if compared else 0, n + 1, now))
        top = list(range(first, first + COMPARED))
        for _ in range(ORDERINGS):
            tid += 1
            aid += 1
            worker = rng.choice(crowd)
            tasks.append((tid, uuid.uuid4(), compare.pk, "comparison", tid, 1, now))
            assignments.append((aid, tid, worker, f"ASG{aid:012d}", "Approved", "verified", "{}", "false", now, ""))
            order = rng.sample(top, GROUP)
            votes += [(aid, worker, a, b) for i, a in enumerate(order) for b in order[i + 1 :]]
    with connection.cursor() as cursor:
        raw = cursor.cursor
        harness.copy_rows(raw, Proposition, harness.PROPOSITION_COLUMNS, props)
        harness.copy_rows(
            raw,
            PropositionScore,
            [
                "proposition_id",
                "likert_mean",
                "likert_n",
                "in_comparisons",
                "mu",
                "sigma",
                "comparisons",
                "rank",
                "updated_at",
            ],
            scores,
        )
        harness.copy_rows(raw, Task, harness.TASK_COLUMNS, tasks)
        harness.copy_rows(raw, Assignment, harness.ASSIGNMENT_COLUMNS, assignments)
        harness.copy_rows(raw, LikertLabel, harness.LIKERT_LABEL_COLUMNS, labels)
        harness.copy_rows(raw, Comparison, ["assignment_id", "worker_id", "winner_id", "loser_id"], votes)
        for model in (Proposition, Task, Assignment):
            table = model._meta.db_table
            cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
        cursor.execute("ANALYZE")
    return {"propositions": len(props), "labels": len(labels), "votes": len(votes)}


def in_memory(campaign, target) -> None:
    """The baseline: every file rendered to a string first, then zipped into memory."""
    from ranking import export
    from ranking.bundle import topic_files, topic_folder
    from ranking.pipeline import TOP_FOR_CONCEPT_MAPS

    files: dict[str, str] = {}
    for topic in campaign.topics.order_by("key"):
        names, folder = topic_files(campaign, topic), f"{campaign.slug}/{topic_folder(topic)}"
        rows = export.ranking_rows(topic=topic)
        for fmt in ("csv", "tsv"):
            stream = io.StringIO(newline="")
            export.write_rows(rows, fmt, stream)
            files[f"{folder}/{names['ranking.' + fmt]}"] = stream.getvalue()
        stream = io.StringIO(newline="")
        export.write_rows(list(export.raw_label_rows(topic=topic)), "csv", stream, columns=export.LABEL_COLUMNS)
        files[f"{folder}/{names['labels.csv']}"] = stream.getvalue()
        stream = io.StringIO(newline="")
        export.write_top_propositions(topic=topic, stream=stream, top=TOP_FOR_CONCEPT_MAPS)
        files[f"{folder}/{names['top']}"] = stream.getvalue()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(name, text)
        archive.writestr(f"{campaign.slug}/README.txt", "the same README")
    target.write(buffer.getvalue())


def measure(way: str) -> dict:
    """Write the zip one way into a temporary file; time, peak memory growth and size."""
    harness.django_setup()
    from annotation.models import Campaign
    from ranking.bundle import campaign_bundle_write

    campaign = Campaign.objects.get(slug="bench")
    campaign.topics.first()  # connect before the baseline reading
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    with tempfile.TemporaryFile() as target:
        if way == "ours":
            campaign_bundle_write(campaign=campaign, target=target)
        else:
            in_memory(campaign, target)
        seconds = time.perf_counter() - started
        size = target.seek(0, os.SEEK_END)
        target.seek(0)
        with zipfile.ZipFile(target) as archive:
            entries = len(archive.namelist())
            unpacked = sum(info.file_size for info in archive.infolist())
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before  # KiB on Linux
    return {
        "seconds": seconds,
        "peak_mib": grown / 1024,
        "zip_mib": size / 2**20,
        "unpacked_mib": unpacked / 2**20,
        "entries": entries,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topics", type=int, default=30)
    parser.add_argument("--propositions", type=int, default=1750)
    parser.add_argument("--fill", action="store_true")
    parser.add_argument("--measure", choices=("ours", "in-memory"))
    args = parser.parse_args()
    if args.fill:
        harness.django_setup()
        print(json.dumps(fill(args.topics, args.propositions)))
        return
    if args.measure:
        if os.environ.get("BUNDLE_PROFILE"):
            import cProfile

            cProfile.runctx("measure(args.measure)", globals(), locals(), sort="cumulative")
        print(json.dumps(measure(args.measure)))
        return
    from tests.services import fresh_database

    with harness.workdir_made() as workdir, harness.postgres_server(workdir) as server_url:
        env = harness.child_environment(fresh_database(server_url, "bench_bundle"))
        filling = ["--fill", "--topics", str(args.topics), "--propositions", str(args.propositions)]
        filled = harness.child_json([__file__, *filling], env)
        results = {way: harness.child_json([__file__, "--measure", way], env) for way in ("ours", "in-memory")}
    print(
        f"PostgreSQL: {args.topics} topics × {args.propositions:,} propositions ({filled['propositions']:,}), "
        f"{filled['labels']:,} Likert labels, {filled['votes']:,} comparison votes"
    )
    ours = results["ours"]
    print(f"zip: {ours['entries']} files, {ours['zip_mib']:.1f} MiB ({ours['unpacked_mib']:.1f} MiB unpacked)")
    print(f"{'way':<34}{'time':>9}{'peak memory growth':>21}")
    for way, label in (
        ("ours", "ours: entry by entry, to a file"),
        ("in-memory", "baseline: all files, then zip, in memory"),
    ):
        print(f"{label:<34}{results[way]['seconds']:>7.1f} s{results[way]['peak_mib']:>17.1f} MiB")
    print(json.dumps({"filled": filled, **results}))


if __name__ == "__main__":
    main()
