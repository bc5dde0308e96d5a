"""Security headers, rate limits on worker submissions, and Django's deployment checks."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from django.core.cache import caches
from django.test import Client

from config.security import WINDOW_SECONDS
from crowd.hit_page.tokens import submit_token_digest, submit_token_make
from crowd.models import Assignment
from tests.factories import BatchFactory, PropositionFactory, TaskFactory, TopicFactory
from tests.services import free_port, redis_database

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _fresh_counters():
    caches["ratelimit"].clear()
    caches["default"].clear()


def test_every_page_has_a_content_security_policy(client, db):
    login = client.get("/accounts/login/")
    docs = client.get("/api/docs/")

    policy = login["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy and "'unsafe-inline'" not in policy
    assert login["X-Frame-Options"] == "DENY"
    assert "style-src 'self' 'unsafe-inline'" in docs["Content-Security-Policy"]  # Swagger UI's own styles
    assert "script-src 'self';" in docs["Content-Security-Policy"]


def test_hit_pages_keep_their_own_policy(client, db):
    task = TaskFactory(propositions=PropositionFactory.create_batch(5))

    page = client.get(f"/hit/{task.uuid}/?assignmentId=A1&hitId=H1&workerId=W1")

    assert (
        "frame-ancestors 'self' https://workersandbox.mturk.com https://worker.mturk.com"
        in (page["Content-Security-Policy"])
    )
    assert "X-Frame-Options" not in page


@pytest.mark.rate_limits
def test_the_default_limits_allow_a_fast_person(task):
    """30 a minute per worker: a HIT every 2 seconds, far faster than anyone can read five statements."""
    client = Client()
    statuses = [_submit(client, task, "W1", f"A{n}").status_code for n in range(30)]
    assert 429 not in statuses


def _submit(client, task, worker, assignment, address="203.0.113.7", token=""):
    fields = {"assignmentId": assignment, "workerId": worker, "hitId": "H1", "token": token}
    return client.post(f"/hit/{task.uuid}/submit/", fields, REMOTE_ADDR=address, HTTP_ACCEPT="application/json")


@pytest.fixture
def task(db):
    topic = TopicFactory()
    return TaskFactory(batch=BatchFactory(topic=topic), propositions=PropositionFactory.create_batch(5, topic=topic))


@pytest.mark.rate_limits
def test_a_worker_over_the_limit_gets_429_with_retry_after(settings, task):
    """Counted per submitter: the signed token of the page that posts (worker ids are not secret)."""
    settings.SUBMIT_RATE_PER_WORKER = 2
    client = Client()
    page = submit_token_make(task_uuid=task.uuid, assignment_id="A1", worker_id="W1")

    answers = [_submit(client, task, "W1", "A1", token=page) for n in range(3)]
    other = _submit(
        client, task, "W2", "B1", token=submit_token_make(task_uuid=task.uuid, assignment_id="B1", worker_id="W2")
    )

    assert [a.status_code for a in answers[:2]] != [429, 429]  # refused on their merits (an empty answer)
    assert answers[2].status_code == 429 and int(answers[2]["Retry-After"]) > 0
    assert "was not saved" in answers[2].json()["message"] and answers[2].json()["code"] == "rate_limited"
    assert other.status_code != 429  # another worker is not held up
    assert not Assignment.objects.exists()


@pytest.mark.rate_limits
def test_an_address_over_the_limit_gets_429(settings, task):
    settings.SUBMIT_RATE_PER_ADDRESS = 3
    client = Client()

    statuses = [_submit(client, task, f"W{n}", f"A{n}").status_code for n in range(4)]
    elsewhere = _submit(client, task, "W9", "A9", address="198.51.100.1").status_code

    assert statuses[3] == 429 and 429 not in statuses[:3]
    assert elsewhere != 429


@pytest.fixture
def redis_counters(settings, redis_url):
    """The rate-limit counters in a real Redis (its database 5, emptied), as with CACHE_URL=redis://…"""
    url = redis_database(redis_url, 5)
    server = redis.Redis.from_url(url)
    server.flushdb()
    settings.CACHES = {
        **settings.CACHES,
        "ratelimit": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url},
    }
    yield server
    server.flushdb()


@pytest.mark.rate_limits
def test_with_redis_both_limits_are_counted_in_one_round_trip_and_expire(settings, task, redis_counters):
    settings.SUBMIT_RATE_PER_WORKER = 2
    client = Client()
    page = submit_token_make(task_uuid=task.uuid, assignment_id="A1", worker_id="W1")

    statuses = [_submit(client, task, "W1", "A1", token=page).status_code for _ in range(3)]

    assert statuses[2] == 429 and 429 not in statuses[:2]
    window = int(time.time() // WINDOW_SECONDS)
    submitter = submit_token_digest(token=page, task_uuid=task.uuid)
    worker_key = f"salience:rate:submitter:{submitter}:{window}"
    address_key = f"salience:rate:address:203.0.113.7:{window}"
    assert int(redis_counters.get(worker_key)) == 3 and int(redis_counters.get(address_key)) == 3
    assert 0 < redis_counters.ttl(worker_key) <= 2 * WINDOW_SECONDS  # the window's counter goes away


@pytest.mark.rate_limits
def test_with_redis_down_the_limits_fail_open(settings, task):
    settings.SUBMIT_RATE_PER_WORKER = 1
    settings.CACHES = {
        **settings.CACHES,
        "ratelimit": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
        },
    }
    client = Client()

    assert 429 not in {_submit(client, task, "W1", f"A{n}").status_code for n in range(3)}


@pytest.mark.rate_limits
def test_limits_can_be_turned_off(settings, task):
    settings.SUBMIT_RATE_PER_WORKER = 0
    settings.SUBMIT_RATE_PER_ADDRESS = 0
    client = Client()

    assert 429 not in {_submit(client, task, "W1", f"A{n}").status_code for n in range(40)}


@pytest.mark.rate_limits
def test_the_rate_limited_page_can_be_shown_in_mturks_frame(settings, task):
    settings.SUBMIT_RATE_PER_WORKER = 1
    client = Client()
    token = submit_token_make(task_uuid=task.uuid, assignment_id="A1", worker_id="W1")
    _submit(client, task, "W1", "A1", token=token)

    page = client.post(
        f"/hit/{task.uuid}/submit/",
        {"assignmentId": "A1", "workerId": "W1", "token": token},
        REMOTE_ADDR="203.0.113.7",
    )

    assert page.status_code == 429 and b"Please wait a moment" in page.content
    assert "https://worker.mturk.com" in page["Content-Security-Policy"] and "X-Frame-Options" not in page


def _production_env(**extra) -> dict:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DATABASE_URL", "SALIENCE_", "MTURK_", "PROLIFIC_", "DJANGO_"))
    }
    env.update(
        SALIENCE_ENV="production",
        SECRET_KEY="k3Q-9vLx!p2Rz7Tg#w8Yb1Nc5Hd0Jf4Ms6Ea_Uo+Ci2Vr9Xl-fake-for-tests-only",
        DATABASE_URL="postgres://salience:unused@127.0.0.1:1/salience",
        MTURK_ENVIRONMENT="sandbox",
        ALLOWED_HOSTS="tasks.example.org",
        SITE_URL="https://tasks.example.org",
        **extra,
    )
    return env


def test_check_deploy_is_clean_with_production_settings():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=_production_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_error_pages_show_no_settings_or_secrets():
    script = (
        "import django; django.setup();"
        "from django.conf import settings; from django.test import Client;"
        "r = Client(SERVER_NAME='tasks.example.org').get('/no-such-page/', secure=True);"
        "body = r.content.decode();"
        "print(r.status_code, settings.DEBUG, settings.SECRET_KEY in body, 'Traceback' in body, 'DATABASE' in body)"
    )
    env = _production_env(DJANGO_SETTINGS_MODULE="config.settings")

    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )

    assert result.stdout.split() == ["404", "False", "False", "False", "False"], result.stdout + result.stderr


@pytest.mark.rate_limits
@pytest.mark.parametrize("per_worker, digests", [(0, 0), (5, 3)])
def test_the_token_is_read_only_for_a_limit_that_counts_it(settings, task, monkeypatch, per_worker, digests):
    """With the per-worker limit off, the address is still counted but the form is not parsed
    and the token's signature not checked before the view does it (benchmarks/load)."""
    from config import hit_hooks

    settings.SUBMIT_RATE_PER_WORKER = per_worker
    settings.SUBMIT_RATE_PER_ADDRESS = 2
    calls = []
    digest = hit_hooks._token_digest
    monkeypatch.setattr(hit_hooks, "_token_digest", lambda **kwargs: calls.append(kwargs) or digest(**kwargs))
    client = Client()
    page = submit_token_make(task_uuid=task.uuid, assignment_id="A1", worker_id="W1")

    statuses = [_submit(client, task, "W1", "A1", token=page).status_code for _ in range(3)]

    assert statuses[2] == 429 and 429 not in statuses[:2]
    assert len(calls) == digests
