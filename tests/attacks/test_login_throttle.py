"""F13 (issue 15) and N2 (issue 24): 30 wrong passwords in a row on /api/auth/token/, and 60 on
/admin/login/, were all answered. Now failed logins on the token endpoint, the dashboard
login and the admin's login are counted per client address and per
username from that address (config/login_throttle.py); over a limit the answer is 429 with
Retry-After, whatever the password, until the window ends. A right password from another
address still works, a successful login counts nothing, and the count starts again in the
next window.

Over HTTP with Django's test client; the clock the throttle reads is moved by hand, so no test
waits for a window to pass.
"""

import time

import pytest
import redis
from django.core.cache import caches
from django.test import Client

from config import login_throttle
from tests.services import free_port, redis_database

pytestmark = [pytest.mark.attacks, pytest.mark.rate_limits, pytest.mark.django_db]

PASSWORD = "pw-for-tests-only"
ATTACKER = "198.51.100.7"
ELSEWHERE = "203.0.113.9"
TOKEN = "/api/auth/token/"
LOGIN = "/accounts/login/"
ADMIN_LOGIN = "/admin/login/"
ENDPOINTS = {
    "token endpoint": (TOKEN, 400, 200),
    "dashboard login": (LOGIN, 200, 302),
    "admin login": (ADMIN_LOGIN, 200, 302),  # issue 24, N2
}


class Clock:
    """Stands in for the `time` module the throttle reads."""

    def __init__(self):
        self.now = time.time()

    def time(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def _fresh(settings):
    caches["ratelimit"].clear()
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # 30 logins in a test


@pytest.fixture
def clock(monkeypatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(login_throttle, "time", fake)
    return fake


@pytest.fixture
def limits(settings):
    settings.LOGIN_FAILURES_PER_USERNAME = 5
    settings.LOGIN_FAILURES_PER_ADDRESS = 20
    # Long enough that the counters' cache expiry (real time: the fake clock does not reach the
    # cache) never falls inside a test on a loaded machine; the fake clock moves windows on.
    settings.LOGIN_FAILURE_WINDOW_SECONDS = 60
    return settings


@pytest.fixture
def researcher(django_user_model):
    return django_user_model.objects.create_user("ada", password=PASSWORD, is_staff=True)  # the admin's too


def attempt(address: str, url: str, username: str, password: str):
    return Client(REMOTE_ADDR=address).post(url, {"username": username, "password": password})


@pytest.mark.parametrize(("url", "refused", "accepted"), ENDPOINTS.values(), ids=ENDPOINTS.keys())
def test_30_wrong_passwords_are_throttled_after_the_limit(limits, researcher, clock, url, refused, accepted):
    answers = [attempt(ATTACKER, url, "ada", f"guess-{n}") for n in range(30)]

    assert [answer.status_code for answer in answers] == [refused] * 5 + [429] * 25
    assert all(1 <= int(answer["Retry-After"]) <= limits.LOGIN_FAILURE_WINDOW_SECONDS for answer in answers[5:])
    assert attempt(ATTACKER, url, "ada", PASSWORD).status_code == 429  # the right one too: no oracle
    assert attempt(ELSEWHERE, url, "ada", PASSWORD).status_code == accepted


def test_the_token_endpoints_refusal_says_when_to_retry(limits, researcher, clock):
    for n in range(5):
        attempt(ATTACKER, TOKEN, "ada", f"guess-{n}")

    answer = attempt(ATTACKER, TOKEN, "ada", "guess-5")

    assert answer.status_code == 429
    assert answer.json() == {
        "code": "login_throttled",
        "message": f"Too many failed logins from this address: wait {answer['Retry-After']} seconds before "
        "trying again.",
    }


def test_the_dashboard_refusal_is_the_login_page_with_the_reason(limits, researcher, clock):
    for n in range(5):
        attempt(ATTACKER, LOGIN, "ada", f"guess-{n}")

    answer = attempt(ATTACKER, LOGIN, "ada", "guess-5")

    assert answer.status_code == 429
    page = answer.content.decode()
    assert "Too many failed logins from this address: wait" in page and 'name="password"' in page


def test_the_admin_refusal_is_the_admin_login_page_with_the_reason(limits, researcher, clock):
    """N2 (issue 24): 60 wrong superuser passwords on /admin/login/ were all answered."""
    for n in range(5):
        attempt(ATTACKER, ADMIN_LOGIN, "ada", f"guess-{n}")

    answer = attempt(ATTACKER, ADMIN_LOGIN, "ada", PASSWORD)

    assert answer.status_code == 429 and 1 <= int(answer["Retry-After"]) <= limits.LOGIN_FAILURE_WINDOW_SECONDS
    page = answer.content.decode()
    assert "Too many failed logins from this address: wait" in page and 'name="password"' in page
    assert "_auth_user_id" not in answer.wsgi_request.session


def test_the_three_logins_share_one_count(limits, researcher, clock):
    """One rule, one count: failures on any login form use up the same budget."""
    for n, url in enumerate([TOKEN, LOGIN, ADMIN_LOGIN, TOKEN, LOGIN]):
        attempt(ATTACKER, url, "ada", f"guess-{n}")

    assert attempt(ATTACKER, ADMIN_LOGIN, "ada", PASSWORD).status_code == 429


@pytest.mark.parametrize(("url", "refused", "accepted"), ENDPOINTS.values(), ids=ENDPOINTS.keys())
def test_one_address_trying_many_usernames_is_throttled_too(limits, researcher, clock, url, refused, accepted):
    answers = [attempt(ATTACKER, url, f"user-{n}", "guess") for n in range(30)]

    assert [answer.status_code for answer in answers] == [refused] * 20 + [429] * 10
    assert attempt(ELSEWHERE, url, "ada", PASSWORD).status_code == accepted


@pytest.mark.parametrize(("url", "refused", "accepted"), ENDPOINTS.values(), ids=ENDPOINTS.keys())
def test_successful_logins_count_nothing(limits, researcher, clock, url, refused, accepted):
    assert [attempt(ATTACKER, url, "ada", PASSWORD).status_code for _ in range(10)] == [accepted] * 10
    assert [attempt(ATTACKER, url, "ada", "guess").status_code for _ in range(6)] == [refused] * 5 + [429]


@pytest.mark.parametrize(("url", "refused", "accepted"), ENDPOINTS.values(), ids=ENDPOINTS.keys())
def test_the_limit_resets_after_the_window(limits, researcher, clock, url, refused, accepted):
    assert [attempt(ATTACKER, url, "ada", "guess").status_code for _ in range(6)] == [refused] * 5 + [429]

    clock.now += limits.LOGIN_FAILURE_WINDOW_SECONDS

    assert attempt(ATTACKER, url, "ada", PASSWORD).status_code == accepted
    assert attempt(ATTACKER, url, "ada", "guess").status_code == refused


@pytest.mark.parametrize(("url", "refused", "accepted"), ENDPOINTS.values(), ids=ENDPOINTS.keys())
def test_the_default_settings_throttle_the_attack(researcher, clock, url, refused, accepted):
    """The defaults (config/settings.py): 10 failures per username from one address."""
    answers = [attempt(ATTACKER, url, "ada", f"guess-{n}") for n in range(30)]

    assert [answer.status_code for answer in answers] == [refused] * 10 + [429] * 20


def test_a_body_that_is_no_object_is_a_failure_not_a_500(limits, researcher, clock):
    client = Client(REMOTE_ADDR=ATTACKER)

    answers = [client.post(TOKEN, "[1, 2]", content_type="application/json").status_code for _ in range(6)]

    assert answers == [400] * 5 + [429]


def test_with_the_cache_down_logins_fail_open(limits, researcher, settings):
    settings.CACHES = {
        **settings.CACHES,
        "ratelimit": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
        },
    }

    answers = [attempt(ATTACKER, TOKEN, "ada", f"guess-{n}").status_code for n in range(8)]

    assert answers == [400] * 8  # not counted, not refused: a Redis restart locks nobody out
    assert attempt(ATTACKER, TOKEN, "ada", PASSWORD).status_code == 200


def test_with_redis_the_counts_are_shared_and_expire(limits, researcher, clock, settings, redis_url):
    url = redis_database(redis_url, 5)
    server = redis.Redis.from_url(url)
    server.flushdb()
    settings.CACHES = {
        **settings.CACHES,
        "ratelimit": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url},
    }

    answers = [attempt(ATTACKER, TOKEN, "ada", f"guess-{n}").status_code for n in range(7)]

    assert answers == [400] * 5 + [429] * 2
    keys = server.keys("salience:login:*")
    assert len(keys) == 2 and all(int(server.get(key)) == 5 for key in keys)
    assert all(0 < server.ttl(key) <= 2 * limits.LOGIN_FAILURE_WINDOW_SECONDS for key in keys)
    assert attempt(ELSEWHERE, TOKEN, "ada", PASSWORD).status_code == 200
    server.flushdb()
