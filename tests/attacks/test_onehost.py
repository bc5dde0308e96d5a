"""The one-host deployment without Docker (deploy/onehost/): the processes its systemd units
name — the web unit's migrate and gunicorn, the worker's and beat's Celery — started from
their ExecStartPre/ExecStart lines with the environment file's variables, on loopback against
the test's PostgreSQL and Redis, behind nginx running the unit set's site file with TLS in
front as certbot puts it; /healthz answers 200 through nginx, and the worker and beat come up."""

import configparser
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.attacks.deployment import (
    _certificate,
    database_url,
    nginx_binary_required,
    nginx_command,
    trusting,
    workdir,
)
from tests.services import _stop, _wait_for_port, free_port, redis_database

ROOT = Path(__file__).resolve().parents[2]
ONEHOST = ROOT / "deploy" / "onehost"
INSTALLED = "/opt/salience/.venv/bin/"
SCHEDULE = "/var/lib/salience/celerybeat-schedule"

pytestmark = pytest.mark.django_db(transaction=True)


def _service(name: str) -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str
    parser.read_string((ONEHOST / f"salience-{name}.service").read_text())
    return parser["Service"]


def _command(line: str, **swaps: str) -> list[str]:
    """A unit's command as this machine runs it: the venv's programs for /opt/salience's."""
    words = [word.replace(INSTALLED, f"{Path(sys.executable).parent}/") for word in shlex.split(line)]
    return [swaps.get(word, word) for word in words]


def _environment(*, redis_url: str, site_url: str) -> dict[str, str]:
    """The environment file's variables as systemd passes them (nothing of the test's own),
    with this run's database, Redis, address and a real-looking key filled in."""
    variables = dict(
        line.split("=", 1)
        for line in (ONEHOST / "salience.env.example").read_text().splitlines()
        if line and not line.startswith("#")
    )
    variables.update(
        SECRET_KEY="k3Q-9vLx!p2Rz7Tg#w8Yb1Nc5Hd0Jf4Ms6Ea_Uo+Ci2Vr9Xl-onehost-test",
        DATABASE_URL=database_url(),
        CELERY_BROKER_URL=redis_database(redis_url, 7),
        CACHE_URL=redis_database(redis_url, 8),
        SITE_URL=site_url,
        ALLOWED_HOSTS="127.0.0.1",
        CSRF_TRUSTED_ORIGINS=site_url,
    )
    return {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8", **variables}


def _nginx_site(*, work: Path, port: int, upstream: str) -> Path:
    """nginx-salience.conf inside an `http` block as /etc/nginx/nginx.conf includes it, with
    this run's port, certificate, upstream and paths."""
    site = (ONEHOST / "nginx-salience.conf").read_text()
    swaps = {
        "server 127.0.0.1:8001;": f"server {upstream};",
        "listen 80;": f"listen 127.0.0.1:{port} ssl;\n    ssl_certificate {work}/cert.pem;\n"
        f"    ssl_certificate_key {work}/key.pem;",
    }
    for shipped, here in swaps.items():
        assert site.count(shipped) == 1, f"nginx-salience.conf no longer has {shipped!r}"
        site = site.replace(shipped, here)
    _certificate(work)
    temp_paths = "".join(
        f"    {kind}_temp_path {work}/{kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    config = work / "nginx.conf"
    config.write_text(
        f"events {{ worker_connections 64; }}\nhttp {{\n    access_log {work}/access.log;\n{temp_paths}{site}\n}}\n"
    )
    return config


def _wait_for_line(log: Path, process: subprocess.Popen, needle: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in log.read_text(errors="replace"):
            return
        assert process.poll() is None, f"exited {process.returncode}:\n{log.read_text()[-3000:]}"
        time.sleep(0.3)
    raise AssertionError(f"no {needle!r} within {timeout} s:\n{log.read_text()[-3000:]}")


def _healthz(url: str, log: Path, timeout: float = 180) -> requests.Response:
    """/healthz once gunicorn's workers have booted (it listens before they have)."""
    deadline, last = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        try:
            answer = trusting(requests.Session()).get(url, timeout=30)
            if answer.status_code == 200:
                return answer
            last = f"{answer.status_code} {answer.text[:300]}"
        except requests.RequestException as error:
            last = str(error)
        time.sleep(0.5)
    raise AssertionError(f"/healthz did not answer 200 ({last}):\n{log.read_text()[-3000:]}")


def test_the_units_processes_serve_healthz_through_nginx(redis_url):
    binary = nginx_binary_required()
    web, worker, beat = (_service(name) for name in ("web", "worker", "beat"))
    with workdir() as work:
        app_port, port = free_port(), free_port()
        site_url = f"https://127.0.0.1:{port}"
        env = _environment(redis_url=redis_url, site_url=site_url)
        bind = f"127.0.0.1:{app_port}"
        started: list[subprocess.Popen] = []
        try:
            migrate = subprocess.run(
                _command(web["ExecStartPre"]), cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
            )
            assert migrate.returncode == 0, migrate.stdout + migrate.stderr

            logs = {name: work / f"{name}.log" for name in ("web", "worker", "beat", "nginx")}
            commands = {
                "web": _command(web["ExecStart"], **{"127.0.0.1:8001": bind}),
                "worker": _command(worker["ExecStart"]),
                "beat": _command(beat["ExecStart"], **{SCHEDULE: str(work / "celerybeat-schedule")}),
                "nginx": nginx_command(binary, _nginx_site(work=work, port=port, upstream=bind), work),
            }
            processes = {}
            for name, command in commands.items():
                with open(logs[name], "wb") as log:
                    processes[name] = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
                started.append(processes[name])
            _wait_for_port(app_port, processes["web"], "gunicorn", timeout=90)
            _wait_for_port(port, processes["nginx"], "nginx")

            answer = _healthz(f"{site_url}/healthz", logs["web"])

            assert answer.status_code == 200 and answer.json() == {"status": "ok"}
            assert answer.headers.get("Strict-Transport-Security")  # production's rules, over nginx's TLS
            _wait_for_line(logs["worker"], processes["worker"], "ready.")
            _wait_for_line(logs["beat"], processes["beat"], "beat: Starting")
            assert "DEBUG" not in env and env["SALIENCE_ENV"] == "production"
        finally:
            for process in reversed(started):
                _stop(process)
