"""The verify pass of a paper-scale Likert round, against the local MTurk endpoint over HTTP.

    .venv/bin/python benchmarks/sync_bench.py [--hits 10620] [--approve-hits 200] [--workers 0,1,2]

Builds a Likert round as the paper's campaign had it — 30 topics, 10,620 HITs of five
statements, five assignments each (53,100 answers, 265,500 labels) — with every answer
submitted: our HIT pages stored it (pending) and the local MTurk endpoint holds it
(Submitted). Both sides are written in bulk (the crowd itself is not what is measured). The
endpoint is served by gunicorn (2 workers × 4 threads, as the load benchmark), on the same
PostgreSQL (DATABASE_URL when it names a server, as under `make bench`; else a throw-away
one from tests/services.py), with Redis for Celery.

Then, in the same run:

* no same-run baseline: the per-HIT path this replaced (crowd/work/sync.py at b39b37d) imports
  modules that have since moved (issue 23), and run on today's modules it would measure
  today's code, not the old; the figures issue 17 recorded for it are printed as recorded
  (ISSUE_FIGURES), marked so;
* ours, verify pass over every HIT: in this process alone (`--workers 0`), then with a
  Celery worker of 1 and of 2 pool processes taking chunks beside the pass (the pass works
  chunks too, so "1 worker" is two processes at work); the answers are set back to pending
  between runs;
* ours, approval pass on `--approve-hits` HITs (all of them: `--approve-hits 0`), in this process.

Queries are this process's (the whole pass when it works alone); marketplace calls are the
requests the endpoint served (its access log), whoever made them. Two cores are shared by
the pass, the workers, gunicorn and PostgreSQL, so the ratio of 1 to 2 worker processes is
reported as measured. The last line is one JSON object of the figures.
"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from contextlib import ExitStack, contextmanager
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._harness import ROOT, django_setup, postgres_server, workdir_made

# The per-HIT path before issue 17 (b39b37d), as issue 17 measured it: recorded, not re-run.
ISSUE_FIGURES = {"verify": {"queries_per_hit": 22, "seconds_per_hit": 0.084}, "approve": {"queries_per_hit": 60}}
TOPICS = 30
SLOTS = 5
WORKERS = 400  # distinct crowdworkers answering the round
LOCAL_ACCESS_KEY = "SALIENCELOCAL"  # crowd.marketplaces.mturk.client: the local requester


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hits", type=int, default=10_620, help="HITs in the round (the paper: 10,620)")
    parser.add_argument("--approve-hits", type=int, default=200, help="HITs the approval pass runs on (0: all)")
    parser.add_argument("--workers", default="0,1,2", help="Celery pool processes beside the pass, per run")
    return parser.parse_args()


def main() -> int:
    return services_run(arguments(), name="sync", bench=lambda **kw: Bench(**kw))


def services_run(args: argparse.Namespace, *, name: str, bench) -> int:
    """`bench(args=, env=, workdir=, port=).run()` with PostgreSQL (a fresh database
    `salience_<name>_bench`), Redis and the site's address in the environment; stopped
    (Ctrl-C, or SIGTERM when run in the background), the services stop too."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    from tests.services import free_port, fresh_database, redis

    with ExitStack() as stack:
        workdir = stack.enter_context(workdir_made(prefix=f"salience-{name}-bench-"))
        server_url = stack.enter_context(postgres_server(workdir, reuse=True))
        port = free_port()
        env = {
            "DATABASE_URL": fresh_database(server_url, f"salience_{name}_bench"),
            "CELERY_BROKER_URL": stack.enter_context(redis(workdir)),
            "SITE_URL": f"http://127.0.0.1:{port}",
            "MTURK_LOCAL_ENDPOINT_URL": f"http://127.0.0.1:{port}/localturk/",
            "SALIENCE_ENV": "development",
            "DEBUG": "false",
        }
        os.environ.update(env)
        return bench(args=args, env=dict(os.environ), workdir=workdir, port=port).run()


class Bench:
    threads = 4  # per endpoint process

    def __init__(self, *, args: argparse.Namespace, env: dict, workdir: Path, port: int):
        self.args, self.env, self.workdir, self.port = args, env, workdir, port
        self.access_log = workdir / "access.log"
        self.processes: dict[str, int] = {}  # name -> pid of a process tree whose CPU is counted

    def run(self) -> int:
        django_setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        started = time.perf_counter()
        campaign = round_build(hits=self.args.hits)
        print(
            f"built {self.args.hits:,} HITs, {self.args.hits * SLOTS:,} answers in {time.perf_counter() - started:.0f} s"
        )
        figures: dict = {"hits": self.args.hits, "answers": self.args.hits * SLOTS, "machine": machine()}
        with self.endpoint():
            figures["baseline"] = {"source": "issue 17, recorded at b39b37d, not re-run", **ISSUE_FIGURES}
            figures["verify"] = {str(n): self.verify_pass(campaign, workers=n) for n in self.worker_counts()}
            figures["approve"] = self.approval_pass(campaign)
        report(figures)
        print(json.dumps(figures, sort_keys=True))
        return 0

    def worker_counts(self) -> list[int]:
        return [int(n) for n in self.args.workers.split(",")]

    @contextmanager
    def endpoint(self):
        command = [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{self.port}"]
        command += ["--workers", "2", "--worker-class", "gthread", "--threads", str(self.threads), "--timeout", "120"]
        command += ["--access-logfile", str(self.access_log)]
        with open(self.workdir / "gunicorn.log", "wb") as log:
            process = subprocess.Popen(command, env=self.env, cwd=ROOT, stdout=log, stderr=log)
        self.processes["endpoint"] = process.pid
        try:
            from crowd.marketplaces.mturk.client import client_create

            deadline = time.monotonic() + 60
            while True:
                try:
                    client_create("local").get_account_balance()
                    break
                except Exception:
                    if time.monotonic() > deadline or process.poll() is not None:
                        raise SystemExit((self.workdir / "gunicorn.log").read_text()[-3000:]) from None
                    time.sleep(0.3)
            yield
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)

    def calls(self) -> int:
        return self.access_log.read_text().count("/localturk/") if self.access_log.exists() else 0

    def measured(self, function) -> tuple[dict, object]:
        from django.db import connection

        queries = 0

        def counted(execute, sql, params, many, context):
            nonlocal queries
            queries += 1
            return execute(sql, params, many, context)

        calls, cpu = self.calls(), self.cpu()
        with connection.execute_wrapper(counted):
            started = time.perf_counter()
            result = function()
            seconds = time.perf_counter() - started
        time.sleep(0.5)  # the access log's last lines
        used = {name: round(value - cpu.get(name, 0.0), 1) for name, value in self.cpu().items()}
        figures = {"seconds": round(seconds, 2), "queries": queries, "calls": self.calls() - calls, "cpu_seconds": used}
        return figures, result

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far: this process (the pass), the endpoint's and the worker's processes."""
        used = {"pass": time.process_time()}
        for name, pid in self.processes.items():
            used[name] = sum(process_cpu(member) for member in process_tree(pid))
        return used

    # -- the runs

    def verify_pass(self, campaign, *, workers: int) -> dict:
        from crowd.tasks import sync_chunks_dispatch
        from crowd.work.sync import assignments_sync

        answers_reset(campaign)
        pending = pending_count(campaign)
        with self.celery(workers):
            figures, result = self.measured(
                lambda: assignments_sync(dispatch=sync_chunks_dispatch if workers else None)
            )
        per_hit(figures, self.args.hits)
        figures.update(verified=result.verified, hits_visited=result.hits, chunks_shared=result.chunks_shared)
        assert result.verified == pending, (pending, result)
        print(f"verify pass, {workers} worker process(es) beside the pass: {figures}")
        return figures

    def approval_pass(self, campaign) -> dict:
        from crowd.work.sync import assignments_sync

        sample = hit_pks(campaign)[-self.args.approve_hits :] if self.args.approve_hits else hit_pks(campaign)
        qc_ran(campaign)
        figures, result = self.measured(lambda: assignments_sync(hit_ids=sample))
        per_hit(figures, len(sample))
        figures.update(approved=result.approved, completed=result.completed)
        assert result.approved == len(sample) * SLOTS and result.completed == len(sample), result
        print(f"approval pass on {len(sample)} HITs: {figures}")
        return figures

    @contextmanager
    def celery(self, processes: int):
        if not processes:
            yield
            return
        log_path = self.workdir / f"celery-{processes}.log"
        command = [sys.executable, "-m", "celery", "-A", "config", "worker", f"--concurrency={processes}"]
        command += ["--loglevel=INFO", "--without-gossip", "--without-mingle", "--without-heartbeat"]
        with open(log_path, "wb") as log:
            process = subprocess.Popen(command, env=self.env, cwd=ROOT, stdout=log, stderr=log, start_new_session=True)
        self.processes["workers"] = process.pid
        try:
            deadline = time.monotonic() + 60
            while b"ready." not in log_path.read_bytes():
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the Celery worker did not start:\n" + log_path.read_text()[-3000:])
                time.sleep(0.2)
            yield
        finally:
            del self.processes["workers"]
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=60)


def process_tree(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if not children.exists():
        return []
    return [pid, *(member for child in children.read_text().split() for member in process_tree(int(child)))]


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of one process (Linux /proc), 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def per_hit(figures: dict, hits: int) -> None:
    figures["queries_per_hit"] = round(figures["queries"] / hits, 3)
    figures["calls_per_hit"] = round(figures["calls"] / hits, 3)
    figures["seconds_per_hit"] = round(figures["seconds"] / hits, 4)
    figures["cpu_ms_per_hit"] = {name: round(1000 * value / hits, 1) for name, value in figures["cpu_seconds"].items()}


# ---- The round ---------------------------------------------------------------------------------


def round_build(*, hits: int):
    """A campaign with one published Likert batch per topic, `hits` HITs in all, every slot
    answered: pending at our end, Submitted at the endpoint."""
    from django.utils import timezone

    from annotation.batching import likert_tasks_build
    from annotation.models import Campaign, Proposition, Task, Topic
    from annotation.text import normalize_text, proposition_text
    from crowd import models as crowd
    from crowd.marketplaces.mturk.client import external_question
    from crowd.work.publishing import hit_url
    from rehearsal.localturk import models as turk
    from rehearsal.localturk.questions import answers_xml

    campaign = Campaign.objects.create(
        name="Sync bench",
        slug="sync-bench",
        channel=Campaign.Channel.MTURK,
        environment=Campaign.Environment.LOCAL,
        trap_rate=0,
        status=Campaign.Status.ACTIVE,
        budget_cap=Decimal("99999"),
    )
    per_topic = [hits // TOPICS + (1 if index < hits % TOPICS else 0) for index in range(TOPICS)]
    for index, count in enumerate(per_topic):
        topic = Topic.objects.create(campaign=campaign, key=f"topic-{index}", description=f"topic {index}")
        texts = [("Lender", "offers", f"loans to students, variant {index}-{n}") for n in range(count * 5)]
        Proposition.objects.bulk_create(
            Proposition(
                topic=topic, subject=s, relation=r, object=o, normalized=normalize_text(proposition_text(s, r, o))
            )
            for s, r, o in texts
        )
        likert_tasks_build(topic=topic, seed=index)
    now = timezone.now()
    requester, _ = turk.Requester.objects.get_or_create(access_key=LOCAL_ACCESS_KEY)
    hit_type = turk.HITType.objects.create(
        requester=requester,
        fingerprint="sync-bench",
        title=campaign.hit_title,
        description="Rate how important statements are",
        reward=campaign.likert_reward,
        assignment_duration=campaign.assignment_duration_seconds,
        auto_approval_delay=campaign.auto_approval_delay_seconds,
    )
    workers = [f"A{n:013d}" for n in range(WORKERS)]
    ours = {w.external_id: w for w in crowd.Worker.objects.bulk_create(crowd.Worker(external_id=w) for w in workers)}
    tasks = list(Task.objects.filter(batch__topic__campaign=campaign).select_related("batch").order_by("pk"))
    rng = random.Random(17)
    submitted, accepted = now - timedelta(hours=1), now - timedelta(hours=1, minutes=5)
    for start in range(0, len(tasks), 500):
        chunk = tasks[start : start + 500]
        items = {}
        for task_id, proposition_id in (
            Task.objects.filter(pk__in=[t.pk for t in chunk])
            .values_list("pk", "items__proposition_id")
            .order_by("items__position")
        ):
            items.setdefault(task_id, []).append(proposition_id)
        remote_hits = turk.HIT.objects.bulk_create(
            turk.HIT(
                hit_id=f"H{task.pk:029d}",
                requester=requester,
                hit_type=hit_type,
                question=external_question(hit_url(task)),
                external_url=hit_url(task),
                max_assignments=SLOTS,
                created_at=accepted,
                expiration=now + timedelta(days=7),
                status=turk.HIT.Status.REVIEWABLE,
            )
            for task in chunk
        )
        local_hits = crowd.HIT.objects.bulk_create(
            crowd.HIT(
                task=task,
                channel="mturk",
                environment="local",
                hit_id=remote.hit_id,
                hit_type_id=hit_type.type_id,
                max_assignments=SLOTS,
                reward=campaign.likert_reward,
                expires_at=remote.expiration,
            )
            for task, remote in zip(chunk, remote_hits, strict=True)
        )
        remote_rows, our_rows, answers = [], [], []
        for task, remote, local in zip(chunk, remote_hits, local_hits, strict=True):
            first = rng.randrange(WORKERS)
            for slot in range(SLOTS):
                worker = workers[(first + slot) % WORKERS]
                assignment_id = f"B{task.pk:023d}{slot:06d}"
                scores = [rng.randint(1, 5) for _ in items[task.pk]]
                fields = [(f"rating-{pid}", str(score)) for pid, score in zip(items[task.pk], scores, strict=True)]
                remote_rows.append(
                    turk.Assignment(
                        assignment_id=assignment_id,
                        hit=remote,
                        worker_id=worker,
                        status=turk.Assignment.Status.SUBMITTED,
                        accept_time=accepted,
                        deadline=accepted + timedelta(seconds=campaign.assignment_duration_seconds),
                        submit_time=submitted,
                        auto_approval_time=submitted + timedelta(seconds=campaign.auto_approval_delay_seconds),
                        answer=answers_xml([("task", str(task.uuid)), *fields]),
                    )
                )
                our_rows.append(
                    crowd.Assignment(
                        task=task,
                        hit=local,
                        worker=ours[worker],
                        assignment_id=assignment_id,
                        answer={"ratings": [[pid, s] for pid, s in zip(items[task.pk], scores, strict=True)]},
                        accepted_at=accepted,
                        submitted_at=submitted,
                    )
                )
                answers.append(scores)
        turk.Assignment.objects.bulk_create(remote_rows)
        crowd.Assignment.objects.bulk_create(our_rows)
        crowd.LikertLabel.objects.bulk_create(
            crowd.LikertLabel(assignment=row, worker_id=row.worker_id, proposition_id=pid, score=score)
            for row, scores in zip(our_rows, answers, strict=True)
            for pid, score in zip(items[row.task_id], scores, strict=True)
        )
    analyze()
    return campaign


def hit_pks(campaign) -> list[int]:
    from crowd.models import HIT

    return list(HIT.objects.filter(task__batch__topic__campaign=campaign).order_by("pk").values_list("pk", flat=True))


def qc_ran(campaign) -> None:
    """Quality control ran for every worker after their answers: their work is due for approval."""
    from django.utils import timezone

    from crowd.models import Worker, WorkerQuality

    WorkerQuality.objects.bulk_create(
        (
            WorkerQuality(campaign=campaign, worker=worker, computed_at=timezone.now())
            for worker in Worker.objects.all()
        ),
        ignore_conflicts=True,
    )


def answers_reset(campaign) -> None:
    """Every answer not yet approved pending again, and no quality control run: as before
    the first pass."""
    from crowd.models import HIT, Assignment, WorkerQuality

    Assignment.objects.filter(task__batch__topic__campaign=campaign, status=Assignment.Status.SUBMITTED).update(
        verification=Assignment.Verification.PENDING
    )
    HIT.objects.filter(complete=False).update(last_synced_at=None)
    WorkerQuality.objects.filter(campaign=campaign).delete()
    analyze()


def pending_count(campaign) -> int:
    from crowd.models import Assignment

    return Assignment.objects.pending().filter(task__batch__topic__campaign=campaign).count()


def analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")


def machine() -> dict:
    return {"cpus": os.cpu_count(), "load_average": [round(x, 2) for x in os.getloadavg()], "host": os.uname().nodename}


def report(figures: dict) -> None:
    base, hits = figures["baseline"], figures["hits"]
    runs = figures["verify"]
    print()
    print(f"Verify pass over {hits:,} HITs ({figures['answers']:,} answers), local MTurk endpoint over HTTP")
    print(f"{'':34} {'queries/HIT':>12} {'calls/HIT':>10} {'pass s':>9}  CPU ms/HIT (pass, endpoint, workers)")
    verify = base["verify"]
    print(
        f"{'old per-HIT path (' + base['source'] + ')':34} {verify['queries_per_hit']:>12} {'-':>10} "
        f"{round(verify['seconds_per_hit'] * hits):>9}"
    )
    for workers, run in runs.items():
        name = f"ours, pass + {workers} worker process(es)"
        cpu = run["cpu_ms_per_hit"]
        cpu_text = ", ".join(str(cpu.get(part, "-")) for part in ("pass", "endpoint", "workers"))
        print(f"{name:34} {run['queries_per_hit']:>12} {run['calls_per_hit']:>10} {run['seconds']:>9}  {cpu_text}")
    if "1" in runs and "2" in runs:
        figures["ratio_2_to_1_workers"] = round(runs["1"]["seconds"] / runs["2"]["seconds"], 2)
        print(f"1 → 2 worker processes: the pass takes {figures['ratio_2_to_1_workers']}× less time")
    old, new = base["approve"], figures["approve"]
    print(
        f"Approval pass over {new['approved'] // SLOTS:,} HITs: {new['seconds']} s, per HIT {new['queries_per_hit']} "
        f"queries, {new['calls_per_hit']} calls, {new['seconds_per_hit']} s (old per-HIT path, recorded: "
        f"{old['queries_per_hit']} queries per HIT)"
    )


if __name__ == "__main__":
    sys.exit(main())
