"""The whole campaign as a deployment runs it, from import to the downloaded zip (issue 26).

    .venv/bin/python -m tests.services run -- .venv/bin/python benchmarks/e2e.py [--topics 3 --propositions 1750]
    .venv/bin/python benchmarks/e2e.py --propositions 200          # a quick run (~5 minutes)
    .venv/bin/python benchmarks/e2e.py --channel prolific          # on Prolific (~8 minutes at 3 × 1,750)

gunicorn (2 workers × gthread 4, benchmarks/load/server.py), a Celery worker with beat
(SYNC_INTERVAL_SECONDS 5 by default; benchmarks/e2e_meter.py times each QC run), PostgreSQL
(DATABASE_URL's server, else a throw-away one) and Redis (broker and CACHE_URL) from
tests/services.py on loopback, the local MTurk endpoint on the same gunicorn
(LOCALTURK_ENABLED), and `manage.py simulate_crowd` over HTTP whenever the endpoint has work
open. With `--channel prolific` the local Prolific endpoint instead (on the same gunicorn):
participants take each topic's study once and work in sessions of 10 tasks, so the crowd is
sized for that (`--crowd`), the researcher says yes to every raise of places the loop asks for,
and the session's own requests (arrival, session page, the answer's copy) are timed beside the
HIT page and answer, outside the ratio. The researcher's steps run here: import, then publishing each topic's Likert round; the
loop does the rest. Then the all-topics zip is downloaded and gunicorn restarted, to time the
first campaign page after a start (with the shared cache warm, and with it emptied).

Printed: each stage's wall time (import, Likert publish, crowd, loop waits, the loop's
approvals after the last step, zip); the loop's CPU per assignment (the Celery worker's process
tree, /proc, once its processes have installed the meters, until every confirmed answer is
approved or rejected) beside the app's own HIT page and
submission per assignment (gunicorn's time for every HIT page GET and answer POST of the run,
from its access log); marketplace calls per HIT by operation (the access log) and database
transactions per HIT (pg_stat_database: each statement outside a transaction block counts
one); the idle time between a batch's last answer and the next batch's publication in its
topic (p50/p95, from the database's timestamps); QC runs and their cost, and those of the Likert round beside one full QC run from every label (the issue's 2×); peak memory (VmHWM)
per process; the load average beside them. The last line is every figure as one JSON object.
Not part of `make test` or `make bench` (benchmarks/*_bench.py).
"""

import argparse
import http.client
import itertools
import json
import os
import random
import re
import resource
import signal
import statistics
import subprocess
import sys
import time
import warnings
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# WhiteNoise notes the missing collectstatic folder; static files play no part here.
warnings.filterwarnings("ignore", message="No directory at")

from benchmarks._harness import percentile, postgres_server, workdir_made  # noqa: E402
from benchmarks.load.cpu import tree_cpu_seconds  # noqa: E402
from benchmarks.load.server import Server, gunicorn  # noqa: E402
from benchmarks.scale import propositions_file  # noqa: E402
from tests.services import free_port, fresh_database, redis, redis_database  # noqa: E402

DATABASE = "salience_e2e_bench"
WORKER_PROCESSES = 2  # docker-compose's worker (--concurrency=2)
SLUG = "e2e"
# gunicorn's access log: the marketplace operation (MTurk's X-Amz-Target header), the request
# line, the status and the time taken in microseconds.
ACCESS_FORMAT = '%({x-amz-target}i)s "%(r)s" %(s)s %(D)s'
ACCESS_LINE = re.compile(r'^(?P<target>\S+) "(?P<method>\S+) (?P<path>\S+)[^"]*" (?P<status>\d+) (?P<micros>\d+)$')
HIT_PAGE = re.compile(r"^/hit/[0-9a-f-]+/(?P<submit>submit/)?(\?|$)")
# A session's own pages (Prolific): the arrival from the study URL, the session page around
# each task, and the answer's copy the HIT page posts to it.
SESSION_PAGE = re.compile(r"^/s/(?:(?P<arrival>prolific/)|[0-9a-f-]+/(?P<copy>mturk/externalSubmit)?)(\?|$)")
PROLIFIC_ID = re.compile(r"/[0-9a-f]{24}(?=/)")
LOOP_TASK = re.compile(r"Task (?P<name>[\w.]+)\[[^\]]+\] succeeded in (?P<seconds>[\d.]+)s")
READY_TIMEOUT = 120  # seconds for the Celery worker to say it is ready
STALL_SECONDS = 600  # no open work and no progress for this long ends the run as stuck


def main() -> int:
    args = _arguments()
    load_before = os.getloadavg()
    with workdir_made(prefix="salience-e2e-") as workdir, ExitStack() as stack:
        server_url = stack.enter_context(postgres_server(workdir, reuse=True))
        (workdir / "redis").mkdir()
        redis_url = stack.enter_context(redis(workdir / "redis"))
        port = free_port()
        env = _environment(
            database_url=fresh_database(server_url, DATABASE),
            redis_url=redis_url,
            port=port,
            args=args,
            workdir=workdir,
        )
        os.environ.update(env)  # the same settings here, for the researcher's steps and the figures
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        figures = run(args=args, env=env, workdir=workdir, port=port)
    figures["load_before"] = [round(value, 2) for value in load_before]
    figures["load_after"] = [round(value, 2) for value in os.getloadavg()]
    _report(figures)
    print(json.dumps(figures))
    return 0 if figures["finished"] else 1


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=3)
    parser.add_argument("--propositions", type=int, default=1750, help="per topic (default 1750)")
    parser.add_argument(
        "--channel",
        choices=("mturk", "prolific"),
        default="mturk",
        help="the local MTurk endpoint (default), or the local Prolific endpoint with participants in sessions",
    )
    parser.add_argument(
        "--crowd",
        type=int,
        help="simulated workers (default 30 on MTurk; on Prolific, where each takes a study once and a "
        "session that finds too few tasks left is returned, a fifth of the propositions per topic, at least 100: "
        "a topic's Likert round is about one session of 10 tasks per 10 propositions)",
    )
    parser.add_argument("--sync-interval", type=int, default=5, help="SYNC_INTERVAL_SECONDS (default 5)")
    parser.add_argument("--timeout", type=int, default=3600, help="hard limit on the campaign, seconds")
    parser.add_argument("--seed", type=int, default=26)
    args = parser.parse_args()
    if args.crowd is None:
        args.crowd = 30 if args.channel == "mturk" else max(100, args.propositions // 5)
    return args


def _environment(*, database_url: str, redis_url: str, port: int, args: argparse.Namespace, workdir: Path) -> dict:
    """Development mode, for the local MTurk endpoint (production refuses it), with the
    deployment's connections (CONN_MAX_AGE), DEBUG off, Redis as broker and cache, and the
    submission rate limits off (the whole simulated crowd comes from one address)."""
    site = f"http://127.0.0.1:{port}"
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="benchmarks.load.settings",  # config.settings and /trivial/, which readiness asks
        SALIENCE_ENV="development",
        DEBUG="False",
        DATABASE_URL=database_url,
        CONN_MAX_AGE="60",
        CELERY_BROKER_URL=redis_database(redis_url, 0),
        CACHE_URL=redis_database(redis_url, 1),
        SITE_URL=site,
        MTURK_ENVIRONMENT="local",
        MTURK_LOCAL_ENDPOINT_URL=f"{site}/localturk/",
        LOCALTURK_ENABLED="true",
        SYNC_INTERVAL_SECONDS=str(args.sync_interval),
        LOAD_BENCH_RATE_LIMIT="0",
        # Prolific: the local endpoint on the same gunicorn; the whole crowd arrives from one
        # address, faster than people do, so the arrival limits are off too.
        PROLIFIC_ENVIRONMENT="local",
        PROLIFIC_API_URL=f"{site}/localprolific/api/v1/",
        LOCALPROLIFIC_ENABLED="true",
        PROLIFIC_ARRIVALS_PER_ADDRESS="0",
        PROLIFIC_ARRIVAL_CALLS_PER_MINUTE="0",
        E2E_CHANNEL=args.channel,
        E2E_QC_LOG=str(workdir / "qc.log"),
        E2E_CPU_DIR=str(workdir / "cpu"),
    )
    return env


def run(*, args: argparse.Namespace, env: dict, workdir: Path, port: int) -> dict:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from annotation.campaigns import campaign_create
    from annotation.importing.importers import propositions_import
    from annotation.models import Campaign
    from crowd.channels.settings import channel_settings_set
    from crowd.work.rounds import topic_publish

    stages: dict[str, float] = {}
    owner = get_user_model().objects.create_user("owner", password="owner-password")
    token = Token.objects.create(user=owner).key
    campaign = campaign_create(
        slug=SLUG,
        name="End-to-end benchmark",
        owner=owner,
        # a draft until its first batch is out, where its channel may still be set
        status=Campaign.Status.ACTIVE if args.channel == "mturk" else Campaign.Status.DRAFT,
        channel=Campaign.Channel.MTURK,
        environment=Campaign.Environment.LOCAL,
        budget_cap=99_999_999,
    )
    if args.channel == "prolific":
        # as the Channel page does it: rewards raised to Prolific's hourly floor
        campaign = channel_settings_set(
            campaign=campaign, channel=Campaign.Channel.PROLIFIC, environment=Campaign.Environment.LOCAL
        )
    path, topics_path = propositions_file(workdir, args.topics, args.propositions)
    truth = _truth_file(workdir, path, args.seed)
    started = time.monotonic()
    with path.open("rb") as source, topics_path.open("rb") as topics_source:
        propositions_import(
            campaign=campaign,
            source=source,
            filename=path.name,
            topics_source=topics_source,
            topics_filename=topics_path.name,
            min_confidence=0.0,
        )
    stages["import"] = time.monotonic() - started
    _log(f"imported {args.topics} × {args.propositions} propositions in {stages['import']:.1f} s")

    (workdir / "cpu").mkdir()
    services = ExitStack()  # gunicorn and the worker, stopped before the restarts at the end
    server = services.enter_context(_gunicorn(env, workdir, port))
    worker = _celery_worker(env, workdir)
    services.callback(_stop, worker)
    _meters_installed(workdir / "cpu", processes=WORKER_PROCESSES)
    worker_cpu, xacts = tree_cpu_seconds(worker.pid), _transactions()

    started = time.monotonic()
    for topic in campaign.topics.order_by("key"):
        topic_publish(topic=topic, kind="likert")
    stages["likert_publish"] = time.monotonic() - started
    _log(f"published the Likert rounds in {stages['likert_publish']:.1f} s")

    deadline = time.monotonic() + args.timeout
    crowd, waits, finished = _campaign_run(args=args, env=env, truth=truth, deadline=deadline)
    stages["crowd"], stages["loop_waits"] = crowd, waits
    started = time.monotonic()
    settled = finished and _approvals_settled(deadline)
    stages["approvals_after"] = time.monotonic() - started
    _log(f"the loop's approvals after the last step: {stages['approvals_after']:.1f} s, settled: {settled}")
    worker_cpu, xacts = tree_cpu_seconds(worker.pid) - worker_cpu, _transactions() - xacts
    memory = {**_peak_memory(server.pid, "gunicorn"), **_peak_memory(worker.pid, "celery")}
    memory["benchmark (researcher, simulate_crowd runs)"] = round(
        max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024, 1
    )

    started = time.monotonic()
    zipped = _get(server, f"/api/campaigns/{SLUG}/export/", {"Authorization": f"Token {token}"})
    stages["zip"] = time.monotonic() - started
    services.close()

    figures = _figures(campaign=campaign, workdir=workdir, worker_cpu=worker_cpu, transactions=xacts)
    figures.update(
        finished=finished,
        channel=args.channel,
        size={"topics": args.topics, "propositions": args.propositions, "crowd": args.crowd},
        sync_interval_seconds=args.sync_interval,
        stages_seconds={name: round(value, 1) for name, value in stages.items()},
        zip_bytes=len(zipped),
        peak_memory_mb=memory,
        first_page_after_start=_first_pages(owner=owner, env=env, workdir=workdir, port=port),
    )
    return figures


def _truth_file(workdir: Path, propositions: Path, seed: int) -> Path:
    """The simulated crowd's latent importance of every proposition (simulate_crowd --truth)."""
    rng = random.Random(seed)
    truth = workdir / "truth.tsv"
    with propositions.open(encoding="utf-8") as source, truth.open("w", encoding="utf-8") as target:
        next(source)
        target.write("id\timportance\n")
        target.writelines(f"{line.rstrip().rsplit(chr(9), 1)[1]}\t{rng.gauss(0, 1):.4f}\n" for line in source)
    return truth


def _gunicorn(env: dict, workdir: Path, port: int):
    return gunicorn(
        env=env,
        workdir=workdir,
        workers=2,
        worker_class="gthread",
        threads=4,
        port=port,
        access_format=ACCESS_FORMAT,
        ready_timeout=READY_TIMEOUT,
    )


def _celery_worker(env: dict, workdir: Path) -> subprocess.Popen:
    """docker-compose's worker (concurrency 2) with beat embedded, as the project's e2e test
    runs it (tests/conftest.py), on this run's app (benchmarks/e2e_meter.py), logging to a file."""
    log = workdir / "worker.log"
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "benchmarks.e2e_meter",
        "worker",
        "-B",
        f"--concurrency={WORKER_PROCESSES}",
        "--loglevel=INFO",
        "--schedule",
        str(workdir / "beat-schedule"),
        "--without-gossip",
        "--without-mingle",
    ]
    with open(log, "wb") as output:
        process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=output, stderr=output)
    deadline = time.monotonic() + READY_TIMEOUT
    while " ready." not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            _stop(process)
            sys.exit(f"the Celery worker did not start:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.2)
    return process


def _meters_installed(directory: Path, *, processes: int) -> None:
    """Wait until each pool process has installed its meters (benchmarks/e2e_meter.py), which
    walks every module: seconds of CPU that are the benchmark's, not the loop's."""
    deadline = time.monotonic() + READY_TIMEOUT
    while len(list(directory.glob("*.installed"))) < processes:
        if time.monotonic() > deadline:
            sys.exit("the Celery worker's processes did not install their meters")
        time.sleep(0.2)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)  # warm shutdown: the tasks under way finish
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _campaign_run(*, args: argparse.Namespace, env: dict, truth: Path, deadline: float) -> tuple[float, float, bool]:
    """The crowd works whenever the endpoint has work open; between, the loop's turn. Returns
    the crowd's time, the time waited on the loop, and whether every topic finished. Work the
    crowd cannot do (every one of its workers did that HIT) waits for the loop too."""
    crowd = waits = 0.0
    command = [sys.executable, "manage.py", "simulate_crowd", "--campaign", SLUG, "--workers", str(args.crowd)]
    command += ["--truth", str(truth), "--seed", str(args.seed), "--base-url", env["SITE_URL"]]
    crowd_stuck = False
    work_open = _work_open if args.channel == "mturk" else _places_open
    researcher = _raises_approve if args.channel == "prolific" else (lambda: None)
    while time.monotonic() < deadline and not _all_done():
        researcher()
        if work_open() and not crowd_stuck:
            started, answers = time.monotonic(), _progress()[1]
            done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
            crowd += time.monotonic() - started
            if done.returncode:
                sys.exit(f"simulate_crowd failed:\n{done.stdout}\n{done.stderr}")
            crowd_stuck = _progress()[1] == answers
            _log(f"crowd: {' '.join(done.stdout.split())[:160]}")
            continue
        started, progress = time.monotonic(), _progress()
        while time.monotonic() < deadline and not _all_done():
            researcher()
            if _progress() != progress:
                crowd_stuck = False
                break
            if work_open() and not crowd_stuck:
                break
            if time.monotonic() - started > STALL_SECONDS:
                _log(f"stuck: no progress for {STALL_SECONDS} s")
                return crowd, waits + time.monotonic() - started, False
            time.sleep(0.25)
        waits += time.monotonic() - started
    return crowd, waits, _all_done()


def _approvals_settled(deadline: float) -> bool:
    """Wait until the loop has approved (or rejected) every answer its channel confirmed: the
    loop's CPU per assignment counts the approvals, which the passes after the last step make
    (a small campaign can finish on the event path before beat's first pass)."""
    from crowd.models import Assignment

    counted = (Assignment.Verification.VERIFIED, Assignment.Verification.RECOVERED)
    due = Assignment.objects.filter(
        task__batch__topic__campaign__slug=SLUG, status=Assignment.Status.SUBMITTED, verification__in=counted
    )
    while due.exists() or _submissions_awaiting_review():
        if time.monotonic() > deadline:
            return False
        time.sleep(1)
    return True


def _submissions_awaiting_review() -> bool:
    """Prolific: a finished session's submission not yet approved or rejected in bulk."""
    from rehearsal.localprolific.models import Submission

    return Submission.objects.filter(status=Submission.Status.AWAITING_REVIEW).exists()


def _places_open() -> bool:
    """The local Prolific endpoint has an active study with a place nobody holds."""
    from django.db.models import Count, F, Q

    from rehearsal.localprolific.models import Study, Submission

    held = Count("submissions", filter=Q(submissions__status__in=Submission.HOLDING))
    studies = Study.objects.filter(status=Study.Status.ACTIVE, stopped=False).annotate(held=held)
    return studies.filter(held__lt=F("total_available_places")).exists()


def _raises_approve() -> None:
    """The researcher says yes to every raise of places the loop asked for (as `make demo`
    does; a real one reads its reason on the campaign page first); the next pass raises them."""
    from annotation.models import Campaign
    from config.errors import ApplicationError
    from crowd.channels.prolific import raises

    campaign = Campaign.objects.get(slug=SLUG)
    for raise_id in raises.raises_pending(campaign=campaign):
        try:
            raises.raise_approve(campaign=campaign, raise_id=raise_id, by=campaign.owner)
        except ApplicationError as refused:  # made stale meanwhile: the page says so
            _log(f"the researcher's yes to raise {raise_id} refused: {refused.message}")
        else:
            _log(f"the researcher approved raise {raise_id}")


def _all_done() -> bool:
    from annotation.models import Topic

    return not Topic.objects.filter(campaign__slug=SLUG).exclude(state=Topic.State.DONE).exists()


def _work_open() -> bool:
    """The local endpoint has a HIT with a free assignment."""
    from rehearsal.localturk.models import HIT

    return HIT.objects.filter(status=HIT.Status.ASSIGNABLE, available__gt=0).exists()


def _progress() -> tuple[int, int, int, int]:
    """Batches published, answers stored, answers confirmed, and places offered on the local
    Prolific endpoint (a raise is new work for the crowd)."""
    from django.db.models import Sum

    from annotation.models import Batch
    from crowd.models import Assignment
    from rehearsal.localprolific.models import Study

    confirmed = Assignment.objects.exclude(verification=Assignment.Verification.PENDING).count()
    places = Study.objects.aggregate(places=Sum("total_available_places"))["places"] or 0
    return (Batch.objects.filter(published_at__isnull=False).count(), Assignment.objects.count(), confirmed, places)


def _transactions() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


def _peak_memory(pid: int, name: str) -> dict[str, float]:
    """VmHWM (peak resident memory) of `pid` and of each of its living descendants, in MB."""
    found = {}
    for number, process in enumerate(_tree(pid)):
        try:
            status = Path(f"/proc/{process}/status").read_text()
        except OSError:
            continue
        peak = re.search(r"VmHWM:\s+(\d+) kB", status)
        role = "main" if number == 0 else "child"  # a Celery worker's children: its pool and embedded beat
        if peak:
            found[f"{name} {role} {process}"] = round(int(peak.group(1)) / 1024, 1)
    return found


def _tree(pid: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(parent, []).append(int(stat.parent.name))
    tree, queue = [], [pid]
    while queue:
        current = queue.pop(0)
        tree.append(current)
        queue.extend(sorted(parents.get(current, [])))
    return tree


def _get(server: Server, path: str, headers: dict[str, str]) -> bytes:
    connection = http.client.HTTPConnection(server.host, server.port, timeout=600)
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            sys.exit(f"GET {path}: {response.status}\n{body[:2000]!r}")
        return body
    finally:
        connection.close()


def _first_pages(*, owner, env: dict, workdir: Path, port: int) -> dict:
    """gunicorn restarted: the first campaign page and progress.json, then both again (the
    same keep-alive-less requests, now on warm processes), with the shared cache as the run left
    it, then with the cache emptied (what a process-local cache meets after every start)."""
    import redis as redis_client
    from django.test import Client

    client = Client()
    client.force_login(owner)
    cookie = {"Cookie": f"sessionid={client.cookies['sessionid'].value}"}
    figures = {}
    for case in ("warm", "cold"):
        if case == "cold":
            redis_client.Redis.from_url(env["CACHE_URL"]).flushdb()
        with _gunicorn(env, workdir, port) as server:
            timings = {}
            pages = (("campaign", f"/campaigns/{SLUG}/"), ("progress", f"/campaigns/{SLUG}/progress.json"))
            for name, path in (*pages, *((f"{name} again", path) for name, path in pages)):
                started = time.monotonic()
                _get(server, path, cookie)
                timings[name] = round(time.monotonic() - started, 3)
            figures[case] = timings
    return figures


def _figures(*, campaign, workdir: Path, worker_cpu: float, transactions: int) -> dict:
    from annotation.models import Batch
    from crowd.models import HIT, Assignment, Comparison, LikertLabel

    hits = HIT.objects.filter(task__batch__topic__campaign=campaign).count()
    assignments = Assignment.objects.filter(task__batch__topic__campaign=campaign).count()
    calls, page, submit, session, endpoint = _access_log(workdir / "access.log")
    qc = [tuple(map(float, line.split()[:2])) for line in _lines(workdir / "qc.log")]
    likert_qc, full_qc = _likert_round_qc(campaign, workdir / "qc.log")
    tasks = [
        (match["name"], float(match["seconds"]))
        for match in LOOP_TASK.finditer((workdir / "worker.log").read_text(errors="replace"))
    ]
    passes = [seconds for name, seconds in tasks if name == "ranking.tasks.run_loop"]
    events = [seconds for name, seconds in tasks if name == "ranking.tasks.step_requested"]
    idle = _idle_seconds(campaign)
    slowest = sorted(_idle_batches(campaign), reverse=True)[:3]
    app_ms = (_median(page) + _median(submit)) / 1000
    return {
        "hits": hits,
        "assignments": assignments,
        "likert_labels": LikertLabel.objects.filter(assignment__task__batch__topic__campaign=campaign).count(),
        "votes": Comparison.objects.filter(assignment__task__batch__topic__campaign=campaign).count(),
        "batches": Batch.objects.filter(topic__campaign=campaign).count(),
        "loop_cpu_ms_per_assignment": round(1000 * worker_cpu / max(assignments, 1), 2),
        "hit_page_and_submit_ms": {
            "page_p50": round(_median(page) / 1000, 2),
            "submit_p50": round(_median(submit) / 1000, 2),
            "together_p50": round(app_ms, 2),
            "pages": len(page),
            "submissions": len(submit),
            # Prolific: the session's own requests (arrival, session page, the answer's copy),
            # gunicorn's time per assignment beside the HIT page and answer; not in the ratio
            "session_ms_per_assignment": round(sum(micros for _, micros in session) / 1000 / max(assignments, 1), 2),
            "session_requests": len(session),
            "session_p50_ms": {
                kind: round(_median([micros for named, micros in session if named == kind]) / 1000, 2)
                for kind in sorted({kind for kind, _ in session})
            },
        },
        "loop_cpu_split_ms_per_hit": _cpu_split(workdir / "cpu", worker_cpu=worker_cpu, hits=hits),
        "loop_cpu_over_app": round(1000 * worker_cpu / max(assignments, 1) / app_ms, 2) if app_ms else None,
        "marketplace_calls_per_hit": round(sum(calls.values()) / max(hits, 1), 2),
        "local_endpoint_ms_per_request": {
            "p50": round(_median(endpoint) / 1000, 2),
            "p95": round(percentile(endpoint, 95) / 1000, 2) if len(endpoint) > 1 else None,
            "requests": len(endpoint),
        },
        "marketplace_calls": dict(calls.most_common()),
        "transactions_per_hit": round(transactions / max(hits, 1), 1),
        "idle_after_last_answer_seconds": {
            "batches": len(idle),
            "p50": round(percentile(idle, 50), 1) if len(idle) > 1 else None,
            "p95": round(percentile(idle, 95), 1) if len(idle) > 1 else None,
            "slowest": [[round(seconds, 1), label] for seconds, label in slowest],
        },
        "qc": {
            "runs": len(qc),
            "wall_seconds": round(sum(wall for wall, _ in qc), 2),
            "cpu_seconds": round(sum(cpu for _, cpu in qc), 2),
            "last_run_cpu_seconds": round(qc[-1][1], 3) if qc else None,
            # the target: QC over the run at most 2x one full run at the end
            "cpu_over_last_run": round(sum(cpu for _, cpu in qc) / qc[-1][1], 1) if qc and qc[-1][1] else None,
            # the target: QC over the Likert round at most 2x one full run from every label
            "likert_round": likert_qc,
            "full_run_cpu_seconds": round(full_qc, 3),
            "likert_round_over_full_run": round(likert_qc["cpu_seconds"] / full_qc, 2) if full_qc else None,
        },
        "loop_passes": {"runs": len(passes), "wall_seconds": round(sum(passes), 1)},
        "event_steps": {"runs": len(events), "wall_seconds": round(sum(events), 1)},
    }


def _cpu_split(directory: Path, *, worker_cpu: float, hits: int) -> dict[str, list]:
    """The worker's CPU per HIT by part of the loop (benchmarks/e2e_meter.py), in ms, with the
    number of calls of each part per HIT (a paged listing: per item); the rest is the worker's
    total less the parts'."""
    totals: Counter = Counter()
    counts: Counter = Counter()
    for path in directory.glob("*.json"):
        for part, (seconds, calls) in json.loads(path.read_text()).items():
            totals[part] += seconds
            counts[part] += calls
    totals.pop("tasks (all)", None)
    split = {
        part: [round(1000 * seconds / max(hits, 1), 2), round(counts[part] / max(hits, 1), 2)]
        for part, seconds in totals.most_common()
    }
    # the parts' marketplace calls run in threads of their own, outside the task's thread
    split["the rest (Celery, beat, task code outside the parts)"] = [
        round(1000 * (worker_cpu - sum(totals.values())) / max(hits, 1), 2),
        0,
    ]
    return split


def _access_log(path: Path) -> tuple[Counter, list[int], list[int], list[tuple[str, int]], list[int]]:
    """Marketplace calls by operation (MTurk's X-Amz-Target; Prolific's method and API path,
    its ids elided); gunicorn's microseconds for each HIT page and answer, for each request of
    a session's own pages (Prolific), and for each call to the local endpoint (the API and its
    worker site, or the participants' side and the simulated crowd's controls)."""
    calls: Counter = Counter()
    page, submit, endpoint = [], [], []
    session: list[tuple[str, int]] = []
    for line in _lines(path):
        match = ACCESS_LINE.match(line)
        if match is None:
            continue
        where = match["path"].split("?", 1)[0]
        if match["method"] == "POST" and where == "/localturk/" and match["target"] != "-":
            calls[match["target"].rsplit(".", 1)[-1]] += 1
        if where.startswith("/localprolific/api/"):
            calls[f"{match['method']} {PROLIFIC_ID.sub('/{id}', where.removeprefix('/localprolific/api/v1'))}"] += 1
        if where.startswith(("/localturk/", "/localprolific/")):
            endpoint.append(int(match["micros"]))
        hit = HIT_PAGE.match(match["path"])
        if hit and match["status"].startswith(("2", "3")):
            (submit if hit["submit"] else page).append(int(match["micros"]))
        elif (own := SESSION_PAGE.match(match["path"])) and match["status"].startswith(("2", "3")):
            kind = "arrival" if own["arrival"] else "answer copy" if own["copy"] else "session page"
            session.append((kind, int(match["micros"])))
    return calls, page, submit, session, endpoint


def _likert_round_qc(campaign, log: Path) -> tuple[dict, float]:
    """The QC runs of the Likert round (those that ended by the time the campaign's last topic
    had its Likert round scored: its first comparison batch made), their CPU summed; and the
    CPU of one full QC run from every label (`campaign_quality_recompute`), here, at the end."""
    from django.db.models import Min

    from annotation.models import Batch
    from crowd.qc.worker_quality import campaign_quality_recompute

    comparisons = Batch.objects.filter(topic__campaign=campaign, kind=Batch.Kind.COMPARISON)
    firsts = comparisons.values("topic_id").annotate(first=Min("created_at")).values_list("first", flat=True)
    scored = max(firsts, default=None)
    runs = [line.split() for line in _lines(log)]
    round_cpu = [
        float(cpu) for _wall, cpu, *end in runs if scored is None or (end and float(end[0]) <= scored.timestamp())
    ]
    start = time.thread_time()
    campaign_quality_recompute(campaign_id=campaign.pk)
    full = time.thread_time() - start
    return {"runs": len(round_cpu), "cpu_seconds": round(sum(round_cpu), 3)}, full


def _idle_seconds(campaign) -> list[float]:
    """Per topic, between each batch's last answer (submitted_at) and the publication of the
    topic's next batch."""
    return [seconds for seconds, _batch in _idle_batches(campaign)]


def _idle_batches(campaign) -> list[tuple[float, str]]:
    """`_idle_seconds`, each with the batch it followed: "topic kind number → next (its tasks)"."""
    from django.db.models import Count, Max

    from annotation.models import Batch

    idle = []
    for topic in campaign.topics.all():
        batches = list(
            Batch.objects.filter(topic=topic, published_at__isnull=False)
            .annotate(last=Max("tasks__assignments__submitted_at"), size=Count("tasks", distinct=True))
            .order_by("published_at")
        )
        for batch, following in itertools.pairwise(batches):
            if batch.last is not None:
                seconds = (following.published_at - batch.last).total_seconds()
                label = f"{topic.key} {batch.kind} {batch.number} → {following.number} ({following.size} tasks)"
                idle.append((seconds, label))
    return idle


def _median(values: list[int]) -> float:
    return statistics.median(values) if values else 0.0


def _lines(path: Path) -> list[str]:
    return path.read_text(errors="replace").splitlines() if path.exists() else []


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def _report(figures: dict) -> None:
    stages = figures["stages_seconds"]
    app = figures["hit_page_and_submit_ms"]
    idle = figures["idle_after_last_answer_seconds"]
    size = figures["size"]
    print(
        f"\nend to end on {figures['channel']}: {size['topics']} topics × {size['propositions']} propositions, "
        f"crowd of {size['crowd']}, "
        f"beat every {figures['sync_interval_seconds']} s; finished: {figures['finished']}\n"
        f"  load average before {figures['load_before']}, after {figures['load_after']}\n"
        f"  {figures['hits']:,} HITs, {figures['assignments']:,} assignments, {figures['likert_labels']:,} Likert "
        f"labels, {figures['votes']:,} votes, {figures['batches']} batches\n"
        f"  stages (s): import {stages['import']}, Likert publish {stages['likert_publish']}, crowd "
        f"{stages['crowd']}, loop waits {stages['loop_waits']}, approvals after the last step "
        f"{stages['approvals_after']}, zip {stages['zip']} ({figures['zip_bytes']:,} bytes)\n"
        f"  loop CPU per assignment {figures['loop_cpu_ms_per_assignment']} ms beside the app's HIT page + submission "
        f"{app['together_p50']} ms (gunicorn p50s: page {app['page_p50']}, submit {app['submit_p50']}; "
        f"{app['pages']:,} pages, {app['submissions']:,} answers): {figures['loop_cpu_over_app']}×"
        + (
            f" (the session's own requests besides, not in the ratio: {app['session_ms_per_assignment']} ms per "
            f"assignment over {app['session_requests']:,} requests; p50 ms {app['session_p50_ms']})"
            if app["session_requests"]
            else ""
        )
        + "\n"
        "  loop CPU per HIT by part, ms (and calls per HIT): "
        + "; ".join(f"{part} {ms} ({calls})" for part, (ms, calls) in figures["loop_cpu_split_ms_per_hit"].items())
        + "\n"
        f"  marketplace calls per HIT {figures['marketplace_calls_per_hit']}: {figures['marketplace_calls']}\n"
        f"  the local endpoint (API and worker site), gunicorn ms per request: {figures['local_endpoint_ms_per_request']}\n"
        f"  database transactions per HIT {figures['transactions_per_hit']}\n"
        f"  idle between a batch's last answer and the topic's next batch: p50 {idle['p50']} s, p95 {idle['p95']} s "
        f"over {idle['batches']} batches; the slowest: "
        + "; ".join(f"{seconds} s after {label}" for seconds, label in idle["slowest"])
        + "\n"
        f"  QC: {figures['qc']['runs']} runs, {figures['qc']['wall_seconds']} s wall, {figures['qc']['cpu_seconds']} s "
        f"CPU (last run {figures['qc']['last_run_cpu_seconds']} s: the run's QC {figures['qc']['cpu_over_last_run']}× "
        f"one run at its end); over the Likert round {figures['qc']['likert_round']['runs']} runs, "
        f"{figures['qc']['likert_round']['cpu_seconds']} s CPU beside one full run from every label "
        f"{figures['qc']['full_run_cpu_seconds']} s: {figures['qc']['likert_round_over_full_run']}× (target 2×); loop passes {figures['loop_passes']}; event steps {figures['event_steps']}\n"
        f"  first page after a gunicorn start (s): {figures['first_page_after_start']}\n"
        f"  peak memory (MB): {figures['peak_memory_mb']}"
    )


if __name__ == "__main__":
    sys.exit(main())
