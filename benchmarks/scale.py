"""Scale benchmark (issues 17 and 26): the pipeline at 3, 10 and 30 topics × 1,750 propositions on
PostgreSQL (300 topics with --big), with time, queries and growth in topics per stage.

    .venv/bin/python benchmarks/scale.py [--topics 3,10,30] [--big] [--pages 3,10,30] [--requests 10]
                                         [--real-topics 1] [--waves 3]

Each size runs in a fresh child process on a fresh database of one PostgreSQL started on
loopback by the test tooling (tests/services.py), Celery eager, DEBUG off, the local MTurk
endpoint served from a thread of the child. The data is built the way a campaign gets it: the
propositions through the project's importer, the Likert batch of each topic by
`annotation.batching`, every pipeline step by the project's loop (`ranking.workflow.loop_run`:
sync, QC once per campaign, `topic_advance` per ready topic), run as beat runs it: the crowd
answers each open batch in --waves waves, with a pass of the loop after each wave, then passes
follow until every batch answered has been stepped on (sync verifies, QC runs, approvals go
out, HITs complete, the topic steps), so one round takes several passes.

Sync and publishing run for real on a sample: the first --real-topics topics (1 by default) of
each size are published by `crowd.work.publishing.batch_publish` through the real MTurk client
at the local endpoint over HTTP; their answers are submitted at the endpoint (Submitted, the
answer as MTurk keeps it) and stored at our end by the HIT page's own store (`answer_submit`,
pending), and the loop's own sync verifies, approves (ApproveAssignment per assignment) and
completes them. The other topics go through stand-ins, because at full size the real calls
take hours on 2 shared cores (issue 26: 65 ms a HIT to publish, 0.42 s a HIT to approve): a
published batch records its HITs and commits its cost (`crowd.work.ledger`) in bulk, and its
answers (20 workers per topic, 10 % spammers; five assignments per HIT) are written confirmed
and approved with COPY, the HITs marked complete, as sync leaves them. The output says which.

Stages, each with its time, its queries and its growth exponent in topics (log-log slope
between sizes, and the least-squares fit over all): import; likert (the Likert round's steps:
aggregate, top-k, first comparison batch); QC (`campaign_quality_refresh`, every call);
comparison steps (`topic_advance` of every comparison step, QC not included); the whole loop
passes; refit store (`_refit_store` with `_ranks_store`, per step); sync (every pass's) and
the sample's publishing, per real HIT.

Baselines from the same run. Refit store: the store as it was before issue 17 (Django
`bulk_update` of μ, σ and counts, then the ranks sorted in Python and written by
`bulk_update`, a CASE over every row; its code is kept here, `refit_store_bulk_update`) on the
first 20 refits of each size, in a savepoint rolled back before ours runs on the same rows,
what both store compared. QC: every incremental QC run of the Likert round's passes, summed,
beside one full QC run from every label at the round's end (`campaign_quality_recompute`, in a
savepoint rolled back) — issue 26's target is at most 2×. (An earlier baseline, "QC inside
every topic's step", ran today's incremental QC and so measured nothing old; it is gone.) Last
the researcher's pages and API lists at --pages sizes, timed with Django's test client logged
in as the owner (p50 and p95 over --requests requests each, interleaved, after one warm-up
round), the campaign page's balance call answered by the local endpoint. The last line is
every figure as one JSON object.

How long: on 2 shared cores, the default run ~15-25 minutes (the waves and extra passes cost
more passes per round than the single pass of before; the real sample adds its HTTP calls);
--big adds 300 topics (import and pipeline, no pages).
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
        self.external_ids = {row.pk: row.external_id for row in rows}
        self.spammers = set(self.workers[: int(SPAMMER_SHARE * workers)])
        self.noise = {pk: self.rng.uniform(0.5, 1.0) for pk in self.workers}
        self.truth: dict[int, float] = {}
        self.clock = 0

    def learn_truth(self) -> None:
        from annotation.models import Proposition

        for pk, trap_kind in Proposition.objects.values_list("pk", "trap_kind").iterator(chunk_size=20000):
            if pk not in self.truth:
                self.truth[pk] = -3.0 if trap_kind != Proposition.TrapKind.NONE else self.rng.gauss(0, 1)

    def answer(self, batch_ids: list[int], *, wave: int = 0, waves: int = 1, real: frozenset = frozenset()) -> tuple:
        """Every `waves`-th task of the batches (from the `wave`-th on), five assignments each;
        (assignments, labels). A task of a topic in `real` (published at the local endpoint)
        is answered there (Submitted, `sample_answer`) and stored at our end as our HIT page
        stores it, pending, for the loop's sync to verify, approve and complete; any other
        task's assignments are written confirmed and approved by COPY, its HIT complete."""
        from datetime import timedelta

        from django.db import connection
        from django.utils import timezone

        from annotation.models import Batch, TaskItem
        from crowd.models import HIT, Assignment, Comparison, LikertLabel

        tasks: dict[int, list[int]] = defaultdict(list)
        needed, kinds, topics = {}, {}, {}
        items = TaskItem.objects.filter(task__batch_id__in=batch_ids).order_by("task_id", "position")
        for task, pid, kind, count, topic in items.values_list(
            "task_id", "proposition_id", "task__kind", "task__assignments_needed", "task__batch__topic_id"
        ):
            tasks[task].append(pid)
            needed[task], kinds[task], topics[task] = count, kind, topic
        chosen = sorted(tasks)[wave::waves]
        sampled = [task for task in chosen if topics[task] in real]
        answered = self.sample_answer(sampled, tasks, needed, kinds) if sampled else (0, 0)
        tasks = {task: tasks[task] for task in chosen if topics[task] not in real}
        if not tasks:
            return answered
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
        return len(assignments) + answered[0], len(likert) + len(votes) + answered[1]

    def sample_answer(self, task_ids: list[int], tasks: dict, needed: dict, kinds: dict) -> tuple[int, int]:
        """The tasks' assignments at the local endpoint (Submitted, the answer as MTurk keeps
        it) and at our end through the HIT page's own store (`answer_submit`, pending)."""
        from datetime import timedelta

        from django.db import transaction
        from django.utils import timezone

        from annotation.models import Batch, Task
        from crowd.hit_page.content import hit_content_get
        from crowd.hit_page.store import answer_submit
        from crowd.models import HIT
        from rehearsal.localturk import models as turk
        from rehearsal.localturk.questions import answers_xml
        from rehearsal.localturk.state import hit_refresh

        uuids = dict(Task.objects.filter(pk__in=task_ids).values_list("pk", "uuid"))
        hit_ids = dict(HIT.objects.filter(task_id__in=task_ids).values_list("task_id", "hit_id"))
        remote = {hit.hit_id: hit for hit in turk.HIT.objects.filter(hit_id__in=list(hit_ids.values()))}
        now = timezone.now()
        rows, labels = [], 0
        for task in task_ids:
            content = hit_content_get(uuids[task])
            for worker in self.rng.sample(self.workers, needed[task]):
                self.clock += 1
                external = self.external_ids[worker]
                assignment_id = f"S{task:016d}{self.clock:012d}"
                spammer = worker in self.spammers
                if kinds[task] == Batch.Kind.LIKERT:
                    scores = [self.rng.randint(1, 5) if spammer else self._likert(pid, worker) for pid in tasks[task]]
                    fields = [(f"rating-{pid}", str(score)) for pid, score in zip(tasks[task], scores, strict=True)]
                    labels += len(scores)
                else:
                    order = sorted(
                        tasks[task], key=lambda pid, w=worker: self.rng.random() if spammer else self._noisy(pid, w)
                    )
                    fields = [("order", ",".join(map(str, order)))]
                    labels += len(tasks[task]) * (len(tasks[task]) - 1) // 2
                answer_submit(
                    content=content,
                    assignment_id=assignment_id,
                    worker_external_id=external,
                    fields={name: [value] for name, value in fields},
                    accepted_at=now - timedelta(minutes=2),
                    time_on_task_ms=60_000,
                )
                rows.append(
                    turk.Assignment(
                        assignment_id=assignment_id,
                        hit=remote[hit_ids[task]],
                        worker_id=external,
                        status=turk.Assignment.Status.SUBMITTED,
                        accept_time=now - timedelta(minutes=2),
                        deadline=now + timedelta(hours=1),
                        submit_time=now,
                        auto_approval_time=now + timedelta(days=3),
                        answer=answers_xml([("task", str(uuids[task])), *fields]),
                    )
                )
        turk.Assignment.objects.bulk_create(rows)
        # The endpoint's HITs count their slots as MTurk would once the answers are in
        # (Reviewable when every slot is submitted), or DeleteHIT finds them Assignable.
        with transaction.atomic():
            for hit in turk.HIT.objects.select_for_update().filter(pk__in=[hit.pk for hit in remote.values()]):
                hit_refresh(hit=hit, now=now)
        return len(rows), labels

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
    local_endpoint_serve()  # the local MTurk endpoint: the sample's publishing and sync, the pages' balance
    _local_requester_fund()
    connection.execute_wrappers.append(QUERIES)
    checks = instrument()
    started = time.perf_counter()
    campaign, imported = campaign_import(args.child, args.propositions)
    counts = pipeline_run(campaign, args.child, args)
    event_qc = qc_event_measure(campaign.pk)
    result = {
        "event_qc": event_qc,
        "topics": args.child,
        "propositions": imported,
        "counts": counts,
        "votes": _count("comparison"),
        "likert_labels": _count("likertlabel"),
        "refits_compared": checks,
        "waves": args.waves,
        "meters": {f"{stage}:{name}": totals(stage, name) for stage, name in METERS},
        "pipeline_seconds": time.perf_counter() - started,
    }
    if args.child in args.pages:
        result["pages"] = pages_measure(campaign, args.requests)
    return result


def _local_requester_fund() -> None:
    """The local endpoint's requester able to pay for every HIT the sample publishes."""
    from crowd.marketplaces.mturk.client import LOCAL_ACCESS_KEY
    from rehearsal.localturk.models import Requester

    Requester.objects.update_or_create(access_key=LOCAL_ACCESS_KEY, defaults={"balance": 10**11})


def instrument() -> dict:
    """Meter the pipeline's parts (sync included) and run the baseline refit store beside ours."""
    from ranking import pipeline, workflow

    for module, attribute, name in (
        (workflow, "campaign_quality_refresh", "qc"),
        (workflow, "topic_advance", "step"),
        (workflow, "channels_sync_report", "sync"),
        (pipeline, "_likert_scores_store", "likert_scores_store"),
        (pipeline, "_ranks_store", "ranks_store"),
    ):
        meter(module, attribute, name)
    checks = {"compared": 0, "identical": 0}
    pipeline._refit_store = refit_compared(pipeline._refit_store, checks)
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


def pipeline_run(campaign, topics: int, args: argparse.Namespace) -> dict:
    """Likert batches built and published, then rounds as a deployment runs them: the crowd
    answers each open batch in `args.waves` waves with a pass of the loop after each (as beat
    runs while answers come in), then passes until every batch answered has been stepped on.
    The first `args.real_topics` topics go through the marketplace for real (`real_publish`):
    published by `batch_publish` at the local MTurk endpoint over HTTP, answered there, synced
    by the loop's own sync; the others through the bulk stand-in."""
    from django.db import connection

    from annotation.batching import likert_tasks_build
    from annotation.models import Batch, Task, Topic
    from crowd.work.publishing import batch_publish
    from ranking import pipeline, workflow

    ordered = Topic.objects.filter(campaign=campaign).order_by("key")
    real = frozenset(ordered.values_list("pk", flat=True)[: args.real_topics])

    def publish(batch_id: int, live: bool) -> None:
        if Batch.objects.filter(pk=batch_id, topic_id__in=real).exists():
            with metered("publish_real"):
                batch_publish(batch_id=batch_id, live=live)
        else:
            batch_publish_in_bulk(batch_id, live)

    STAGE["now"] = "publish"
    for topic in ordered:
        with metered("likert_publish"):
            batch = likert_tasks_build(topic=topic, seed=topic.pk)
            publish(batch.pk, False)
            pipeline.topic_start(topic_id=topic.pk)
    crowd = Crowd(workers=WORKERS_PER_TOPIC * topics)
    crowd.learn_truth()
    counts = {"likert_tasks": Task.objects.filter(kind=Batch.Kind.LIKERT).count(), "assignments": 0, "labels": 0}
    counts |= {"passes": 0, "real_topics": len(real), "real_hits": 0, "rounds": 0}

    def one_pass(stage: str) -> None:
        STAGE["now"] = stage
        counts["passes"] += 1
        if counts["passes"] > args.max_passes:
            raise SystemExit(f"the topics did not finish within {args.max_passes} passes")
        with metered("pass"):
            workflow.loop_run(publish=publish)

    def round_run(kind: str, stage: str) -> None:
        """The crowd answers the open batches of `kind` in waves, a pass after each; then
        passes until each of those batches has been stepped on (sync, QC, approvals)."""
        counts["rounds"] += 1
        open_batches = Batch.objects.filter(topic__campaign=campaign, kind=kind, status=Batch.Status.PUBLISHED)
        batch_ids = list(open_batches.values_list("pk", flat=True))
        counts["real_hits"] += Task.objects.filter(batch_id__in=batch_ids, batch__topic_id__in=real).count()
        for wave in range(args.waves):
            STAGE["now"] = "answers"
            with metered("answers"):
                made = crowd.answer(batch_ids, wave=wave, waves=args.waves, real=real)
            counts["assignments"] += made[0]
            counts["labels"] += made[1]
            if wave == 0 and kind == Batch.Kind.LIKERT:
                with connection.cursor() as cursor:
                    cursor.execute("ANALYZE")
            one_pass(stage)
        while Batch.objects.filter(pk__in=batch_ids, status=Batch.Status.PUBLISHED).exists():
            one_pass(stage)

    round_run(Batch.Kind.LIKERT, "likert")
    log(
        f"  Likert round: {counts['labels']:,} labels, {counts['passes']} passes, "
        f"{totals('likert', 'pass')['seconds']:.1f} s in passes"
    )
    counts["likert_passes"] = counts["passes"]
    counts["qc_full_seconds"] = qc_full_once(campaign.pk)
    while Topic.objects.filter(campaign=campaign).exclude(state=Topic.State.DONE).exists():
        round_run(Batch.Kind.COMPARISON, "comparison")
    log(
        f"  comparison rounds: {counts['passes'] - counts['likert_passes']} passes, {totals('comparison', 'step')['calls']} steps"
    )
    return counts


def qc_full_once(campaign_id: int) -> float:
    """The QC baseline: one full QC run from every label (`campaign_quality_recompute`, what
    the incremental runs must equal) at the Likert round's end, its seconds; in a savepoint
    rolled back, so the runs after it start from what the loop left."""
    from django.db import transaction

    from crowd.qc.worker_quality import campaign_quality_recompute

    started = time.perf_counter()
    with transaction.atomic():
        campaign_quality_recompute(campaign_id=campaign_id)
        transaction.set_rollback(True)
    return time.perf_counter() - started


def qc_event_measure(campaign_id: int, repeats: int = 3) -> dict:
    """The QC an event's step waits for (ranking.workflow._request_take: the workers' figures
    and exclusions, the report's statistics left to the pass, the Likert part kept), with
    every vote of the campaign in, run as an event meets it: one topic's votes changed (its
    stored sums dropped: crowd.qc.vote_part reads that topic's votes) and, the baseline, every
    topic's (every stored sum dropped: every vote read, as each event did before the sums were
    kept). `repeats` runs each in savepoints rolled back, interleaved: the median's wall and CPU
    seconds and queries."""
    from django.db import transaction

    from annotation.models import Topic
    from crowd.models import TopicVotes
    from crowd.qc.worker_quality import campaign_quality_refresh

    topic = Topic.objects.filter(campaign_id=campaign_id).order_by("key").values_list("pk", flat=True).first()
    cases = {"one_topic": TopicVotes.objects.filter(topic_id=topic), "every_topic": TopicVotes.objects.all()}
    runs: dict[str, list[tuple[float, float, int]]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, dropped in cases.items():
            with transaction.atomic():
                dropped.delete()
                queries, started, cpu = QUERIES.count, time.perf_counter(), time.process_time()
                campaign_quality_refresh(campaign_id=campaign_id, likert_current=False, statistics=False)
                runs[name].append((time.perf_counter() - started, time.process_time() - cpu, QUERIES.count - queries))
                transaction.set_rollback(True)
    figures = {}
    for name, measured in runs.items():
        seconds, cpu_seconds, queries = sorted(measured)[len(measured) // 2]
        figures[name] = {"seconds": seconds, "cpu_seconds": cpu_seconds, "queries": queries}
    return figures


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
    # The first request imports the site's views: on a busy machine longer than the MTurk
    # client's 5 s read timeout, so it is made here, with time to spare.
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(f"{settings.SITE_URL}/localturk/", timeout=120).close()
    except urllib.error.HTTPError:
        pass  # any answer will do: the endpoint wants a signed POST


def pages_measure(campaign, requests: int) -> dict:
    """p50 and p95 (ms) and queries of each page, requests interleaved."""
    from django.db import close_old_connections
    from django.test import Client
    from django.test.utils import setup_test_environment

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


def run_child(server_url: str, name: str, topics: int, args: argparse.Namespace) -> dict:
    from tests.services import fresh_database

    env = dict(os.environ, DATABASE_URL=fresh_database(server_url, name), DEBUG="False")
    env.pop("CELERY_BROKER_URL", None)
    command = [sys.executable, __file__, "--child", str(topics), "--propositions", str(args.propositions)]
    command += ["--requests", str(args.requests), "--waves", str(args.waves), "--real-topics", str(args.real_topics)]
    command += ["--max-passes", str(args.max_passes)]
    command += ["--pages", ",".join(map(str, args.pages))]
    log(f"{topics} topics:")
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
            # QC is not part of a step (the loop runs it once per campaign and pass, before the steps).
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


def report(results: list[dict], args: argparse.Namespace) -> dict:
    sizes = [r["topics"] for r in results]
    figures = {r["topics"]: stage_figures(r) for r in results}
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
    print(
        "\nQC over the Likert round (every incremental run of its passes) vs the baseline, one full QC run from "
        "every label at the round's end (campaign_quality_recompute, same run; target: at most 2x)"
    )
    for r in results:
        n, likert_qc = r["topics"], r["meters"].get("likert:qc") or {"seconds": 0.0, "calls": 0}
        full = r["counts"]["qc_full_seconds"]
        print(
            f"{n:>3} topics: {likert_qc['seconds']:7.1f} s in {likert_qc['calls']:>3} runs vs one full run "
            f"{full:6.1f} s: {likert_qc['seconds'] / full if full else float('nan'):.2f}x"
        )
    print(
        "\nQC an event's step waits for (campaign_quality_refresh without the report's statistics, the Likert "
        "part kept), every vote of the campaign in: ours, one topic's votes changed since its sums were stored "
        "(crowd.qc.vote_part reads that topic's); baseline, every topic's votes read, as each event did before the "
        "sums were kept; median of 3 runs each, interleaved, beside the mean comparison step"
    )
    for r in results:
        n, qc, step = r["topics"], r["event_qc"], figures[r["topics"]]["comparison"]["per_step_ms"]
        one, every = qc["one_topic"], qc["every_topic"]
        print(
            f"{n:>3} topics: {1000 * one['seconds']:7.1f} ms ({1000 * one['cpu_seconds']:.1f} ms CPU, "
            f"{one['queries']} queries) vs every topic's {1000 * every['seconds']:.1f} ms "
            f"({1000 * every['cpu_seconds']:.1f} ms CPU) for {r['votes']:,} votes; a comparison step {_ms(step)}"
        )
    for name in ("one_topic", "every_topic"):
        exponents[f"event_qc:{name}"] = slope(sizes, [r["event_qc"][name]["seconds"] for r in results])
        print(
            f"event QC growth in topics, {name.replace('_', ' ')} (steps; fit): {_exponent(exponents[f'event_qc:{name}'])}"
        )
    print(
        "\nsync and publishing for real (local MTurk endpoint over HTTP, the loop's own sync and batch_publish), "
        "a sample: the first --real-topics topics of each size; the other topics' HITs are recorded in bulk and "
        "their answers written approved and complete (at full size the real calls take hours here: issue 26)"
    )
    for r in results:
        c, m = r["counts"], r["meters"]
        sync = [m.get(f"{stage}:sync") or {"seconds": 0.0, "calls": 0} for stage in ("likert", "comparison")]
        published = [
            m.get(f"{stage}:publish_real") or {"seconds": 0.0, "calls": 0} for stage in ("publish", "comparison")
        ]
        hits = max(c["real_hits"], 1)
        print(
            f"{r['topics']:>3} topics: {c['real_topics']} topic(s) real, {c['real_hits']:,} HITs; publishing "
            f"{sum(p['seconds'] for p in published):.1f} s ({1000 * sum(p['seconds'] for p in published) / hits:.0f} "
            f"ms a HIT); sync {sum(x['seconds'] for x in sync):.1f} s over {sum(x['calls'] for x in sync)} passes "
            f"({1000 * sum(x['seconds'] for x in sync) / hits:.0f} ms a real HIT, the stand-ins' HITs complete "
            f"already); {c['rounds']} rounds, {c['passes']} passes ({c['likert_passes']} in the Likert round, "
            f"{r.get('waves', '?')} waves of answers per round)"
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
    return {"sizes": sizes, "stages": figures, "exponents": exponents, "runs": results}


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
    parser.add_argument("--real-topics", type=int, default=1, help="topics published and synced for real, per size")
    parser.add_argument("--waves", type=int, default=3, help="waves of answers per round, a loop pass after each")
    parser.add_argument("--max-passes", type=int, default=400, help="a size that needs more passes fails")
    parser.add_argument("--pages", type=sizes_parse, default=list(DEFAULT_TOPICS), help="sizes whose pages are timed")
    parser.add_argument("--requests", type=int, default=10)
    parser.add_argument("--propositions", type=int, default=PROPOSITIONS, help="per topic")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
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
            results = [run_child(server_url, f"scale_{n}", n, args) for n in sizes]
    figures = report(results, args)
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
