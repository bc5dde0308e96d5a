"""Import benchmark: 100,000 deterministic rows, imported into SQLite and PostgreSQL, each
beside a raw `executemany` of the same rows into the same table of the same database.

    .venv/bin/python benchmarks/import_bench.py [--rows 100000]

PostgreSQL is started on loopback by the test tooling (tests/services.py). Each measurement
runs in a fresh child process on a freshly migrated database, so peak memory (ru_maxrss)
is the import's own. Targets: import ≤ 3× the raw insert, peak memory ≤ 300 MB.
"""

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

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
    with path.open("w", encoding="utf-8") as handle:
        handle.write("topic\tsubject\trelation\tobject\tconfidence\tsource\tid\n")
        for index in range(rows):
            topic = f"topic-{index % 30:02d}"
            subject = " ".join(rng.choices(WORDS, k=3))
            relation = rng.choice(("affects", "requires", "reduces", "is part of", "depends on"))
            obj = " ".join(rng.choices(WORDS, k=4)) + f" {index}"
            handle.write(
                f"{topic}\t{subject}\t{relation}\t{obj}\t{rng.uniform(0.5, 1):.3f}\tdoc{index % 997}\tp{index}\n"
            )


def child(mode: str, path: Path) -> dict:
    """Runs inside a fresh process with DATABASE_URL set to an empty database."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from annotation.campaigns import campaign_create
    from annotation.importing.importers import propositions_import
    from annotation.models import Proposition, Topic
    from annotation.text import normalize_text, proposition_text

    call_command("migrate", verbosity=0)
    campaign = campaign_create(slug="bench", name="Benchmark")
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if mode == "import":
        started = time.perf_counter()
        with path.open("rb") as handle:
            summary = propositions_import(campaign=campaign, source=handle, filename=path.name, min_confidence=0.0)
        seconds = time.perf_counter() - started
        count = summary.kept
    else:
        topics = {f"topic-{i:02d}": Topic.objects.create(campaign=campaign, key=f"topic-{i:02d}").pk for i in range(30)}
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        rows = []
        with path.open(encoding="utf-8") as handle:
            next(handle)
            for line in handle:
                topic, subject, relation, obj, confidence, source, external_id = line.rstrip("\n").split("\t")
                rows.append(
                    (
                        topics[topic],
                        subject,
                        relation,
                        obj,
                        normalize_text(proposition_text(subject, relation, obj)),
                        float(confidence),
                        source,
                        external_id,
                        "none",
                        now,
                    )
                )
        columns = (
            "topic_id, subject, relation, object, normalized, confidence, source, external_id, trap_kind, created_at"
        )
        sql = f"INSERT INTO {Proposition._meta.db_table} ({columns}) VALUES ({', '.join(['%s'] * 10)})"
        started = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.executemany(sql, rows)
        seconds = time.perf_counter() - started
        count = len(rows)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"seconds": seconds, "rows": count, "peak_mb": peak_kb / 1024, "base_mb": rss_before / 1024}


def measure(database_url: str, mode: str, path: Path) -> dict:
    env = dict(os.environ, DATABASE_URL=database_url)
    env.pop("CELERY_BROKER_URL", None)
    output = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--file", str(path)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def report(backend: str, raw: dict, ours: dict) -> None:
    ratio = ours["seconds"] / raw["seconds"]
    print(
        f"{backend:<11} raw executemany {raw['seconds']:7.2f} s   import {ours['seconds']:7.2f} s   "
        f"ratio {ratio:4.2f}x (target <= 3x)   import peak RSS {ours['peak_mb']:6.1f} MB "
        f"(after setup {ours['base_mb']:.1f} MB; target <= 300 MB)   rows {ours['rows']:,}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--child")
    parser.add_argument("--file")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, Path(args.file))))
        return
    from tests.services import fresh_database, postgres

    with tempfile.TemporaryDirectory(prefix="salience-bench-") as workdir:
        work = Path(workdir)
        os.chmod(work, 0o755)
        path = work / "propositions.tsv"
        write_file(path, args.rows)
        print(f"file: {args.rows:,} rows, {path.stat().st_size / 1e6:.1f} MB")
        raw = measure(f"sqlite:///{work / 'raw.sqlite3'}", "raw", path)
        ours = measure(f"sqlite:///{work / 'import.sqlite3'}", "import", path)
        report("SQLite", raw, ours)
        pg_dir = work / "pg"
        pg_dir.mkdir()
        with postgres(pg_dir) as server_url:
            raw = measure(fresh_database(server_url, "bench_raw"), "raw", path)
            ours = measure(fresh_database(server_url, "bench_import"), "import", path)
            report("PostgreSQL", raw, ours)


if __name__ == "__main__":
    main()
