"""Scale benchmark (issue 17): the pipeline at 3, 10 and 30 topics × 1,750 propositions on
PostgreSQL (300 topics with --big), with time, queries and growth in topics per stage.

    .venv/bin/python benchmarks/scale.py [--topics 3,10,30] [--big] [--baseline-topics 3,10]
                                         [--pages 3,10,30] [--requests 10]

Each size runs in a fresh child process on a fresh database of one PostgreSQL started on
loopback by the test tooling (tests/services.py), Celery eager, DEBUG off. The data is built
the way a campaign gets it: the propositions through the project's importer, the Likert
batch of each topic by `annotation.batching`, every pipeline step by the project's loop
(`ranking.workflow.loop_run`: sync, QC once per campaign, `topic_advance` per ready topic).
Only the marketplace and the crowd are stand-ins: a published batch records its HITs and
commits its cost (`crowd.work.ledger`) in bulk instead of calling MTurk, and the crowd's
answers (20 workers per topic, 10 % spammers; five assignments per HIT, confirmed, approved)
are written with COPY, after which every HIT is marked complete, as sync leaves it.

Stages, each with its time, its queries and its growth exponent in topics (log-log slope
between sizes, and the least-squares fit over all): import; likert (the Likert round's steps:
aggregate, top-k, first comparison batch); QC (`campaign_quality_refresh`, every call);
comparison steps (`topic_advance` of every comparison step, QC not included); the whole loop
passes; refit store (`_refit_store` with `_ranks_store`, per step).

Baselines from the same run. Refit store: the old one (Django `bulk_update` of μ, σ and counts,
then the ranks sorted in Python and written by `bulk_update`, a CASE over every row) on the
first 20 refits of each size, in a savepoint rolled back before ours runs on the same rows,
what both store compared. QC: for --baseline-topics (3 and 10 by default: at 30 the old way
alone takes ~15-20 minutes here) the whole pipeline again on a fresh database the old way,
with the campaign's QC inside every topic's step (the same QC function, which keeps what rests
on unchanged Likert labels: the baseline measures where QC runs, not how). Last the researcher's pages and API lists at
--pages sizes, timed with Django's test client logged in as the owner (p50 and p95 over
--requests requests each, interleaved, after one warm-up round), the campaign page's balance
call answered by the local MTurk endpoint served from a thread. The last line is every figure
as one JSON object.

How long: on 2 shared cores, the default run ~10 minutes (3 topics ~1, 10 topics ~2,
30 topics ~3.5, the two baselines ~2.5); --big adds 300 topics (import and pipeline, no pages).
"""

import argparse
import io
import itertools
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PROPOSITIONS = 1750
WORKERS_PER_TOPIC = 20
SPAMMER_SHARE = 0.10
DEFAULT_TOPICS = (3, 10, 30)
BIG_TOPICS = 300
MAX_PASSES = 60
STORE_SAMPLES = 20  # refits per size on which the old bulk_update store runs beside ours
PAGES = ("campaign page", "quality report", "ranking page", "api batches", "api hits", "api workers")


# ---- Measuring (child) --------------------------------------------------------------------


class QueryCounter:
    """A connection execute wrapper that counts statements (execute and executemany)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, execute, sql, params, many, context):
        self.count += 1
        return execute(sql, params, many, context)


QUERIES = QueryCounter()
METERS: dict[tuple[str, str], list[tuple[float, int]]] = defaultdict(list)
STAGE = {"now": "setup"}
ASIDE = {"seconds": 0.0, "queries": 0}  # the baseline's samples, left out of the blocks around them


@contextmanager
def metered(name: str, *, aside: bool = False) -> Iterator[None]:
    """Record the time and the queries of the block under (current stage, name), less what
    blocks inside it set aside; `aside` sets this block's own aside."""
    queries, started = QUERIES.count, time.perf_counter()
    set_aside = dict(ASIDE)
    try:
        yield
    finally:
        seconds = time.perf_counter() - started - (ASIDE["seconds"] - set_aside["seconds"])
        count = QUERIES.count - queries - (ASIDE["queries"] - set_aside["queries"])
        METERS[(STAGE["now"], name)].append((seconds, count))
        if aside:
            ASIDE["seconds"] += seconds
            ASIDE["queries"] += count


def meter(module, attribute: str, name: str) -> None:
    """Replace module.attribute by the same function, metered as `name`."""
    original = getattr(module, attribute)

    def wrapper(*args, **kwargs):
        with metered(name):
            return original(*args, **kwargs)

    setattr(module, attribute, wrapper)


def totals(stage: str, name: str) -> dict:
    rows = METERS.get((stage, name), [])
    seconds = [row[0] for row in rows]
    return {
        "calls": len(rows),
        "seconds": sum(seconds),
        "queries": sum(row[1] for row in rows),
        "mean_ms": 1000 * statistics.fmean(seconds) if rows else None,
        "p95_ms": 1000 * _p95(seconds) if rows else None,
        "queries_per_call": [min(row[1] for row in rows), max(row[1] for row in rows)] if rows else None,
    }


def _p95(values: list[float]) -> float:
    return values[0] if len(values) < 2 else statistics.quantiles(values, n=20, method="inclusive")[18]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---- The data (child) ---------------------------------------------------------------------


def propositions_file(directory: Path, topics: int, per_topic: int) -> tuple[Path, Path]:
    """A TSV of topics × per_topic propositions and a topics file with their descriptions."""
    rng = random.Random(2017)
    words = [
        "loan",
        "credit",
        "student",
        "bank",
        "interest",
        "federal",
        "rate",
        "grant",
        "college",
        "tuition",
        "bee",
        "colony",
        "hive",
        "pollen",
    ]
    path, topics_path = directory / "propositions.tsv", directory / "topics.tsv"
    with path.open("w", encoding="utf-8") as handle:
        handle.write("topic\tsubject\trelation\tobject\tconfidence\tsource\tid\n")
        for topic in range(topics):
            for index in range(per_topic):
                subject = " ".join(rng.choices(words, k=3))
                relation = rng.choice(("affects", "requires", "reduces", "is part of", "depends on"))
                obj = f"{' '.join(rng.choices(words, k=4))} {index}"
                handle.write(
                    f"t{topic:03d}\t{subject}\t{relation}\t{obj}\t{rng.uniform(0.5, 1):.3f}\tdoc{index % 97}\t"
                    f"p{topic}-{index}\n"
                )
    with topics_path.open("w", encoding="utf-8") as handle:
        handle.write("key\tdescription\n")
        handle.writelines(f"t{topic:03d}\tscale benchmark topic {topic}\n" for topic in range(topics))
    return path, topics_path


def copy_rows(table: str, columns: list[str], rows) -> None:
    """COPY rows (tuples of text-able values; None is NULL) into `table`."""
    from django.db import connection

    buffer = io.StringIO()
    for row in rows:
        buffer.write("\t".join(r"\N" if value is None else str(value) for value in row) + "\n")
    buffer.seek(0)
    with connection.cursor() as cursor:
        cursor.cursor.copy_expert(f"COPY {table} ({', '.join(columns)}) FROM STDIN", buffer)


def batch_publish_in_bulk(batch_id: int, live: bool) -> None:
    """The marketplace stand-in: commit the batch's cost in the ledger (the project's own
    check and entries), record one HIT per task in bulk, and mark the batch published."""
    from datetime import timedelta

    from django.db import transaction
    from django.utils import timezone

    from annotation.batching import batch_status_move
    from annotation.models import Batch
    from crowd.models import HIT
    from crowd.work import ledger

    with transaction.atomic():
        ledger.batch_commit(batch_id=batch_id)
        batch = Batch.objects.select_related("topic__campaign").get(pk=batch_id)
        campaign = batch.topic.campaign
        expires = timezone.now() + timedelta(seconds=campaign.hit_lifetime_seconds)
        HIT.objects.bulk_create(
            HIT(
                task=task,
                channel=campaign.channel,
                environment=campaign.environment,
                hit_id=f"3SCALE{task.pk:024d}",
                max_assignments=task.assignments_needed,
                reward=campaign.reward_for(batch.kind),
                expires_at=expires,
            )
            for task in batch.tasks.filter(hit__isnull=True)
        )
        batch_status_move(batch_id=batch_id, to=Batch.Status.PUBLISHED)


class Crowd:
    """Workers who answer every open task: good workers by a latent importance plus noise,
    spammers at random; traps have a low latent importance."""

    def __init__(self, *, workers: int, seed: int = 2017) -> None:
        from crowd.models import Worker

        self.rng = random.Random(seed)
        rows = Worker.objects.bulk_create(Worker(external_id=f"A{k:012d}SCALE") for k in range(workers))
        self.workers = [row.pk for row in rows]
        self.spammers = set(self.workers[: int(SPAMMER_SHARE * workers)])
        self.noise = {pk: self.rng.uniform(0.5, 1.0) for pk in self.workers}
        self.truth: dict[int, float] = {}
        self.clock = 0

    def learn_truth(self) -> None:
        from annotation.models import Proposition

        for pk, trap_kind in Proposition.objects.values_list("pk", "trap_kind").iterator(chunk_size=20000):
            if pk not in self.truth:
                self.truth[pk] = -3.0 if trap_kind != Proposition.TrapKind.NONE else self.rng.gauss(0, 1)

    def answer(self, batch_ids: list[int]) -> tuple[int, int]:
        """Five confirmed, approved assignments for every task of the batches; (assignments, labels)."""
        from datetime import timedelta

        from django.db import connection
        from django.utils import timezone

        from annotation.models import Batch, TaskItem
        from crowd.models import HIT, Assignment, Comparison, LikertLabel

        tasks: dict[int, list[int]] = defaultdict(list)
        needed, kinds = {}, {}
        items = TaskItem.objects.filter(task__batch_id__in=batch_ids).order_by("task_id", "position")
        for task, pid, kind, count in items.values_list(
            "task_id", "proposition_id", "task__kind", "task__assignments_needed"
        ):
            tasks[task].append(pid)
            needed[task], kinds[task] = count, kind
        hits = dict(HIT.objects.filter(task_id__in=list(tasks)).values_list("task_id", "pk"))
        total = sum(needed.values())
        with connection.cursor() as cursor:
            sequence = f"pg_get_serial_sequence('{Assignment._meta.db_table}', 'id')"
            cursor.execute(f"SELECT nextval({sequence}) FROM generate_series(1, %s)", [total])
            ids = iter([row[0] for row in cursor.fetchall()])
        start = timezone.now() - timedelta(days=1)
        assignments, likert, votes = [], [], []
        for task, shown in tasks.items():
            for worker in self.rng.sample(self.workers, needed[task]):
                pk, self.clock = next(ids), self.clock + 1
                submitted = (start + timedelta(milliseconds=self.clock)).isoformat()
                spammer = worker in self.spammers
                if kinds[task] == Batch.Kind.LIKERT:
                    untouched = False
                    for pid in shown:
                        score = self.rng.randint(1, 5) if spammer else self._likert(pid, worker)
                        likert.append((pk, worker, pid, score))
                else:
                    order = sorted(shown, key=lambda pid: self.rng.random() if spammer else self._noisy(pid, worker))
                    untouched = order == shown
                    votes += [(pk, worker, a, b) for i, a in enumerate(order) for b in order[i + 1 :]]
                assignments.append(
                    (pk, task, hits.get(task), worker, f"SCALE{pk:015d}", "Approved", "verified", "{}", untouched)
                    + (submitted, submitted, submitted, 30000, "")
                )
        copy_rows(
            Assignment._meta.db_table,
            ["id", "task_id", "hit_id", "worker_id", "assignment_id", "status", "verification", "answer", "untouched"]
            + ["accepted_at", "submitted_at", "reviewed_at", "time_on_task_ms", "reject_reason"],
            assignments,
        )
        copy_rows(LikertLabel._meta.db_table, ["assignment_id", "worker_id", "proposition_id", "score"], likert)
        copy_rows(Comparison._meta.db_table, ["assignment_id", "worker_id", "winner_id", "loser_id"], votes)
        HIT.objects.filter(task_id__in=list(tasks)).update(complete=True, status=HIT.Status.REVIEWABLE)
        return len(assignments), len(likert) + len(votes)

    def _likert(self, pid: int, worker: int) -> int:
        return min(5, max(1, round(3 + self.truth[pid] + self.rng.gauss(0, self.noise[worker]))))

    def _noisy(self, pid: int, worker: int) -> float:
        return -(self.truth[pid] + self.rng.gauss(0, self.noise[worker] / 2))


# ---- The baseline refit store (child) ----------------------------------------------------


def refit_store_bulk_update(topic, ratings: dict, votes: list[tuple[int, int]]):
    """`ranking.pipeline._refit_store` before issue 17: μ, σ and counts by Django's bulk_update,
    then the ranks of every real proposition, loaded and sorted in Python (the export's order
    then), by bulk_update again (a CASE WHEN per row, in batches of 1,000); then the pipeline's
    own snapshot (`refit_snapshot_create`), which did not change."""
    from annotation.models import Proposition
    from ranking.models import PropositionScore
    from ranking.pipeline import comparisons_per_item, refit_snapshot_create

    per_item = comparisons_per_item(votes)
    scores = list(PropositionScore.objects.filter(proposition_id__in=list(ratings)))
    for score in scores:
        score.mu, score.sigma = ratings[score.proposition_id].mu, ratings[score.proposition_id].sigma
        score.comparisons = per_item.get(score.proposition_id, 0)
    PropositionScore.objects.bulk_update(scores, ["mu", "sigma", "comparisons"], batch_size=1000)

    def key(proposition):
        score = getattr(proposition, "score", None)
        if score is not None and score.in_comparisons and score.mu is not None:
            return (0, -score.mu, score.sigma or 0.0, proposition.pk)
        likert = score.likert_mean if score is not None and score.likert_mean is not None else float("-inf")
        return (1, -likert, 0.0, proposition.pk)

    real = Proposition.objects.filter(topic=topic, trap_kind=Proposition.TrapKind.NONE).select_related("score")
    ranks = {proposition.pk: rank for rank, proposition in enumerate(sorted(real, key=key), start=1)}
    scores = list(PropositionScore.objects.filter(proposition_id__in=list(ranks)))
    for score in scores:
        score.rank = ranks[score.proposition_id]
    PropositionScore.objects.bulk_update(scores, ["rank"], batch_size=1000)
    return refit_snapshot_create(topic, ratings, votes)


def refit_compared(original: Callable, checks: dict) -> Callable:
    """Ours, preceded on the first STORE_SAMPLES refits by the baseline in a savepoint rolled
    back (so both start from the same rows, and its time stays out of the step's); what the two
    store (μ, σ, counts, ranks, the snapshot) is compared."""
    from django.db import transaction

    from ranking.models import PropositionScore

    def stored(topic, snapshot) -> tuple:
        scores = PropositionScore.objects.filter(proposition__topic=topic)
        fields = ("number", "comparisons_used", "spearman_previous", "entered_top", "left_top", "ranking")
        return (
            sorted(scores.values_list("proposition_id", "mu", "sigma", "comparisons", "rank")),
            [getattr(snapshot, name) for name in fields],
        )

    def wrapper(topic, ratings, votes):
        sample = checks["compared"] < STORE_SAMPLES
        if sample:
            with metered("refit_store_bulk_update", aside=True), transaction.atomic():
                expected = stored(topic, refit_store_bulk_update(topic, ratings, votes))
                transaction.set_rollback(True)
        with metered("refit_store"):
            snapshot = original(topic, ratings, votes)
        if sample:
            checks["compared"] += 1
            checks["identical"] += stored(topic, snapshot) == expected
        return snapshot

    return wrapper


# ---- The run (child) ----------------------------------------------------------------------


def qc_per_step_pass(campaign_id: int, publish: Callable) -> None:
    """The loop before issue 17: every ready topic's step ran the campaign's QC itself."""
    from annotation.models import Topic
    from ranking import workflow

    waiting = Topic.objects.filter(campaign_id=campaign_id, state__in=workflow.WAITING).order_by("key")
    for topic_id in waiting.values_list("pk", flat=True):
        if workflow.topic_ready(topic_id=topic_id):
            workflow.topic_step(topic_id=topic_id, publish=publish)


def child(args: argparse.Namespace) -> dict:
    """One size, on the empty database DATABASE_URL names."""
    from tests.services import free_port

    os.environ["SITE_URL"] = f"http://127.0.0.1:{free_port()}"  # the local MTurk endpoint, served below
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    warnings.filterwarnings("ignore", "No directory at", UserWarning)  # no collectstatic here
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    connection.execute_wrappers.append(QUERIES)
    checks = instrument(args.mode)
    started = time.perf_counter()
    campaign, imported = campaign_import(args.child, args.propositions)
    counts = pipeline_run(campaign, args.child, args.mode)
    result = {
        "topics": args.child,
        "mode": args.mode,
        "propositions": imported,
        "counts": counts,
        "votes": _count("comparison"),
        "likert_labels": _count("likertlabel"),
        "refits_compared": checks,
        "meters": {f"{stage}:{name}": totals(stage, name) for stage, name in METERS},
        "pipeline_seconds": time.perf_counter() - started,
    }
    if args.mode == "ours" and args.child in args.pages:
        result["pages"] = pages_measure(campaign, args.requests)
    return result


def instrument(mode: str) -> dict:
    """Meter the pipeline's parts; in our mode, run the baseline refit store beside ours."""
    from ranking import pipeline, workflow

    for module, attribute, name in (
        (workflow, "campaign_quality_refresh", "qc"),
        (workflow, "topic_advance", "step"),
        (pipeline, "_likert_scores_store", "likert_scores_store"),
        (pipeline, "_ranks_store", "ranks_store"),
    ):
        meter(module, attribute, name)
    checks = {"compared": 0, "identical": 0}
    if mode == "ours":
        pipeline._refit_store = refit_compared(pipeline._refit_store, checks)
    else:
        meter(pipeline, "_refit_store", "refit_store")
    return checks


def campaign_import(topics: int, per_topic: int):
    """The paper's campaign (MTurk, local endpoint), its propositions imported; (campaign, kept)."""
    from django.contrib.auth import get_user_model

    from annotation.campaigns import campaign_create
    from annotation.importing.importers import propositions_import
    from annotation.models import Campaign

    owner = get_user_model().objects.create_user("owner", password="owner-password")
    campaign = campaign_create(
        slug="scale",
        name="Scale benchmark",
        owner=owner,
        status=Campaign.Status.ACTIVE,
        channel=Campaign.Channel.MTURK,
        environment=Campaign.Environment.LOCAL,
        budget_cap=99_999_999,
    )
    with tempfile.TemporaryDirectory(prefix="salience-scale-") as directory:
        path, topics_path = propositions_file(Path(directory), topics, per_topic)
        STAGE["now"] = "import"
        with path.open("rb") as source, topics_path.open("rb") as topics_source, metered("import"):
            summary = propositions_import(
                campaign=campaign,
                source=source,
                filename=path.name,
                topics_source=topics_source,
                topics_filename=topics_path.name,
                min_confidence=0.0,
            )
    log(f"  imported {summary.kept:,} propositions in {METERS[('import', 'import')][0][0]:.1f} s")
    return campaign, summary.kept


def pipeline_run(campaign, topics: int, mode: str) -> dict:
    """Likert batches built and published, then passes of the loop, the crowd answering every
    open batch before each, until every topic is done."""
    from django.db import connection

    from annotation.batching import likert_tasks_build
    from annotation.models import Batch, Task, Topic
    from ranking import pipeline, workflow

    STAGE["now"] = "publish"
    for topic in Topic.objects.filter(campaign=campaign).order_by("key"):
        with metered("likert_publish"):
            batch = likert_tasks_build(topic=topic, seed=topic.pk)
            batch_publish_in_bulk(batch.pk, False)
            pipeline.topic_start(topic_id=topic.pk)
    crowd = Crowd(workers=WORKERS_PER_TOPIC * topics)
    crowd.learn_truth()
    counts = {"likert_tasks": Task.objects.filter(kind=Batch.Kind.LIKERT).count(), "assignments": 0, "labels": 0}
    counts["passes"] = 0

    def answer(kind: str) -> None:
        STAGE["now"] = "answers"
        open_batches = Batch.objects.filter(topic__campaign=campaign, kind=kind, status=Batch.Status.PUBLISHED)
        with metered("answers"):
            made = crowd.answer(list(open_batches.values_list("pk", flat=True)))
        counts["assignments"] += made[0]
        counts["labels"] += made[1]

    def one_pass(stage: str) -> None:
        STAGE["now"] = stage
        counts["passes"] += 1
        with metered("pass"):
            if mode == "ours":
                workflow.loop_run(publish=batch_publish_in_bulk)
            else:
                qc_per_step_pass(campaign.pk, batch_publish_in_bulk)

    answer(Batch.Kind.LIKERT)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    log(f"  Likert answers: {counts['labels']:,} labels in {METERS[('answers', 'answers')][0][0]:.1f} s")
    one_pass("likert")
    log(f"  Likert round's pass: {METERS[('likert', 'pass')][0][0]:.1f} s")
    while Topic.objects.filter(campaign=campaign).exclude(state=Topic.State.DONE).exists():
        if counts["passes"] > MAX_PASSES:
            raise SystemExit(f"the topics did not finish within {MAX_PASSES} passes")
        answer(Batch.Kind.COMPARISON)
        one_pass("comparison")
    log(f"  comparison rounds: {counts['passes'] - 1} passes, {totals('comparison', 'step')['calls']} steps")
    return counts


def _count(model: str) -> int:
    from django.apps import apps

    return apps.get_model("crowd", model).objects.count()


def local_endpoint_serve() -> None:
    """Serve this project (its local MTurk endpoint, for the campaign page's balance call) on
    SITE_URL's port, from a thread of this process."""
    import threading
    from socketserver import ThreadingMixIn
    from urllib.parse import urlsplit
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    from django.conf import settings
    from django.core.wsgi import get_wsgi_application

    class Server(ThreadingMixIn, WSGIServer):
        daemon_threads = True

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args) -> None:
            pass

    port = urlsplit(settings.SITE_URL).port
    server = make_server("127.0.0.1", port, get_wsgi_application(), server_class=Server, handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def pages_measure(campaign, requests: int) -> dict:
    """p50 and p95 (ms) and queries of each page, requests interleaved."""
    from django.db import close_old_connections
    from django.test import Client
    from django.test.utils import setup_test_environment

    local_endpoint_serve()
    setup_test_environment(debug=False)
    client = Client()
    client.force_login(campaign.owner)
    topic = campaign.topics.order_by("key").first()
    urls = dict(
        zip(
            PAGES,
            (
                f"/campaigns/{campaign.slug}/",
                f"/campaigns/{campaign.slug}/quality/",
                f"/campaigns/{campaign.slug}/topics/{topic.key}/ranking/",
                f"/api/campaigns/{campaign.slug}/batches/",
                f"/api/campaigns/{campaign.slug}/hits/",
                f"/api/campaigns/{campaign.slug}/workers/",
            ),
            strict=True,
        )
    )
    samples: dict[str, list[tuple[float, int]]] = {name: [] for name in urls}
    for round_number in range(requests + 1):
        for name, url in urls.items():
            queries, started = QUERIES.count, time.perf_counter()
            close_old_connections()
            response = client.get(url)
            close_old_connections()
            elapsed, queries = time.perf_counter() - started, QUERIES.count - queries
            if response.status_code != 200:
                raise SystemExit(f"{url}: {response.status_code} {response.content[:300]!r}")
            if round_number:  # the first round warms up
                samples[name].append((elapsed, queries))
    return {
        name: {
            "p50_ms": 1000 * statistics.median(row[0] for row in rows),
            "p95_ms": 1000 * _p95([row[0] for row in rows]),
            "queries": max(row[1] for row in rows),
        }
        for name, rows in samples.items()
    }


# ---- Parent: run the sizes, print the comparison ------------------------------------------


def run_child(server_url: str, name: str, topics: int, mode: str, args: argparse.Namespace) -> dict:
    from tests.services import fresh_database

    env = dict(os.environ, DATABASE_URL=fresh_database(server_url, name), DEBUG="False")
    env.pop("CELERY_BROKER_URL", None)
    command = [sys.executable, __file__, "--child", str(topics), "--mode", mode]
    command += ["--propositions", str(args.propositions), "--requests", str(args.requests)]
    command += ["--pages", ",".join(map(str, args.pages))]
    log(f"{topics} topics, {mode}:")
    started = time.perf_counter()
    output = subprocess.run(command, env=env, check=True, stdout=subprocess.PIPE, text=True, cwd=ROOT).stdout
    result = json.loads(output.strip().splitlines()[-1])
    result["wall_seconds"] = time.perf_counter() - started
    log(f"  done in {result['wall_seconds']:.0f} s")
    database_drop(server_url, name)
    return result


def database_drop(server_url: str, name: str) -> None:
    import psycopg2

    connection = psycopg2.connect(f"{server_url.rsplit('/', 1)[0]}/postgres")
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
    connection.close()


def slope(sizes: list[int], values: list[float | None]) -> dict:
    """Log-log slopes between consecutive sizes, and the least-squares slope over all."""
    points = [(math.log(n), math.log(v)) for n, v in zip(sizes, values, strict=True) if v]
    steps = [round((b[1] - a[1]) / (b[0] - a[0]), 2) for a, b in itertools.pairwise(points)]
    if len(points) < 2:
        return {"steps": steps, "fit": None}
    mean_x = statistics.fmean(x for x, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    fit = sum((x - mean_x) * (y - mean_y) for x, y in points) / sum((x - mean_x) ** 2 for x, _ in points)
    return {"steps": steps, "fit": round(fit, 2)}


def stage_figures(result: dict) -> dict:
    """Per stage: seconds and queries (refit store: per step, ms)."""
    meters = result["meters"]

    def get(key: str) -> dict:
        return meters.get(key) or {"calls": 0, "seconds": 0.0, "queries": 0, "mean_ms": None, "p95_ms": None}

    qc = [get(f"{stage}:qc") for stage in ("likert", "comparison")]
    passes = [get(f"{stage}:pass") for stage in ("likert", "comparison")]
    steps = get("comparison:step")
    comparison_qc = get("comparison:qc")
    return {
        "import": {"seconds": get("import:import")["seconds"], "queries": get("import:import")["queries"]},
        "likert": {"seconds": get("likert:step")["seconds"], "queries": get("likert:step")["queries"]},
        "qc": {
            "seconds": sum(row["seconds"] for row in qc),
            "queries": sum(row["queries"] for row in qc),
            "calls": sum(row["calls"] for row in qc),
            "comparison_seconds": comparison_qc["seconds"],
            "comparison_calls": comparison_qc["calls"],
        },
        "comparison": {
            # QC is not part of a step in either mode (topic_step runs it before topic_advance).
            "seconds": steps["seconds"],
            "queries": steps["queries"],
            "steps": steps["calls"],
            "per_step_ms": steps["mean_ms"],
            "per_step_queries": steps.get("queries_per_call"),
            "work_seconds": steps["seconds"] + comparison_qc["seconds"],
        },
        "passes": {
            "seconds": sum(row["seconds"] for row in passes),
            "queries": sum(row["queries"] for row in passes),
            "calls": sum(row["calls"] for row in passes),
        },
        "refit_store": {
            "mean_ms": get("comparison:refit_store")["mean_ms"],
            "p95_ms": get("comparison:refit_store")["p95_ms"],
            "queries": get("comparison:refit_store").get("queries_per_call"),
            "ranks_mean_ms": get("comparison:ranks_store")["mean_ms"],
            "ranks_queries": get("comparison:ranks_store").get("queries_per_call"),
            "bulk_update_mean_ms": get("comparison:refit_store_bulk_update")["mean_ms"],
            "bulk_update_p95_ms": get("comparison:refit_store_bulk_update")["p95_ms"],
            "bulk_update_queries": get("comparison:refit_store_bulk_update").get("queries_per_call"),
            "likert_scores_mean_ms": get("likert:likert_scores_store")["mean_ms"],
            "likert_scores_queries": get("likert:likert_scores_store").get("queries_per_call"),
            "compared": result["refits_compared"],
        },
    }


def report(results: list[dict], baselines: list[dict], args: argparse.Namespace) -> dict:
    sizes = [r["topics"] for r in results]
    figures = {r["topics"]: stage_figures(r) for r in results}
    base = {r["topics"]: stage_figures(r) for r in baselines}
    print()
    for r in results:
        c = r["counts"]
        print(
            f"{r['topics']:>3} topics: {r['propositions']:,} propositions, {c['likert_tasks']:,} Likert tasks, "
            f"{r['likert_labels']:,} Likert labels, {figures[r['topics']]['comparison']['steps']} comparison steps, "
            f"{r['votes']:,} votes, {c['passes']} passes; child {r['wall_seconds']:.0f} s"
        )
    head = "".join(f"{f'{n} topics':>22}" for n in sizes)
    print(f"\n{'stage (ours)':<26}{head}   exponent (steps; fit)")
    rows = (
        ("import", "import", "seconds", "queries"),
        ("likert stage", "likert", "seconds", "queries"),
        ("QC (every call)", "qc", "seconds", "queries"),
        ("comparison steps", "comparison", "seconds", "queries"),
        ("comparison work (+QC)", "comparison", "work_seconds", None),
        ("loop passes (everything)", "passes", "seconds", "queries"),
    )
    exponents = {}
    for label, stage, key, queries in rows:
        values = [figures[n][stage][key] for n in sizes]
        cells = "".join(
            f"{value:>10.2f} s{'' if queries is None else f' {figures[n][stage][queries]:>7,}q':>10}"
            for n, value in zip(sizes, values, strict=True)
        )
        exponents[f"{stage}:{key}"] = slope(sizes, values)
        print(f"{label:<26}{cells}   {_exponent(exponents[f'{stage}:{key}'])}")
    values = [figures[n]["comparison"]["per_step_ms"] for n in sizes]
    exponents["comparison:per_step_ms"] = slope(sizes, values)
    cells = "".join(
        f"{_ms(v):>12}{_queries(figures[n]['comparison']['per_step_queries']):>10}"
        for n, v in zip(sizes, values, strict=True)
    )
    print(f"{'comparison step (mean)':<26}{cells}   {_exponent(exponents['comparison:per_step_ms'])}")
    store = {n: figures[n]["refit_store"] for n in sizes}
    for label, key, queries in (
        ("refit store/step, ours", "mean_ms", "queries"),
        ("  of which ranks store", "ranks_mean_ms", "ranks_queries"),
        ("  baseline: bulk_update", "bulk_update_mean_ms", "bulk_update_queries"),
        ("likert scores store/topic", "likert_scores_mean_ms", "likert_scores_queries"),
    ):
        values = [store[n][key] for n in sizes]
        cells = "".join(f"{_ms(v):>12}{_queries(store[n][queries]):>10}" for n, v in zip(sizes, values, strict=True))
        exponents[f"refit_store:{key}"] = slope(sizes, values)
        print(f"{label:<26}{cells}   {_exponent(exponents[f'refit_store:{key}'])}")
    compared = {n: store[n]["compared"] for n in sizes}
    print(
        "refit store (mean per step; target <= 50 ms): ours = UPDATE ... FROM (VALUES) for mu, sigma, counts and "
        "one UPDATE numbering ranks with ROW_NUMBER(); baseline = the old Django bulk_update of both, run first on "
        "the same refit in a savepoint rolled back. Stored mu, sigma, counts, ranks and snapshot identical in "
        + ", ".join(f"{c['identical']}/{c['compared']} refits at {n} topics" for n, c in compared.items())
    )
    if base:
        print("\nQC in the comparison stage: ours (once per campaign per pass) vs baseline (inside every topic's step)")
        base_sizes = sorted(base)
        for n in base_sizes:
            ours, old = figures[n], base[n]
            steps = ours["comparison"]["steps"]
            print(
                f"{n:>3} topics: ours {ours['qc']['comparison_seconds']:7.1f} s in {ours['qc']['comparison_calls']:>3} "
                f"runs ({1000 * ours['qc']['comparison_seconds'] / steps:6.0f} ms a step)   baseline "
                f"{old['qc']['comparison_seconds']:7.1f} s in {old['qc']['comparison_calls']:>3} runs "
                f"({1000 * old['qc']['comparison_seconds'] / old['comparison']['steps']:6.0f} ms a step)   "
                f"steps + QC: ours {ours['comparison']['work_seconds']:6.1f} s, baseline "
                f"{old['comparison']['work_seconds']:6.1f} s"
            )
        for label, table in (("ours", figures), ("baseline", base)):
            exponents[f"{label}:comparison_qc"] = slope(
                base_sizes, [table[n]["qc"]["comparison_seconds"] for n in base_sizes]
            )
            exponents[f"{label}:comparison_work"] = slope(
                base_sizes, [table[n]["comparison"]["work_seconds"] for n in base_sizes]
            )
            print(
                f"exponent of comparison-stage QC, {label}: {_exponent(exponents[f'{label}:comparison_qc'])}; "
                f"of comparison-stage work: {_exponent(exponents[f'{label}:comparison_work'])} (target <= 1.1)"
            )
    paged = [n for n in sizes if "pages" in next(r for r in results if r["topics"] == n)]
    if paged:
        print(f"\n{'page (p50 / p95 ms, queries)':<26}" + "".join(f"{f'{n} topics':>24}" for n in paged))
        pages = {r["topics"]: r["pages"] for r in results if "pages" in r}
        for name in PAGES:
            cells = "".join(
                f"{pages[n][name]['p50_ms']:>9.0f} /{pages[n][name]['p95_ms']:>6.0f} {pages[n][name]['queries']:>5}q"
                for n in paged
            )
            print(f"{name:<26}{cells}")
        print(f"({args.requests} requests each after one warm-up, interleaved; target p95 <= 300 ms at 30 topics)")
    return {"sizes": sizes, "stages": figures, "baseline": base, "exponents": exponents, "runs": results + baselines}


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def _queries(value: list[int] | None) -> str:
    if not value:
        return ""
    return f"{value[0]}q" if value[0] == value[1] else f"{value[0]}-{value[1]}q"


def _exponent(figure: dict) -> str:
    fit = "-" if figure["fit"] is None else f"{figure['fit']:.2f}"
    return f"{', '.join(f'{step:.2f}' for step in figure['steps']) or '-'}; {fit}"


def sizes_parse(text: str) -> list[int]:
    return sorted({int(part) for part in text.split(",") if part.strip()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=sizes_parse, default=list(DEFAULT_TOPICS))
    parser.add_argument("--big", action="store_true", help=f"add {BIG_TOPICS} topics (import and pipeline)")
    parser.add_argument("--baseline-topics", type=sizes_parse, default=[3, 10], help="sizes run the old way too")
    parser.add_argument("--pages", type=sizes_parse, default=list(DEFAULT_TOPICS), help="sizes whose pages are timed")
    parser.add_argument("--requests", type=int, default=10)
    parser.add_argument("--propositions", type=int, default=PROPOSITIONS, help="per topic")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="ours", choices=("ours", "baseline"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return
    from tests.services import postgres

    sizes = sorted(set(args.topics) | ({BIG_TOPICS} if args.big else set()))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="salience-bench-") as workdir:
        pg_dir = Path(workdir) / "pg"
        pg_dir.mkdir(parents=True)
        os.chmod(workdir, 0o755)
        with postgres(pg_dir) as server_url:
            log(
                f"Scale benchmark on {server_version(server_url)}; {os.cpu_count()} CPUs, load average "
                f"{os.getloadavg()[0]:.2f}"
            )
            results = [run_child(server_url, f"scale_{n}", n, "ours", args) for n in sizes]
            baselines = [
                run_child(server_url, f"scale_{n}_baseline", n, "baseline", args)
                for n in sizes
                if n in args.baseline_topics
            ]
    figures = report(results, baselines, args)
    figures["machine"] = {"cpus": os.cpu_count(), "load_after": os.getloadavg()[0]}
    figures["seconds"] = time.perf_counter() - started
    print(
        f"\nwhole run {figures['seconds']:.0f} s; machine {os.cpu_count()} CPUs shared, load average now "
        f"{os.getloadavg()[0]:.2f}: figures are noisy"
    )
    print(json.dumps(figures, sort_keys=True))


def server_version(server_url: str) -> str:
    import psycopg2

    connection = psycopg2.connect(server_url)
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        version = cursor.fetchone()[0].split(" on ")[0]
    connection.close()
    return version


if __name__ == "__main__":
    main()
