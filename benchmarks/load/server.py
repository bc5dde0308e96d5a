"""gunicorn serving the site on a free loopback port, for as long as a `with` block lasts."""

import http.client
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.services import free_port

ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT = 180  # seconds for the workers to import Django and answer (a busy shared machine takes over 60)


class ServerError(RuntimeError):
    pass


@dataclass(frozen=True)
class Server:
    host: str
    port: int
    pid: int  # gunicorn's arbiter
    log: Path  # gunicorn's and Django's stderr: error tracebacks land here
    description: str

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def gunicorn_command(
    *,
    port: int,
    workers: int,
    worker_class: str,
    threads: int,
    access_log: Path,
    access_format: str | None = None,
    config: str | None = None,
) -> list[str]:
    """The deployment's command line (Dockerfile, docker-compose.yml), on loopback; with
    `access_format`, gunicorn's --access-logformat (benchmarks/e2e.py logs each call's
    marketplace operation and time); with `config`, gunicorn's --config (profiling.py)."""
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "config.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--worker-class",
        worker_class,
        "--access-logfile",
        str(access_log),
        "--timeout",
        "60",
    ]
    if worker_class == "gthread":
        command += ["--threads", str(threads)]
    if access_format:
        command += ["--access-logformat", access_format]
    if config:
        command += ["--config", config]
    return command


@contextmanager
def gunicorn(
    *,
    env: dict[str, str],
    workdir: Path,
    workers: int,
    worker_class: str,
    threads: int,
    port: int | None = None,
    access_format: str | None = None,
    config: str | None = None,
    ready_timeout: float = READY_TIMEOUT,
) -> Iterator[Server]:
    """gunicorn on `port` (a free one by default) until the block ends; its logs in workdir
    (appended to, so a restart on the same workdir keeps the earlier lines)."""
    port = port or free_port()
    log = workdir / "gunicorn.log"
    command = gunicorn_command(
        port=port,
        workers=workers,
        worker_class=worker_class,
        threads=threads,
        access_log=workdir / "access.log",
        access_format=access_format,
        config=config,
    )
    with open(log, "ab") as stderr:
        process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=stderr, stderr=stderr)
    shape = f"{worker_class} × {threads} threads" if worker_class == "gthread" else worker_class
    server = Server("127.0.0.1", port, process.pid, log, f"gunicorn, {workers} workers, {shape}, 127.0.0.1:{port}")
    try:
        _wait_ready(server, process, ready_timeout)
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)  # graceful: workers finish their request
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_ready(server: Server, process: subprocess.Popen, timeout: float) -> None:
    """Until /trivial/ answers 200 (which needs a worker that has imported Django)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerError(f"gunicorn exited with status {process.returncode}:\n{server.log_tail()}")
        connection = http.client.HTTPConnection(server.host, server.port, timeout=5)
        try:
            connection.request("GET", "/trivial/", headers={"X-Forwarded-Proto": "https"})
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        finally:
            connection.close()
        time.sleep(0.2)
    raise ServerError(f"gunicorn did not answer within {timeout:.0f} s:\n{server.log_tail()}")
