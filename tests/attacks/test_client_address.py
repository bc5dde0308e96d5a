"""F6 (issue 15): production trusted X-Forwarded-For by default while docker-compose published
gunicorn with no proxy in front, so a client that rotated the header's last entry sent 650
posts with no 429. Now the header is read only through TRUSTED_PROXY_HOPS proxies of ours
(0 by default: REMOTE_ADDR only; config/client_address.py), and docker-compose puts nginx
(deploy/nginx.conf) in front of gunicorn with one hop.

Over HTTP: Debian's nginx runs the repository's config (only the upstream, the port and the
run's paths replaced) in front of the test's live server. A client rotating its own
X-Forwarded-For through nginx is refused after the per-address limit, because the entry nginx
appends is the one counted; a client that reaches the app directly with no trusted hop cannot
move its count with a forged header at all. The limiter's clock is held still, so no run
straddles a window.
"""

import http.client
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
import yaml
from django.core.cache import caches

from config import login_throttle, security
from config.client_address import address_from_forwarded, client_address
from tests.attacks.deployment import nginx_binary_required, nginx_command, nginx_config, nginx_running, workdir
from tests.factories import PropositionFactory, TaskFactory
from tests.services import free_port
from tests.test_security import _production_env

pytestmark = [pytest.mark.attacks, pytest.mark.rate_limits]

ROOT = Path(__file__).resolve().parents[2]
NGINX_CONF = ROOT / "deploy" / "nginx.conf"
LIMIT = 5
FLOOD = 12


# --- The hop rule -----------------------------------------------------------------------

RULE = {
    "no hop: the header is ignored": ("198.51.100.1, 203.0.113.9", 0, "10.0.0.2"),
    "one hop: the entry our proxy appended": ("198.51.100.1, 203.0.113.9", 1, "203.0.113.9"),
    "two hops: the outer proxy's entry": ("198.51.100.1, 203.0.113.9, 10.0.0.7", 2, "203.0.113.9"),
    "what the client wrote is left of it": ("1.1.1.1, 2.2.2.2, 3.3.3.3, 203.0.113.9", 1, "203.0.113.9"),
    "no header: the TCP peer": ("", 1, "10.0.0.2"),
    "fewer entries than hops: the TCP peer": ("203.0.113.9", 2, "10.0.0.2"),
    "not an address: the TCP peer": ("198.51.100.1, unknown", 1, "10.0.0.2"),
    "an empty entry: the TCP peer": ("198.51.100.1, ", 1, "10.0.0.2"),
    "IPv6, spaces trimmed": ("198.51.100.1,  2001:db8::1 ", 1, "2001:db8::1"),
}


@pytest.mark.parametrize(("forwarded", "hops", "expected"), RULE.values(), ids=RULE.keys())
def test_the_client_is_the_entry_the_outermost_trusted_proxy_appended(forwarded, hops, expected):
    assert address_from_forwarded(forwarded_for=forwarded, remote_addr="10.0.0.2", hops=hops) == expected


def test_both_limits_read_the_one_client_address_function():
    assert login_throttle.client_address is client_address
    assert security.client_address is client_address


# --- Settings and the deployment ---------------------------------------------------------


def _settings_in_production(**extra) -> subprocess.CompletedProcess:
    """config/settings.py read in a process of production's environment: the settings module
    only (what these tests read), not the apps, whose import is seconds of CPU a process."""
    script = "from django.conf import settings; print(settings.TRUSTED_PROXY_HOPS)"
    env = _production_env(DJANGO_SETTINGS_MODULE="config.settings")
    for name in ("TRUSTED_PROXY_HOPS", "RATE_LIMIT_TRUST_FORWARDED_FOR"):
        env.pop(name, None)
    env.update(extra)
    return subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_production_trusts_no_forwarded_header_unless_told_how_many_proxies():
    assert _settings_in_production().stdout.strip() == "0"
    assert _settings_in_production(TRUSTED_PROXY_HOPS="1").stdout.strip() == "1"


def test_the_old_switch_is_refused_with_what_to_set_instead():
    result = _settings_in_production(RATE_LIMIT_TRUST_FORWARDED_FOR="true")

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "set TRUSTED_PROXY_HOPS" in result.stderr


def test_compose_reaches_gunicorn_only_through_nginx_with_one_hop():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    web, proxy = compose["services"]["web"], compose["services"]["nginx"]

    assert "ports" not in web  # nobody can skip the hop the app trusts
    assert web["environment"]["TRUSTED_PROXY_HOPS"] == "${TRUSTED_PROXY_HOPS:-1}"
    assert proxy["image"].startswith("nginx:") and proxy["image"].endswith("-alpine")
    assert proxy["image"].split(":")[1][0].isdigit()  # a pinned version, not latest or stable
    assert "./deploy/nginx.conf:/etc/nginx/nginx.conf:ro" in proxy["volumes"]
    assert proxy["ports"] == ["8000:80"]


# --- nginx in front of the live server ---------------------------------------------------


@pytest.fixture
def nginx_workdir() -> Iterator[Path]:
    with workdir() as path:
        yield path


def test_the_shipped_config_passes_nginx_t(nginx_workdir):
    config = nginx_config(upstream="127.0.0.1:8000", port=free_port(), workdir=nginx_workdir)

    result = subprocess.run(
        nginx_command(nginx_binary_required(), config, nginx_workdir, test=True),
        capture_output=True,
        text=True,
        timeout=30,
    )

    assert result.returncode == 0, result.stderr
    assert "test is successful" in result.stderr


@pytest.fixture
def nginx(live_server, nginx_workdir) -> Iterator[int]:
    """Debian's nginx with the repository's config in front of the live server: its port."""
    with nginx_running(upstream=urlsplit(live_server.url).netloc, work=nginx_workdir) as port:
        yield port


class Clock:
    """Stands in for the `time` module the limiters read: one window for the whole test."""

    def __init__(self):
        self.now = (time.time() // security.WINDOW_SECONDS) * security.WINDOW_SECONDS + 1

    def time(self) -> float:
        return self.now


@pytest.fixture
def limits(settings, monkeypatch):
    caches["ratelimit"].clear()
    clock = Clock()
    monkeypatch.setattr(security, "time", clock)
    monkeypatch.setattr(login_throttle, "time", clock)
    settings.SUBMIT_RATE_PER_ADDRESS = LIMIT
    settings.LOGIN_FAILURES_PER_ADDRESS = LIMIT
    settings.LOGIN_FAILURES_PER_USERNAME = 0
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    yield settings
    caches["ratelimit"].clear()


@pytest.fixture
def task(transactional_db):
    return TaskFactory(propositions=PropositionFactory.create_batch(5))


def post(port: int, path: str, fields: dict, *, forwarded: str, source: str = "127.0.0.1") -> int:
    """One POST from `source` carrying the client's own X-Forwarded-For: the status."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    try:
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json",
            "X-Forwarded-For": forwarded,
        }
        connection.request("POST", path, body=urlencode(fields), headers=headers)
        return connection.getresponse().status
    finally:
        connection.close()


def flood(port: int, path: str, fields: dict, *, source: str = "127.0.0.1") -> list[int]:
    """FLOOD posts, each claiming a different address in the header's last entry."""
    return [post(port, path, fields, forwarded=f"198.51.100.{n}", source=source) for n in range(FLOOD)]


def _submission(task) -> tuple[str, dict]:
    return f"/hit/{task.uuid}/submit/", {"assignmentId": "A1", "workerId": "W1", "hitId": "H1"}


def test_through_nginx_a_rotated_header_is_refused_after_the_limit(limits, task, nginx):
    limits.TRUSTED_PROXY_HOPS = 1
    path, fields = _submission(task)

    statuses = flood(nginx, path, fields)
    other_client = post(nginx, path, fields, forwarded="198.51.100.1", source="127.0.0.2")

    assert 429 not in statuses[:LIMIT] and statuses[LIMIT:] == [429] * (FLOOD - LIMIT)
    assert other_client != 429  # the address nginx appended is what counts, one count per client


def test_through_nginx_failed_logins_from_a_rotated_header_are_throttled(limits, transactional_db, nginx):
    limits.TRUSTED_PROXY_HOPS = 1

    statuses = flood(nginx, "/api/auth/token/", {"username": "ada", "password": "guess"})

    assert statuses == [400] * LIMIT + [429] * (FLOOD - LIMIT)


def test_straight_to_the_app_with_no_hop_a_forged_header_is_ignored(limits, task, live_server):
    limits.TRUSTED_PROXY_HOPS = 0
    path, fields = _submission(task)

    statuses = flood(urlsplit(live_server.url).port, path, fields)

    assert 429 not in statuses[:LIMIT] and statuses[LIMIT:] == [429] * (FLOOD - LIMIT)


def test_the_attack_is_real_trusting_a_hop_that_is_not_there_lets_the_flood_through(limits, task, live_server):
    """The control: the old default (the last entry trusted, no proxy in front) is what F6 found."""
    limits.TRUSTED_PROXY_HOPS = 1
    path, fields = _submission(task)

    statuses = flood(urlsplit(live_server.url).port, path, fields)

    assert 429 not in statuses
