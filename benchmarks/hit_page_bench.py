"""How fast the worker's HIT page renders and a submission is stored, beside a trivial view.

    .venv/bin/python benchmarks/hit_page_bench.py [--requests 1000]

Django's test client (the whole middleware stack, no network) against its own test database:
PostgreSQL when DATABASE_URL is set (`make bench` starts one), else SQLite. The database is
created and dropped here. The five kinds of request are interleaved, so slow moments of the
machine hit all of them alike. Targets (issue 9): the page within 3x the trivial view's
median, a submission (one transaction: assignment plus its labels) within 10x.
"""

import argparse
import os
import statistics
import sys
import time
import types
import warnings
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# WhiteNoise notes the missing collectstatic folder; static files play no part here.
warnings.filterwarnings("ignore", message="No directory at")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.http import HttpResponse  # noqa: E402
from django.test import Client, override_settings  # noqa: E402
from django.test.utils import setup_test_environment, teardown_test_environment  # noqa: E402
from django.urls import include, path  # noqa: E402

from annotation.models import Batch, Campaign, Proposition, Task, TaskItem, Topic  # noqa: E402
from annotation.tokens import submit_token_make  # noqa: E402
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
    response = call()
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
        times = {"trivial": timed(lambda: client.get("/trivial/"))}
        for kind, task in tasks.items():
            assignment = f"A{kind[0]}{i:07d}"
            query = {"assignmentId": assignment, "hitId": "HIT", "workerId": worker, "turkSubmitTo": TURK_SUBMIT_TO}
            times[f"{kind} page"] = timed(lambda: client.get(f"/hit/{task.uuid}/", query))
            token = submit_token_make(task_uuid=task.uuid, assignment_id=assignment, worker_id=worker)
            form = {**query, "token": token, "elapsed_ms": "30000", **answers[kind]}
            # Browsers post forms url-encoded (the test client's default is multipart).
            body = urlencode(form)
            times[f"{kind} submit"] = timed(lambda: client.post(f"/hit/{task.uuid}/submit/", body, content_type=FORM))
        if record:
            for name, value in times.items():
                samples[name].append(value)
    stored = Assignment.objects.count()
    assert stored == 2 * (warmup + requests), stored
    return samples


def report(samples: dict[str, list[float]], requests: int) -> bool:
    database = connection.vendor + (" (in-memory test database)" if connection.vendor == "sqlite" else "")
    print(f"HIT page benchmark: Django test client, {database}, {requests} requests each, interleaved")
    print(f"{'':<20}{'median ms':>10}{'p99 ms':>10}{'median ×':>10}{'p99 ×':>8}   target")
    base_median = statistics.median(samples["trivial"])
    base_p99 = _p99(samples["trivial"])
    met = True
    for name, values in samples.items():
        median, p99 = statistics.median(values), _p99(values)
        ratio = median / base_median
        target = TARGETS.get(name.split()[-1])
        verdict = ""
        if target is not None:
            ok = ratio <= target
            met &= ok
            verdict = f"≤ {target:g}×  {'met' if ok else 'MISSED'}"
        print(f"{name:<20}{median:>10.3f}{p99:>10.3f}{ratio:>9.2f}×{p99 / base_p99:>7.2f}×   {verdict}")
    return met


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args()

    setup_test_environment(debug=False)  # as in production: no query log (None keeps DEBUG)
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        with override_settings(ROOT_URLCONF=URLCONF):
            samples = run(args.requests, args.warmup)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
        teardown_test_environment()
    met = report(samples, args.requests)
    print("targets met" if met else "a target was missed (figures above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
