"""How fast the worker's HIT page renders and a submission is stored, beside a trivial view.

    .venv/bin/python benchmarks/hit_page_bench.py [--requests 1000]

Runs twice, each in a child process on a fresh, migrated database: an SQLite file, then
PostgreSQL (on the server of DATABASE_URL when it names one, as under `make bench`; else on
a throw-away server from tests/services.py). The children run with production's settings
(SALIENCE_ENV=production, config/settings.py; the connection settings are printed) and
HTTPS requests. Django's test client drives the whole middleware stack, without a network;
around each request the benchmark does what a WSGI server's request signals do
(close_old_connections), which the test client leaves out, so opening, keeping and
health-checking connections cost what they cost in production. The five kinds of request are
interleaved, so slow moments of the machine hit all of them alike. Targets (issue 9): the
page within 3x the trivial view's median, a submission (one transaction: assignment plus
its labels) within 10x. The tasks' batches are never published, so the event report
(crowd.work.events) costs the answers nothing beyond their one statement; the load benchmark's
batch is published (benchmarks/load).
"""

import argparse
import secrets
import statistics
import subprocess
import sys
import time
import types
import warnings
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._harness import ROOT, child_environment, django_setup, percentile, postgres_server, workdir_made

# WhiteNoise notes the missing collectstatic folder; static files play no part here.
warnings.filterwarnings("ignore", message="No directory at")
django_setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import close_old_connections, connection  # noqa: E402
from django.http import HttpResponse  # noqa: E402
from django.test import Client, override_settings  # noqa: E402
from django.test.utils import setup_test_environment, teardown_test_environment  # noqa: E402
from django.urls import include, path  # noqa: E402

from annotation.models import Batch, Campaign, Proposition, Task, TaskItem, Topic  # noqa: E402
from crowd.hit_page.tokens import submit_token_make  # noqa: E402
from crowd.models import Assignment, Worker  # noqa: E402

TURK_SUBMIT_TO = "https://workersandbox.mturk.com"
FORM = "application/x-www-form-urlencoded"
TARGETS = {"page": 3.0, "submit": 10.0}


def trivial(request):
    return HttpResponse("ok")


# The site's own URLs plus the trivial view, so both go through the same resolver and middleware.
URLCONF = "hit_page_bench_urls"
sys.modules[URLCONF] = types.ModuleType(URLCONF)
sys.modules[URLCONF].urlpatterns = [path("trivial/", trivial), path("", include("config.urls"))]


def tasks_create() -> dict[str, Task]:
    campaign = Campaign.objects.create(name="Bench", slug="bench")
    topic = Topic.objects.create(campaign=campaign, key="t", description="student loans without credit history")
    tasks = {}
    for number, kind in enumerate(Batch.Kind.values):
        batch = Batch.objects.create(topic=topic, kind=kind, number=number)
        task = Task.objects.create(batch=batch, kind=kind)
        for position in range(5):
            text = f"Lender {kind} {position} offers loans to students with no credit record"
            proposition = Proposition.objects.create(topic=topic, subject=text, normalized=text.lower())
            TaskItem.objects.create(task=task, proposition=proposition, position=position)
        tasks[kind] = task
    return tasks


def answer(task: Task) -> dict[str, str]:
    ids = list(task.items.order_by("position").values_list("proposition_id", flat=True))
    if task.kind == Batch.Kind.LIKERT:
        return {f"rating-{pid}": str(1 + index % 5) for index, pid in enumerate(ids)}
    return {"order": ",".join(str(pid) for pid in reversed(ids))}


def timed(call) -> float:
    start = time.perf_counter()
    close_old_connections()  # request_started
    response = call()
    close_old_connections()  # request_finished
    elapsed = time.perf_counter() - start
    if response.status_code != 200:
        raise SystemExit(f"unexpected {response.status_code}: {response.content[:300]!r}")
    return elapsed * 1000


def run(requests: int, warmup: int) -> dict[str, list[float]]:
    tasks = tasks_create()
    client = Client()
    names = ("trivial", "likert page", "comparison page", "likert submit", "comparison submit")
    samples: dict[str, list[float]] = {name: [] for name in names}
    answers = {kind: answer(task) for kind, task in tasks.items()}
    # Returning workers: their rows exist, so the page's eligibility query finds them.
    Worker.objects.bulk_create(Worker(external_id=f"W{i:07d}") for i in range(warmup + requests))

    for i in range(warmup + requests):
        worker, record = f"W{i:07d}", i >= warmup
        # Each worker from an address of their own, over HTTPS, as on MTurk (the rate limits
        # count per address, config/security.py).
        https = {"secure": True, "REMOTE_ADDR": f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}"}
        times = {"trivial": timed(lambda https=https: client.get("/trivial/", **https))}
        for kind, task in tasks.items():
            assignment = f"A{kind[0]}{i:07d}"
            query = {"assignmentId": assignment, "hitId": "HIT", "workerId": worker, "turkSubmitTo": TURK_SUBMIT_TO}
            # Browsers send the query string and post forms url-encoded (the test client
            # would encode a dict inside the timing, and post it multipart).
            page_url = f"/hit/{task.uuid}/?{urlencode(query)}"
            times[f"{kind} page"] = timed(lambda page_url=page_url, https=https: client.get(page_url, **https))
            token = submit_token_make(task_uuid=task.uuid, assignment_id=assignment, worker_id=worker)
            body = urlencode({**query, "token": token, "elapsed_ms": "30000", **answers[kind]})
            submit_url = f"/hit/{task.uuid}/submit/"
            times[f"{kind} submit"] = timed(
                lambda submit_url=submit_url, body=body, https=https: client.post(
                    submit_url, body, content_type=FORM, **https
                )
            )
        if record:
            for name, value in times.items():
                samples[name].append(value)
    stored = Assignment.objects.count()
    assert stored == 2 * (warmup + requests), stored
    return samples


def report(samples: dict[str, list[float]], requests: int) -> bool:
    database = connection.settings_dict
    print(f"HIT page benchmark: Django test client, {connection.vendor}, {requests} requests each, interleaved")
    print(
        f"settings: SALIENCE_ENV={settings.SALIENCE_ENV}, DEBUG={settings.DEBUG}, "
        f"CONN_MAX_AGE={database['CONN_MAX_AGE']}, CONN_HEALTH_CHECKS={database['CONN_HEALTH_CHECKS']}"
    )
    print(f"{'':<20}{'median ms':>10}{'p99 ms':>10}{'median ×':>10}{'p99 ×':>8}   target")
    base_median = statistics.median(samples["trivial"])
    base_p99 = percentile(samples["trivial"], 99)
    met = True
    for name, values in samples.items():
        median, p99 = statistics.median(values), percentile(values, 99)
        ratio = median / base_median
        target = TARGETS.get(name.split()[-1])
        verdict = ""
        if target is not None:
            ok = ratio <= target
            met &= ok
            verdict = f"≤ {target:g}×  {'met' if ok else 'MISSED'}"
        print(f"{name:<20}{median:>10.3f}{p99:>10.3f}{ratio:>9.2f}×{p99 / base_p99:>7.2f}×   {verdict}")
    print("targets met" if met else "a target was missed (figures above)")
    return met


def measure(requests: int, warmup: int) -> None:
    """On the empty database DATABASE_URL names: runs in a child process."""
    call_command("migrate", verbosity=0)
    setup_test_environment(debug=False)  # as in production: no query log (None keeps DEBUG)
    try:
        with override_settings(ROOT_URLCONF=URLCONF):
            samples = run(requests, warmup)
    finally:
        teardown_test_environment()
    report(samples, requests)


def child_run(database_url: str, args: argparse.Namespace) -> None:
    production = {"SALIENCE_ENV": "production", "SECRET_KEY": secrets.token_urlsafe(50), "MTURK_ENVIRONMENT": "sandbox"}
    env = child_environment(database_url, **production)
    command = [sys.executable, __file__, "--child", "--requests", str(args.requests), "--warmup", str(args.warmup)]
    subprocess.run(command, env=env, check=True, cwd=ROOT)
    print(flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--child", action="store_true", help="measure the database DATABASE_URL names, only")
    args = parser.parse_args()
    if args.child:
        measure(args.requests, args.warmup)
        return 0
    from tests.services import fresh_database

    with workdir_made() as workdir:
        child_run(f"sqlite:///{workdir / 'hit_page_bench.sqlite3'}", args)
        with postgres_server(workdir, reuse=True) as server_url:
            child_run(fresh_database(server_url, "hit_page_bench"), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
