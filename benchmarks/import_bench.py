"""Import benchmark: the paper's campaign (30 topics × 1,750 propositions: 52,500 rows) and ten
times it (300 topics: 525,000 rows), imported into PostgreSQL, each beside a raw COPY of the
same rows into the same table in the same run; at 52,500 rows also into SQLite (the demo's
database), beside a raw executemany.

    .venv/bin/python benchmarks/import_bench.py [--rows 52500 525000] [--repeat 3]

PostgreSQL is started on loopback by the test tooling (tests/services.py). Each measurement
runs in a fresh child process on a freshly migrated database (migrated by another process),
so peak memory (ru_maxrss) is the import's own, Django included. The raw COPY is the
database's own speed: its rows (topic ids, normalized texts) are made before the clock
starts and sent from memory, the topics exist already; the import reads the file, checks
every row, finds duplicates, creates the topics and writes, all in its one transaction. Raw
and import alternate `--repeat` times and the medians are compared. Targets: import ≤ 2×
the raw COPY, peak memory ≤ 300 MB. The last line is the run as one JSON object.
"""

import argparse
import io
import json
import os
import random
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._harness import (
    ROOT,
    child_environment,
    child_json,
    child_run,
    django_setup,
    postgres_server,
    workdir_made,
)

PER_TOPIC = 1750  # the paper's topics: 1,750 propositions each
TARGET_RATIO = 2.0
TARGET_PEAK_MB = 300

WORDS = [
    "loan",
    "credit",
    "student",
    "bank",
    "interest",
    "federal",
    "private",
    "rate",
    "grant",
    "college",
    "tuition",
    "payment",
    "bee",
    "colony",
    "mite",
    "hive",
    "queen",
    "pollen",
    "flower",
    "winter",
    "honey",
    "nectar",
    "virus",
    "pesticide",
    "habitat",
]


def write_file(path: Path, rows: int) -> None:
    rng = random.Random(20171)
    topics = max(1, rows // PER_TOPIC)
    with path.open("w", encoding="utf-8") as handle:
        handle.write("topic\tsubject\trelation\tobject\tconfidence\tsource\tid\n")
        for index in range(rows):
            topic = f"topic-{index % topics:03d}"
            subject = " ".join(rng.choices(WORDS, k=3))
            relation = rng.choice(("affects", "requires", "reduces", "is part of", "depends on"))
            obj = " ".join(rng.choices(WORDS, k=4)) + f" {index}"
            handle.write(
                f"{topic}\t{subject}\t{relation}\t{obj}\t{rng.uniform(0.5, 1):.3f}\tdoc{index % 997}\tp{index}\n"
            )


def child(mode: str, path: Path) -> dict:
    """Runs inside a fresh process with DATABASE_URL set to a migrated, empty database."""
    django_setup()
    from annotation.campaigns import campaign_create

    campaign = campaign_create(slug="bench", name="Benchmark")
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    seconds, count = _import(campaign, path) if mode == "import" else _raw(campaign, path)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"seconds": seconds, "rows": count, "peak_mb": peak_kb / 1024, "base_mb": rss_before / 1024}


def _import(campaign, path: Path) -> tuple[float, int]:
    from annotation.importing.importers import propositions_import

    started = time.perf_counter()
    with path.open("rb") as handle:
        summary = propositions_import(campaign=campaign, source=handle, filename=path.name, min_confidence=0.0)
    return time.perf_counter() - started, summary.kept


def _raw(campaign, path: Path) -> tuple[float, int]:
    """The same rows, made beforehand, in one COPY (PostgreSQL) or one executemany (SQLite)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from annotation.models import Proposition, Topic
    from annotation.text import normalize_text, proposition_text

    keys = sorted({line.split("\t", 1)[0] for line in path.open(encoding="utf-8")} - {"topic"})
    topics = {key: Topic.objects.create(campaign=campaign, key=key).pk for key in keys}
    rows = []
    with path.open(encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            topic, subject, relation, obj, confidence, source, external_id = line.rstrip("\n").split("\t")
            normalized = normalize_text(proposition_text(subject, relation, obj))
            rows.append((topics[topic], subject, relation, obj, normalized, confidence, source, external_id))
    columns = "topic_id, subject, relation, object, normalized, confidence, source, external_id, trap_kind, created_at"
    table = Proposition._meta.db_table
    if connection.vendor == "postgresql":
        now = timezone.now().isoformat()
        data = io.BytesIO("".join("\t".join(map(str, row)) + f"\tnone\t{now}\n" for row in rows).encode())
        started = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.copy_expert(f"COPY {table} ({columns}) FROM STDIN", data)
        return time.perf_counter() - started, len(rows)
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    params = [(*row[:5], float(row[5]), *row[6:], "none", now) for row in rows]
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({', '.join(['%s'] * 10)})", params)
    return time.perf_counter() - started, len(rows)


def measure(database_url: str, mode: str, path: Path) -> dict:
    env = child_environment(database_url)
    child_run([str(ROOT / "manage.py"), "migrate", "--verbosity", "0"], env)
    return child_json([__file__, "--child", mode, "--file", str(path)], env)


def compare(backend: str, rows: int, repeat: int, database, path: Path) -> dict:
    """Raw and import alternately `repeat` times, each on a fresh database; the medians."""
    raws, imports = [], []
    for attempt in range(repeat):
        raws.append(measure(database(f"raw_{rows}_{attempt}"), "raw", path))
        imports.append(measure(database(f"import_{rows}_{attempt}"), "import", path))
    raw = statistics.median(run["seconds"] for run in raws)
    ours = statistics.median(run["seconds"] for run in imports)
    peak = max(run["peak_mb"] for run in imports)
    result = {
        "backend": backend,
        "rows": rows,
        "topics": max(1, rows // PER_TOPIC),
        "raw_s": round(raw, 3),
        "import_s": round(ours, 3),
        "ratio": round(ours / raw, 2),
        "import_runs_s": [round(run["seconds"], 3) for run in imports],
        "raw_runs_s": [round(run["seconds"], 3) for run in raws],
        "peak_mb": round(peak, 1),
        "base_mb": round(max(run["base_mb"] for run in imports), 1),
    }
    assert all(run["rows"] == rows for run in imports + raws), "every run writes every row"
    baseline = "COPY" if backend == "postgresql" else "executemany"
    print(
        f"{backend:<10} {rows:>8,} rows  raw {baseline:<11} {raw:7.2f} s   import {ours:7.2f} s   "
        f"ratio {result['ratio']:4.2f}x   peak RSS {peak:6.1f} MB (Django alone {result['base_mb']:.1f} MB)",
        flush=True,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, nargs="+", default=[52_500, 525_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child")
    parser.add_argument("--file")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, Path(args.file))))
        return
    from tests.services import fresh_database

    started = time.perf_counter()
    results = []
    print(f"import vs the database's own COPY; medians of {args.repeat} alternating runs; load {os.getloadavg()}")
    with workdir_made() as work:
        with postgres_server(work) as server_url:
            for rows in args.rows:
                path = work / f"propositions-{rows}.tsv"
                write_file(path, rows)
                print(f"file: {rows:,} rows, {path.stat().st_size / 1e6:.1f} MB", flush=True)
                results.append(
                    compare("postgresql", rows, args.repeat, lambda name: fresh_database(server_url, name), path)
                )
        smallest = min(args.rows)
        path = work / f"propositions-{smallest}.tsv"
        results.append(compare("sqlite", smallest, args.repeat, lambda name: f"sqlite:///{work / name}.db", path))
    postgresql = [result for result in results if result["backend"] == "postgresql"]
    summary = {
        "benchmark": "import",
        "targets": {"ratio_vs_copy": TARGET_RATIO, "peak_mb": TARGET_PEAK_MB},
        "met": all(r["ratio"] <= TARGET_RATIO and r["peak_mb"] <= TARGET_PEAK_MB for r in postgresql),
        "results": results,
        "cpus": os.cpu_count(),
        "load_after": [round(load, 2) for load in os.getloadavg()],
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
