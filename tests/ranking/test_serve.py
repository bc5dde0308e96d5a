"""`make serve` (ranking/management/commands/serve.py, ranking/serving.py): a real process on
a fresh SQLite file — migrated, a first login printed, the dashboard and the local endpoints
served, stopped cleanly by Ctrl-C — and a clear message, no traceback, when its port is busy."""

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.contrib.auth import get_user_model

from crowd.simulation.hits import forms_parse
from ranking.serving import first_login_ensure
from tests.services import free_port

LOGIN = re.compile(r"login\s+(\S+) / (\S+)")


@pytest.mark.django_db
def test_a_first_login_is_created_only_when_there_is_none():
    created = first_login_ensure()
    again = first_login_ensure()

    assert created is not None and created.username == "admin" and len(created.password) >= 16
    assert again is None
    user = get_user_model().objects.get(username="admin")
    assert user.is_superuser and user.check_password(created.password)


@pytest.mark.django_db
def test_the_first_login_can_come_from_the_environment_and_is_not_echoed():
    get_user_model().objects.create_user("someone")

    created = first_login_ensure(username="lab", password="chosen-password-1")

    assert created is not None and (created.username, created.password) == ("lab", "")
    assert get_user_model().objects.get(username="lab").check_password("chosen-password-1")
    assert first_login_ensure(username="lab", password="other") is None


def _serve(tmp_path: Path, port: int, *extra: str) -> subprocess.Popen:
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'serve.sqlite3'}",
        "SITE_URL": f"http://127.0.0.1:{port}",
        "CELERY_BROKER_URL": "",
        "CACHE_URL": "locmemcache://",
        "SALIENCE_ENV": "development",
        "PROLIFIC_ENVIRONMENT": "local",
    }
    for name in (
        "DJANGO_SUPERUSER_USERNAME",
        "DJANGO_SUPERUSER_PASSWORD",
        "MTURK_LOCAL_ENDPOINT_URL",
        "PROLIFIC_API_URL",
    ):
        env.pop(name, None)
    command = [sys.executable, "manage.py", "serve", "--port", str(port), *extra]
    return subprocess.Popen(
        command, cwd=settings.BASE_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _lines_until(process: subprocess.Popen, marker: str, timeout: float = 300) -> list[str]:
    lines, deadline = [], time.monotonic() + timeout
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line and process.poll() is not None:
            raise AssertionError(f"serve exited ({process.returncode}): {''.join(lines)}{process.stderr.read()}")
        lines.append(line)
        if marker in line:
            return lines
    raise AssertionError(f"no {marker!r} within {timeout} s: {''.join(lines)}")


def test_serve_migrates_prints_a_login_serves_and_stops_on_ctrl_c(tmp_path):
    port = free_port()
    process = _serve(tmp_path, port)
    try:
        output = "".join(_lines_until(process, "Press Ctrl-C to stop."))
        base = f"http://127.0.0.1:{port}"
        username, password = LOGIN.search(output).groups()
        assert f"Salience is serving at {base}/" in output and f"{base}/localturk/" in output
        assert "eager Celery (no CELERY_BROKER_URL): the campaign loop runs here every 60 s" in output

        http = requests.Session()
        page = http.get(f"{base}/")
        token = dict(forms_parse(page.text)["form-0"].hidden)["csrfmiddlewaretoken"]
        signed_in = http.post(
            page.url,
            data={"username": username, "password": password, "csrfmiddlewaretoken": token},
            headers={"Referer": page.url},
        )
        assert page.url.startswith(f"{base}/accounts/login/") and signed_in.url == f"{base}/"
        assert "Campaigns" in signed_in.text
        assert http.get(f"{base}/localturk/worker/").status_code == 200  # the local endpoint is served too

        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
        assert "Stopping." in process.stdout.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_busy_port_is_said_plainly_without_a_traceback(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        process = _serve(tmp_path, port)
        out, err = process.communicate(timeout=120)

    assert process.returncode == 1, out + err
    assert f"CommandError: Port {port} is in use" in err and f"make serve PORT={port + 1}" in err
    assert "Traceback" not in err + out


def test_serving_beyond_loopback_turns_debug_off_and_warns_of_a_loopback_site_url(tmp_path):
    port = free_port()
    process = _serve(tmp_path, port, "--host", "0.0.0.0")
    try:
        output = "".join(_lines_until(process, "Press Ctrl-C to stop."))
        base = f"http://127.0.0.1:{port}"
        assert f"Salience is serving at http://0.0.0.0:{port}/ (a rehearsal server)" in output

        unknown = requests.get(f"{base}/no-such-page/", timeout=30)
        styles = requests.get(f"{base}/static/css/app.css", timeout=30)

        assert unknown.status_code == 404
        assert "URLconf" not in unknown.text and "DEBUG = True" not in unknown.text and "admin/" not in unknown.text
        assert styles.status_code == 200  # static files are still served with debug off
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
        errors = process.stderr.read()
        assert "Debug is off: this server listens on 0.0.0.0" in errors
        assert f"SITE_URL is http://127.0.0.1:{port}, an address of this machine only" in errors
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
