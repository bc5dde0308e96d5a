"""The production deployment on loopback, for the attacks: gunicorn running the app with
SALIENCE_ENV=production (the environment docker-compose.yml gives it), behind Debian's nginx
running deploy/nginx.conf, with TLS in front as a real deployment has it (nginx terminates it
here with a throw-away certificate; the one hop the app trusts stays nginx's).

The test's own process keeps the test settings: it builds campaigns, publishes, and serves the
local marketplaces (the local MTurk and Prolific endpoints) on its live server, which the
production app reaches over HTTP as it would reach MTurk and Prolific. Each pass of the
campaign loop runs as `manage.py sync_hits` under the production environment, in one process that stays up for the deployment's life
(tests/attacks/warm_manage.py), as a Celery worker runs the passes in a deployment.
"""

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import pytest
import redis
import requests
import urllib3
from django.db import connection
from requests.adapters import HTTPAdapter

from config import security
from tests.conftest import CI
from tests.services import _stop, _wait_for_port, free_port, nginx_binary, redis_database
from tests.test_security import _production_env

ROOT = Path(__file__).resolve().parents[2]
NGINX_CONF = ROOT / "deploy" / "nginx.conf"
# The token the local Prolific endpoint accepts (the test process's settings, tests/crowd/channels/prolific).
PROLIFIC_TOKEN = "test-prolific-token"
T = TypeVar("T")

# gunicorn's options, as docker-compose.yml's `web`, the Dockerfile and deploy/onehost's unit
# give them (tests/attacks/test_deployment_shape.py holds them equal).
GUNICORN_OPTIONS = ["--workers", "2", "--worker-class", "gthread", "--threads", "4"]
# The variables the replay sets for the app beside the marketplaces' (which point at the test's
# endpoints): every one is given by docker-compose.yml too.
DEPLOYMENT_VARIABLES = (
    "SALIENCE_ENV",
    "SECRET_KEY",
    "DATABASE_URL",
    "SITE_URL",
    "ALLOWED_HOSTS",
    "CACHE_URL",
    "CELERY_BROKER_URL",
    "TRUSTED_PROXY_HOPS",
    "MTURK_ENVIRONMENT",
)

# Failed logins in the replay: LOGIN_FAILURES_PER_USERNAME a window of LOGIN_FAILURE_WINDOW_SECONDS
# (10 in 900 s by default). The window is short enough that a test sees a throttled login
# accepted once it has passed; the failures are few because each wrong password costs a million
# PBKDF2 iterations (Django hardens a wrong guess's time even against a cheaper stored hash),
# seconds on a loaded machine, and a flood and the right password must fit in one window.
LOGIN_WINDOW_SECONDS = 20
LOGIN_FAILURES = 3

urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)  # the throw-away certificate


# --- nginx with the repository's config ----------------------------------------------------


def nginx_binary_required() -> str:
    binary = nginx_binary()
    if binary is None:
        message = "nginx is not installed: `make test` installs it (python -m tests.services ensure)"
        if CI:
            pytest.fail(message)
        pytest.skip(message)
    return binary


def nginx_config(*, upstream: str, port: int, workdir: Path, tls: bool = False) -> Path:
    """deploy/nginx.conf with the compose names and the image's paths swapped for this run's;
    with `tls`, the port speaks HTTPS with a certificate made for the run."""
    text = NGINX_CONF.read_text()
    listen = f"listen 127.0.0.1:{port};"
    if tls:
        _certificate(workdir)
        listen = (
            f"listen 127.0.0.1:{port} ssl;\n"
            f"        ssl_certificate {workdir}/cert.pem;\n"
            f"        ssl_certificate_key {workdir}/key.pem;"
        )
    swaps = {
        "server web:8000;": f"server {upstream};",
        "listen 80;": listen,
        "http {\n": (
            "http {\n"
            f"    access_log {workdir}/access.log;\n"
            + "".join(
                f"    {kind}_temp_path {workdir}/{kind};\n"
                for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
            )
        ),
    }
    for shipped, here in swaps.items():
        assert text.count(shipped) == 1, f"deploy/nginx.conf no longer has {shipped!r}"
        text = text.replace(shipped, here)
    path = workdir / "nginx.conf"
    path.write_text(text)
    return path


def nginx_command(binary: str, config: Path, workdir: Path, *, test: bool = False) -> list[str]:
    main = f"pid {workdir}/nginx.pid;" + ("" if test else " daemon off;")
    return [binary, *(["-t"] if test else []), "-c", str(config), "-e", f"{workdir}/error.log", "-g", main]


def _certificate(workdir: Path) -> None:
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(workdir / "key.pem"),
            "-out",
            str(workdir / "cert.pem"),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )


@contextmanager
def workdir() -> Iterator[Path]:
    # Readable by nginx's workers, which drop root's rights (pytest's tmp_path is not).
    path = Path(tempfile.mkdtemp(prefix="salience-deploy-"))
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextmanager
def nginx_running(*, upstream: str, work: Path, tls: bool = False) -> Iterator[int]:
    """Debian's nginx with the repository's config in front of `upstream`: its port."""
    binary = nginx_binary_required()
    port = free_port()
    config = nginx_config(upstream=upstream, port=port, workdir=work, tls=tls)
    log = open(work / "nginx.out", "wb")
    process = subprocess.Popen(nginx_command(binary, config, work), stdout=log, stderr=log)
    try:
        _wait_for_port(port, process, "nginx")
        yield port
    finally:
        _stop(process)
        log.close()


# --- The production app --------------------------------------------------------------------


class WarmManage:
    """manage.py under an environment, in one process started at the first command and kept for
    the next ones (tests/attacks/warm_manage.py): a pass of the loop costs the pass, not a fresh
    import of the app. Each command's stdout and stderr are its own, as a fresh process's."""

    def __init__(self, env: dict[str, str], log: Path):
        self.env = env
        self.log = log
        self.process: subprocess.Popen | None = None
        self.pending = b""

    def run(self, *args: str, timeout: float) -> subprocess.CompletedProcess:
        if self.process is None:
            with open(self.log, "ab") as log:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "tests.attacks.warm_manage"],
                    cwd=ROOT,
                    env=self.env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    bufsize=0,
                )
            self._answer(timeout)  # django.setup() done
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(args).encode() + b"\n")
        answer = self._answer(timeout)
        return subprocess.CompletedProcess(
            ["manage.py", *args], answer["returncode"], answer["stdout"], answer["stderr"]
        )

    def _answer(self, timeout: float) -> dict:
        assert self.process is not None and self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.process.stdout], [], [], max(left, 0))
            chunk = self.process.stdout.read(65536) if ready else b""
            if not chunk:
                self.stop()
                what = "exited" if ready else f"gave no answer within {timeout:.0f} s"
                raise AssertionError(f"manage.py {what}:\n" + self.log.read_text()[-3000:])
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


@dataclass
class Production:
    """The running deployment: its public URL (nginx, HTTPS), its environment, and the process
    its management commands run in."""

    url: str
    env: dict[str, str]
    log: Path
    commands: WarmManage

    def manage(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        """A management command under the production settings (a pass of the loop: sync_hits)."""
        result = self.commands.run(*args, timeout=timeout)
        assert result.returncode == 0, result.stdout + result.stderr
        return result

    def session(self, address: str = "127.0.0.1") -> requests.Session:
        """A browser of this site: its certificate is the run's own, and it sends a Referer as
        browsers do (Django's CSRF check wants one on HTTPS). It connects to nginx from
        `address`, a loopback address (all of 127.0.0.0/8 is this machine's on Linux): nginx
        appends that address to X-Forwarded-For, so the app sees one client per address."""
        http = from_address(trusting(requests.Session()), address)
        http.headers["Referer"] = f"{self.url}/"
        return http

    def login(self, username: str, password: str) -> requests.Session:
        """A researcher signed in through the dashboard's login form."""
        http = self.session()
        page = http.get(f"{self.url}/accounts/login/", timeout=30)
        assert page.status_code == 200, page.text[:500]
        signed = http.post(
            f"{self.url}/accounts/login/",
            data={"username": username, "password": password, "csrfmiddlewaretoken": http.cookies["csrftoken"]},
            timeout=30,
            allow_redirects=False,
        )
        assert signed.status_code == 302, signed.text[:500]
        return http


def trusting(http: requests.Session) -> requests.Session:
    """A session that accepts the run's certificate. Not through `verify` alone: requests
    lets REQUESTS_CA_BUNDLE in the environment override a session's `verify`."""
    http.verify = False
    http.trust_env = False
    return http


class _SourceAddressAdapter(HTTPAdapter):
    def __init__(self, address: str):
        self.address = address
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):
        kwargs["source_address"] = (self.address, 0)
        super().init_poolmanager(*args, **kwargs)


def from_address(http: requests.Session, address: str) -> requests.Session:
    """A session whose connections leave from `address`."""
    adapter = _SourceAddressAdapter(address)
    http.mount("https://", adapter)
    http.mount("http://", adapter)
    return http


def database_url() -> str:
    settings = connection.settings_dict
    return f"postgres://{settings['USER']}@{settings['HOST']}:{settings['PORT']}/{settings['NAME']}"


@contextmanager
def production(*, live_server_url: str, redis_url: str, **overrides: str) -> Iterator[Production]:
    """gunicorn with SALIENCE_ENV=production on this test's database, behind nginx with TLS.
    The environment is docker-compose's (TRUSTED_PROXY_HOPS=1, a Redis cache for the limits,
    HTTPS redirects, secure cookies, HSTS) with the marketplaces pointed at the test's live server;
    `overrides` set more variables."""
    if connection.vendor != "postgresql":
        message = "the production deployment needs PostgreSQL: run the suite with `make test`"
        if CI:
            pytest.fail(message)
        pytest.skip(message)
    with workdir() as work:
        app_port = free_port()
        with nginx_running(upstream=f"127.0.0.1:{app_port}", work=work, tls=True) as port:
            url = f"https://127.0.0.1:{port}"
            env = _production_env()
            env.update(
                DATABASE_URL=database_url(),
                SITE_URL=url,
                ALLOWED_HOSTS="127.0.0.1",
                CACHE_URL=_cache_url(redis_url),
                CELERY_BROKER_URL="",
                TRUSTED_PROXY_HOPS="1",
                MTURK_ENVIRONMENT="local",
                MTURK_LOCAL_ENDPOINT_URL=f"{live_server_url}/localturk/",
                PROLIFIC_ENVIRONMENT="production",
                PROLIFIC_API_URL=f"{live_server_url}/localprolific/api/v1/",
                PROLIFIC_API_TOKEN=PROLIFIC_TOKEN,
                PROLIFIC_COMPLETION_URL=f"{live_server_url}/localprolific/submissions/complete?cc={{code}}",
                LOG_LEVEL="WARNING",
                # Every client of the replay reaches nginx from 127.0.0.1: room for F2's 20 invented
                # arrivals and its genuine participant (the limit itself: test_prolific_participants).
                PROLIFIC_ARRIVALS_PER_ADDRESS="30",
                LOGIN_FAILURE_WINDOW_SECONDS=str(LOGIN_WINDOW_SECONDS),
                LOGIN_FAILURES_PER_USERNAME=str(LOGIN_FAILURES),
                **overrides,
            )
            env.pop("CI", None)
            log = work / "gunicorn.log"
            with open(log, "wb") as output:
                process = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "gunicorn",
                        "config.wsgi:application",
                        "--bind",
                        f"127.0.0.1:{app_port}",
                        *GUNICORN_OPTIONS,
                    ],
                    cwd=ROOT,
                    env=env,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                )
                commands = WarmManage(env, work / "manage.log")
                try:
                    _wait_for_port(app_port, process, "gunicorn", timeout=60)
                    site = Production(url=url, env=env, log=log, commands=commands)
                    _wait_until_serving(site)
                    yield site
                finally:
                    commands.stop()
                    _stop(process)
                    connection.close()


def _wait_until_serving(site: Production) -> None:
    # A worker's first request imports the views: past a minute on a 2-core machine at load 25.
    deadline = time.monotonic() + 180
    last = ""
    while True:
        try:
            answer = site.session().get(f"{site.url}/healthz", timeout=30)
            if answer.status_code == 200:
                return
            last = f"{answer.status_code} {answer.text[:300]}"
        except requests.RequestException as error:
            last = str(error)
        if time.monotonic() > deadline:
            raise AssertionError(
                f"the production app did not answer /healthz ({last}):\n" + site.log.read_text()[-3000:]
            )
        time.sleep(0.2)


def _cache_url(redis_url: str) -> str:
    """A Redis database of the deployment's own for the limits' counters, emptied first: no
    count of another test's floods carries over."""
    url = redis_database(redis_url, 5)
    redis.Redis.from_url(url).flushdb()
    return url


def window_fresh(needed_seconds: float = 25, *, window: int = security.WINDOW_SECONDS) -> None:
    """The limits count in fixed windows (a minute; the replay's LOGIN_WINDOW_SECONDS for failed
    logins): wait for a new one if this one ends too soon for a flood to fit in it (the
    production server's clock cannot be held still)."""
    left = window - time.time() % window
    if left < needed_seconds:
        time.sleep(left + 0.5)


def in_one_window(
    flood: Callable[[], T], *, site: Production, window: int = security.WINDOW_SECONDS, then: float = 0
) -> T:
    """`flood()`'s answer, with every request it made counted in one of the limits' fixed windows,
    and `then` seconds of that window left for what the test sends next. It starts at once,
    wherever this window stands: when the window ended while it ran, or left less than `then`
    (the server stamps each request between the flood's start and end, on this machine's clock),
    the deployment's counters are emptied and it runs again, from a new window's start if what is
    left of this one is too short. So a test waits only when a window ends under it, not on every
    run for a window it may not need. `flood` must leave nothing behind that a second run would
    trip over."""
    for _ in range(3):
        started = time.time()
        answer = flood()
        ended = time.time()
        if int(started // window) == int((ended + then) // window):
            return answer
        redis.Redis.from_url(site.env["CACHE_URL"]).flushdb()
        window_fresh(2 * (ended - started) + then, window=window)
    raise AssertionError(f"three floods in a row outlasted a window of {window} s")


def port_of(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port
