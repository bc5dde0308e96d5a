"""The one-host deployment without Docker (deploy/onehost/), walked as a lab server's admin would:
`install.sh` runs for real into a temporary root (SALIENCE_ROOT, the variables its header
documents), then the processes the units it installed name — the web unit's migrate and
gunicorn, the worker's and beat's Celery — start from their ExecStartPre/ExecStart lines, in
their WorkingDirectory, with their EnvironmentFile's variables and nothing of the test's own,
behind nginx running the site file it installed with TLS in front as certbot puts it. /healthz
answers 200 through nginx, the worker and beat come up, and a participant answers a task of an
open link over HTTPS.

What cannot run here is stood in for, and named: apt-get (SALIENCE_PACKAGES=no: the packages are
the test services'), systemd (SALIENCE_SYSTEMCTL records its calls; the test starts the units'
commands itself), PostgreSQL's role and database (SALIENCE_DATABASE_URL: the test's database),
and the network pip would download from: the virtualenv at /opt/salience/.venv is made before
the install from the suite's own packages, with the console scripts pip writes, and pip runs
with PIP_NO_INDEX=1, so `pip install -r requirements.txt` must find every requirement there.
"""

import configparser
import os
import random
import shlex
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest
import requests

from crowd.channels.links import links
from crowd.models import Assignment
from crowd.simulation.hits import DILIGENT, Judge, SimulatedWorker
from crowd.simulation.sessions import Participant
from tests.attacks.deployment import (
    _certificate,
    database_url,
    nginx_binary_required,
    nginx_command,
    trusting,
    workdir,
)
from tests.crowd.sessions.conftest import links_batch
from tests.services import _stop, _wait_for_port, free_port, redis_database

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "deploy" / "onehost" / "install.sh"
UNITS = ("web", "worker", "beat")

pytestmark = pytest.mark.django_db(transaction=True)


def _venv(app: Path) -> None:
    """/opt/salience/.venv as pip would leave it, from the suite's packages (no network here)."""
    venv = app / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(purelib, "suite-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    scripts = {
        "pip": "from pip._internal.cli.main import main",
        "gunicorn": "from gunicorn.app.wsgiapp import run as main",
    }
    scripts["celery"] = "from celery.__main__ import main"
    for name, entry in scripts.items():
        script = venv / "bin" / name
        script.write_text(f"#!{python}\nimport sys\n{entry}\nsys.exit(main())\n")
        script.chmod(0o755)


def _install(work: Path, site_url: str) -> tuple[Path, list[str]]:
    """install.sh into `work`/root: the root, and the systemctl calls it made."""
    root = work / "root"
    (root / "opt" / "salience").mkdir(parents=True)
    _venv(root / "opt" / "salience")
    calls = work / "systemctl.calls"
    recorder = work / "systemctl"
    recorder.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    recorder.chmod(0o755)
    checker = work / "nginx-check"
    config = _nginx_config(work=work, site=root / "etc" / "nginx" / "conf.d" / "salience.conf")
    checker.write_text(
        "#!/bin/sh\nexec " + shlex.join(nginx_command(nginx_binary_required(), config, work)) + ' "$@"\n'
    )
    checker.chmod(0o755)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "SALIENCE_ROOT": str(root),
        "SALIENCE_USER": "root" if os.geteuid() == 0 else os.environ.get("USER", ""),
        "SALIENCE_PACKAGES": "no",
        "SALIENCE_DATABASE_URL": database_url(),
        "SALIENCE_SYSTEMCTL": str(recorder),
        "SALIENCE_NGINX": str(checker),
    }
    result = subprocess.run(
        ["sh", str(INSTALL), site_url], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "test is successful" in result.stderr  # nginx -t on the site it installed
    return root, calls.read_text().splitlines()


def _nginx_config(*, work: Path, site: Path) -> Path:
    """/etc/nginx/nginx.conf as Debian's includes conf.d/*.conf, with this run's paths; the site
    (installed later) gets this run's port and certificate."""
    temp_paths = "".join(
        f"    {kind}_temp_path {work}/{kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    config = work / "nginx.conf"
    config.write_text(
        f"events {{ worker_connections 64; }}\nhttp {{\n    access_log {work}/access.log;\n{temp_paths}"
        f"    include {site};\n}}\n"
    )
    return config


def _site_with_tls(site: Path, *, work: Path, port: int, upstream: str) -> None:
    """The installed site as certbot leaves it: TLS on its listener (here this run's port and
    certificate), the upstream this run's gunicorn."""
    text = site.read_text()
    swaps = {
        "server 127.0.0.1:8001;": f"server {upstream};",
        "listen 80;": f"listen 127.0.0.1:{port} ssl;\n    ssl_certificate {work}/cert.pem;\n"
        f"    ssl_certificate_key {work}/key.pem;",
    }
    for shipped, here in swaps.items():
        assert text.count(shipped) == 1, f"the installed site no longer has {shipped!r}"
        text = text.replace(shipped, here)
    _certificate(work)
    site.write_text(text)


def _unit(root: Path, name: str) -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str
    parser.read_string((root / "etc" / "systemd" / "system" / f"salience-{name}.service").read_text())
    return parser["Service"]


def _rooted(root: Path, path: str) -> str:
    """A path the unit names, where SALIENCE_ROOT staged it."""
    return str(root) + path if path.startswith(("/opt/salience", "/etc/salience", "/var/lib/salience")) else path


def _command(root: Path, line: str, **swaps: str) -> list[str]:
    return [swaps.get(word, _rooted(root, word)) for word in shlex.split(line)]


def _environment(root: Path, path: str, **changes: str) -> dict[str, str]:
    """The EnvironmentFile's variables as systemd passes them (nothing of the test's own)."""
    variables = dict(
        line.split("=", 1)
        for line in Path(_rooted(root, path)).read_text().splitlines()
        if line and not line.startswith("#")
    )
    variables.update(changes)
    return {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8", **variables}


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


def test_install_sh_into_a_root_then_its_units_serve_a_participant_through_nginx(redis_url, settings):
    binary = nginx_binary_required()
    with workdir() as work:
        app_port, port = free_port(), free_port()
        site_url = f"https://127.0.0.1:{port}"
        root, systemctl = _install(work, site_url)

        app = root / "opt" / "salience"
        assert (app / "manage.py").is_file() and (app / "staticfiles").is_dir() and not (app / ".git").exists()
        assert systemctl == [
            "daemon-reload",
            "enable --now redis-server postgresql salience-web salience-worker salience-beat",
            "restart salience-web salience-worker salience-beat",
            "reload nginx",
        ]
        units = {name: _unit(root, name) for name in UNITS}
        assert {unit["User"] for unit in units.values()} == {"root" if os.geteuid() == 0 else os.environ["USER"]}
        env_file = units["web"]["EnvironmentFile"]
        assert (
            env_file == "/etc/salience/salience.env" and oct(Path(_rooted(root, env_file)).stat().st_mode)[-3:] == "640"
        )
        # The Redis of this run, as the admin fills it in; the rest is what install.sh wrote.
        env = _environment(
            root, env_file, CELERY_BROKER_URL=redis_database(redis_url, 6), CACHE_URL=redis_database(redis_url, 7)
        )
        assert env["SITE_URL"] == site_url and env["ALLOWED_HOSTS"] == "127.0.0.1" and len(env["SECRET_KEY"]) >= 50
        assert env["SALIENCE_ENV"] == "production" and "DEBUG" not in env
        (root / "var" / "lib" / "salience").mkdir(parents=True)  # the beat's StateDirectory, as systemd makes it
        bind = f"127.0.0.1:{app_port}"
        _site_with_tls(root / "etc" / "nginx" / "conf.d" / "salience.conf", work=work, port=port, upstream=bind)

        started: list[subprocess.Popen] = []
        try:
            migrate = subprocess.run(
                _command(root, units["web"]["ExecStartPre"]),
                cwd=_rooted(root, units["web"]["WorkingDirectory"]),
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert migrate.returncode == 0, migrate.stdout + migrate.stderr
            commands = {name: _command(root, units[name]["ExecStart"], **{"127.0.0.1:8001": bind}) for name in UNITS}
            commands["nginx"] = nginx_command(binary, work / "nginx.conf", work)
            logs = {name: work / f"{name}.log" for name in commands}
            processes = {}
            for name, command in commands.items():
                cwd = _rooted(root, units[name]["WorkingDirectory"]) if name in units else work
                with open(logs[name], "wb") as log:
                    processes[name] = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
                started.append(processes[name])
            _wait_for_port(app_port, processes["web"], "gunicorn", timeout=90)
            _wait_for_port(port, processes["nginx"], "nginx")

            answer = _healthz(f"{site_url}/healthz", logs["web"])

            assert answer.status_code == 200 and answer.json() == {"status": "ok"}
            assert answer.headers.get("Strict-Transport-Security")  # production's rules, over nginx's TLS
            _wait_for_line(logs["worker"], processes["worker"], "ready.")
            _wait_for_line(logs["beat"], processes["beat"], "beat: Starting")

            settings.SITE_URL = site_url
            batch = links_batch(propositions=10, tasks_per_session=1, assignments=1)
            link = links.link_create(campaign=batch.topic.campaign, kind="open")
            ann = Participant(
                SimulatedWorker(worker_id="P-ONEHOST", behaviour=DILIGENT, noise=0.5), Judge(seed=1), random.Random(1)
            )
            trusting(ann.http).headers["Referer"] = f"{site_url}/"
            done, _ = ann.session_work(ann.link_start(f"{site_url}/s/l/{link.token}/"))

            assert done == 1
            stored = Assignment.objects.get(task__batch=batch)
            # Codes are kept in lower case (issue 25): the worker is the participant's code as written, lower-cased.
            assert "p-onehost" in stored.worker.external_id and stored.likert_labels.count() == 5
            assert processes["web"].args[0] == f"{app}/.venv/bin/gunicorn"  # the installed code served it
        finally:
            for process in reversed(started):
                _stop(process)
