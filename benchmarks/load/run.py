"""Load: simulated workers doing HIT submissions against gunicorn on PostgreSQL (issue 7).

    .venv/bin/python benchmarks/load/run.py [--workers 50 --submissions 2000]

A fresh, migrated database on PostgreSQL (the server of DATABASE_URL when it names one,
else a throw-away server from tests/services.py) holds one published Likert batch
(fixtures.py). gunicorn serves the site with the deployment's settings in production mode
(SALIENCE_ENV=production, DEBUG off, CONN_MAX_AGE and CONN_HEALTH_CHECKS as
config/settings.py reads them from the environment) plus a trivial view (settings.py,
urls.py). `--workers` threads, each a simulated worker with its own workerId and keep-alive
connection, load HIT pages and post the answers their forms call for (client.py), as fast
as the server answers: a closed loop, so latency is mostly queueing behind the other
workers. Phases of HIT submissions alternate with phases of trivial requests (phases.py).

Some answers are sent twice (--duplicates, a share): half again after the reply came (a
reload, a retry), half at the same time from a second connection (a double click). After
the run the database must hold every acknowledged answer once, as sent, with its labels,
and nothing else (audit.py).

Targets, printed beside the figures: p99 submission (the POST) ≤ 250 ms; submissions (the
POSTs) per second ≥ 40 % of the trivial view's requests per second. Exit
status: 1 on a correctness failure (lost, doubled or altered answers, a 5xx, a refused or
dropped request); 2 when the run did not finish within --timeout seconds, or could not
start; a missed speed target never fails the run.

`--repeat N` makes N whole runs, each in a process of its own (fresh database, fresh
server), and then prints their spread: each run's share and p99 and the medians. On a
shared 2-core machine the trivial view's own rate moves by a quarter from run to run, so
one run's share is a sample, not the figure.

gunicorn: 2 workers of the gthread class with 4 threads each by default; README.md here
gives the measurements behind the choice, and --worker-class sync --threads N compare.
"""

import argparse
import dataclasses
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import warnings
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
# WhiteNoise notes the missing collectstatic folder; static files play no part here.
warnings.filterwarnings("ignore", message="No directory at")

from benchmarks.load import profiling  # noqa: E402
from benchmarks.load.audit import audit  # noqa: E402
from benchmarks.load.client import RACE, RETRY, Job, SimulatedClient  # noqa: E402
from benchmarks.load.cpu import postgres_pid  # noqa: E402
from benchmarks.load.phases import Meters, RunProgress, rounds_run  # noqa: E402
from benchmarks.load.plan import jobs_plan, tasks_needed  # noqa: E402
from benchmarks.load.report import Figures, repeats_print, report_print  # noqa: E402
from benchmarks.load.server import Server, ServerError, gunicorn  # noqa: E402
from crowd.simulation.hits import Judge, crowd_make  # noqa: E402
from tests.services import ServiceError, fresh_database, postgres, redis  # noqa: E402

DATABASE = "salience_load_bench"
RATE_LIMIT = 1_000_000  # a minute, per worker and per address: counted, never reached
SETTINGS = "benchmarks.load.settings"


class HardTimeout(Exception):
    pass


def main() -> int:
    args = _arguments()
    if args.repeat > 1:
        return repeat(args)
    progress = RunProgress()

    def expire(signum, frame):
        progress.stop.set()
        raise HardTimeout

    signal.signal(signal.SIGALRM, expire)
    signal.alarm(args.timeout)
    try:
        return run(args, progress)
    except HardTimeout:
        print(
            f"\nload benchmark: TIMEOUT — the hard limit of {args.timeout} s was reached while {progress.phase} "
            f"({progress.acknowledged} of {args.submissions} submissions acknowledged in the phases completed). "
            "Nothing is concluded: the server may hang, or this machine is too slow for the size asked; raise "
            "--timeout or lower --submissions.",
            file=sys.stderr,
        )
        return 2
    except (ServerError, ServiceError) as error:
        print(f"load benchmark: could not start: {error}", file=sys.stderr)
        return 2
    finally:
        signal.alarm(0)


def repeat(args: argparse.Namespace) -> int:
    """--repeat N: N whole runs, each in a process of its own with a fresh database and
    server, then their spread. Exit status: the worst of the runs'."""
    command = [sys.executable, __file__, *_without_repeat(sys.argv[1:])]
    figures, status = [], 0
    with tempfile.TemporaryDirectory(prefix="salience-load-repeat-") as workdir:
        for number in range(1, args.repeat + 1):
            print(f"\n===== run {number} of {args.repeat} =====", flush=True)
            summary = Path(workdir) / f"run-{number}.json"
            status = max(status, subprocess.run([*command, "--summary", str(summary)]).returncode)
            if summary.exists():
                figures.append(Figures(**json.loads(summary.read_text())))
    if figures:
        repeats_print(figures)
    return status


def _without_repeat(argv: list[str]) -> list[str]:
    kept, skip = [], False
    for argument in argv:
        if skip:
            skip = False
        elif argument == "--repeat":
            skip = True
        elif not argument.startswith("--repeat="):
            kept.append(argument)
    return kept


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=50, help="simulated workers, each a thread (default 50)")
    parser.add_argument("--submissions", type=int, default=2000, help="HIT submissions in all (default 2000)")
    parser.add_argument("--trivial", type=int, help="trivial requests in all (default: 2 × submissions)")
    parser.add_argument("--duplicates", type=float, default=0.05, help="share of answers sent twice (default 0.05)")
    parser.add_argument("--rounds", type=int, default=4, help="alternations of the two kinds of phase (default 4)")
    parser.add_argument("--server-workers", type=int, default=2, help="gunicorn --workers (default 2)")
    parser.add_argument("--worker-class", choices=("gthread", "sync"), default="gthread", help="(default gthread)")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn --threads for gthread (default 4)")
    parser.add_argument("--timeout", type=int, default=300, help="hard limit on the whole run, seconds (default 300)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=1, help="whole runs, then their spread (default 1)")
    parser.add_argument(
        "--rate-limits",
        action="store_true",
        help="count every submission in Redis as production does, under limits nobody reaches",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        help="cProfile each gunicorn worker's requests into this folder and print them per kind (profiling.py); "
        "the rates of a profiled run mean nothing",
    )
    parser.add_argument("--summary", type=Path, help="write the run's figures here as JSON (used by --repeat)")
    args = parser.parse_args()
    if args.workers < 1 or args.submissions < args.workers or args.rounds < 1 or not 0 <= args.duplicates <= 1:
        parser.error("need workers ≥ 1, submissions ≥ workers, rounds ≥ 1 and 0 ≤ duplicates ≤ 1")
    if args.repeat < 1:
        parser.error("need repeat ≥ 1")
    args.trivial = 2 * args.submissions if args.trivial is None else args.trivial
    if args.trivial < args.workers:
        parser.error("need trivial ≥ workers: each worker's share of the baseline must be measurable")
    return args


def run(args: argparse.Namespace, progress: RunProgress) -> int:
    load_before = os.getloadavg()
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="salience-load-")))
        os.chmod(workdir, 0o755)
        server_url = os.environ.get("DATABASE_URL", "")
        throwaway = not server_url.startswith("postgres")
        if throwaway:
            progress.phase = "starting PostgreSQL"
            (workdir / "pg").mkdir()
            server_url = stack.enter_context(postgres(workdir / "pg"))
        env = _environment(fresh_database(server_url, DATABASE))
        if args.profile:
            args.profile.mkdir(parents=True, exist_ok=True)
            env[profiling.DIRECTORY_VARIABLE] = str(args.profile.resolve())
        if args.rate_limits:
            progress.phase = "starting Redis"
            (workdir / "redis").mkdir()
            env.update(CACHE_URL=stack.enter_context(redis(workdir / "redis")), LOAD_BENCH_RATE_LIMIT=str(RATE_LIMIT))
        os.environ.update(env)  # the same settings here, for the fixtures and the audit

        import django

        django.setup()
        from django.core.management import call_command

        from benchmarks.load import fixtures

        progress.phase = "migrating"
        call_command("migrate", verbosity=0)
        count, needed = tasks_needed(workers=args.workers, submissions=args.submissions)
        tasks = fixtures.campaign_create(tasks=count, assignments_needed=needed)
        jobs = jobs_plan(
            tasks=tasks, workers=args.workers, submissions=args.submissions, duplicates=args.duplicates, seed=args.seed
        )

        progress.phase = "starting gunicorn"
        server = stack.enter_context(
            gunicorn(
                env=env,
                workdir=workdir,
                workers=args.server_workers,
                worker_class=args.worker_class,
                threads=args.threads,
                config=f"python:{profiling.__name__}" if args.profile else None,
            )
        )
        judge = Judge(seed=args.seed)
        clients = [
            SimulatedClient(worker=worker, judge=judge, host=server.host, port=server.port, seed=args.seed)
            for worker in crowd_make(workers=args.workers, spammers=0.0, trap_blind=0.0, seed=args.seed)
        ]
        for client in clients:
            stack.callback(client.close)
        meters = Meters(server.pid, _database_pid(server_url, workdir, throwaway))
        result = rounds_run(
            clients=clients,
            tasks=tasks,
            jobs=jobs,
            trivial=args.trivial,
            rounds=args.rounds,
            meters=meters,
            progress=progress,
        )

        progress.phase = "auditing the database"
        failures = [
            *result.warmup.record.failures,
            *result.trivial.record.failures,
            *result.page.record.failures,
            *result.submit.record.failures,
        ]
        checks = audit(
            outcomes=result.submit.record.outcomes,
            failures=failures,
            stored=fixtures.stored_read(),
            workers=args.workers,
        )
        figures = report_print(
            header=_header(args, server, throwaway, load_before, jobs),
            trivial=result.trivial,
            page=result.page,
            submit=result.submit,
            submissions=progress.acknowledged,
            checks=checks,
        )
        if any(failure.status >= 500 for failure in failures):
            print(f"\ngunicorn's log, last lines ({server.log}):\n{server.log_tail()}")
        figures.load_before, figures.load_after = load_before[0], os.getloadavg()[0]
        print(f"load average (1 min): {figures.load_before:.2f} before the run, {figures.load_after:.2f} after")
        if args.profile:
            stack.close()  # gunicorn's workers write their profiles as they exit
            profiling.profiles_print(args.profile)
        if args.summary:
            args.summary.write_text(json.dumps(dataclasses.asdict(figures)))
        else:
            print(json.dumps(dataclasses.asdict(figures)))
        return 0 if figures.correct else 1


def _database_pid(server_url: str, workdir: Path, throwaway: bool) -> int | None:
    """PostgreSQL's postmaster when it runs on this machine: this run's own server, or the one
    `tests.services run` started on a loopback port; None for any other (its CPU is not shown)."""
    if throwaway:
        return postgres_pid(workdir / "pg" / "pgdata")
    address = urlsplit(server_url)
    return postgres_pid(port=address.port or 5432) if address.hostname in ("127.0.0.1", "localhost") else None


def _environment(database_url: str) -> dict[str, str]:
    """Production mode on plain-HTTP loopback: the clients say, as a TLS proxy would, that
    the request came over HTTPS (SECURE_PROXY_SSL_HEADER), so nothing is redirected."""
    env = dict(os.environ)
    env.pop("CELERY_BROKER_URL", None)  # nothing here enqueues; keep Celery eager regardless
    env.update(
        DJANGO_SETTINGS_MODULE=SETTINGS,
        DATABASE_URL=database_url,
        SALIENCE_ENV="production",
        DEBUG="False",
        SECRET_KEY=secrets.token_urlsafe(50),
        MTURK_ENVIRONMENT="sandbox",
        ALLOWED_HOSTS="127.0.0.1",
    )
    return env


def _header(args, server: Server, throwaway: bool, load_before, jobs: list[list[Job]]) -> list[str]:
    from django.conf import settings
    from django.db import connection

    database = settings.DATABASES["default"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('fsync'), current_setting('synchronous_commit'), version()")
        fsync, synchronous_commit, version = cursor.fetchone()
    duplicates = Counter(job.duplicate for own in jobs for job in own if job.duplicate)
    cache = settings.CACHES["default"]["BACKEND"].rsplit(".", 1)[-1]
    counters = settings.CACHES["ratelimit"]["BACKEND"].rsplit(".", 1)[-1]
    origin = "throw-away server (tests/services.py)" if throwaway else "server of DATABASE_URL"
    return [
        f"Load benchmark: {args.workers} simulated workers, {args.submissions} HIT submissions (GET page, "
        f"POST answer), {duplicates[RETRY]} answers re-sent after the reply and {duplicates[RACE]} at the same "
        f"time; {args.trivial} trivial requests; {args.rounds} rounds of both, alternating",
        f"server: {server.description}, access log to a file",
        f"settings: {SETTINGS} (config.settings + /trivial/): SALIENCE_ENV={settings.SALIENCE_ENV}, "
        f"DEBUG={settings.DEBUG}, CONN_MAX_AGE={database['CONN_MAX_AGE']}, "
        f"CONN_HEALTH_CHECKS={database['CONN_HEALTH_CHECKS']}, cache {cache}, "
        f"SECURE_SSL_REDIRECT={settings.SECURE_SSL_REDIRECT} (clients send X-Forwarded-Proto: https), "
        f"submission rate limits {settings.SUBMIT_RATE_PER_WORKER}/{settings.SUBMIT_RATE_PER_ADDRESS} (0: off), "
        f"counted in {counters}",
        f"database: {version.split(' on ')[0]}, {origin}, fresh database {DATABASE}; "
        f"fsync={fsync}, synchronous_commit={synchronous_commit}",
        f"client: this process, {args.workers} threads on http.client keep-alive connections; machine: "
        f"{os.cpu_count()} CPUs, load average {load_before[0]:.2f} before the run",
    ]


if __name__ == "__main__":
    sys.exit(main())
