"""What the benchmarks share: Django set up in a measuring process, a work folder and a
PostgreSQL server for the run, fresh child processes that print their figures as one JSON
line, tables filled by COPY, and percentiles.

A benchmark puts the project root on its path first (`python benchmarks/<name>.py` has only
benchmarks/ there), then imports this module as `benchmarks._harness`.
"""

import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The columns the benchmarks fill by COPY, ids included so that rows can refer to each other.
PROPOSITION_COLUMNS = [
    "id",
    "topic_id",
    "subject",
    "relation",
    "object",
    "normalized",
    "source",
    "external_id",
    "trap_kind",
    "created_at",
]
TASK_COLUMNS = ["id", "uuid", "batch_id", "kind", "position", "assignments_needed", "created_at"]
ASSIGNMENT_COLUMNS = [
    "id",
    "task_id",
    "worker_id",
    "assignment_id",
    "status",
    "verification",
    "answer",
    "untouched",
    "submitted_at",
    "reject_reason",
]
LIKERT_LABEL_COLUMNS = ["assignment_id", "worker_id", "proposition_id", "score"]


def django_setup() -> None:
    """Django with the project's settings (config/settings.py reads the environment)."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()


def copy_rows(cursor, model, columns: Sequence[str], rows: Iterable[Sequence]) -> None:
    """COPY rows (tuples of text-able values; None is NULL) into the model's table, on a raw
    psycopg2 cursor (`connection.cursor().cursor`)."""
    buffer = io.StringIO()
    for row in rows:
        buffer.write("\t".join(r"\N" if value is None else str(value) for value in row) + "\n")
    buffer.seek(0)
    cursor.copy_expert(f"COPY {model._meta.db_table} ({', '.join(columns)}) FROM STDIN", buffer)


@contextmanager
def workdir_made(prefix: str = "salience-bench-") -> Iterator[Path]:
    """A temporary folder for the run, open to the PostgreSQL server's own user."""
    with tempfile.TemporaryDirectory(prefix=prefix) as name:
        workdir = Path(name)
        os.chmod(workdir, 0o755)
        yield workdir


@contextmanager
def postgres_server(workdir: Path, *, reuse: bool = False) -> Iterator[str]:
    """A PostgreSQL server's URL: with `reuse`, the server DATABASE_URL names when it names one
    (as under `make bench`); else a throw-away one in workdir/pg (tests/services.py)."""
    from tests.services import postgres

    server_url = os.environ.get("DATABASE_URL", "")
    if reuse and server_url.startswith("postgres"):
        yield server_url
        return
    (workdir / "pg").mkdir()
    with postgres(workdir / "pg") as url:
        yield url


def child_environment(database_url: str, **variables: str) -> dict[str, str]:
    """This process's environment for a child on `database_url`, without a Celery broker (tasks
    run in the child itself)."""
    env = dict(os.environ, DATABASE_URL=database_url, **variables)
    env.pop("CELERY_BROKER_URL", None)
    return env


def child_run(arguments: Sequence[str], env: dict[str, str]) -> str:
    """Run `python <arguments>` from the project root and return what it printed; end the
    benchmark with the child's errors when it fails."""
    done = subprocess.run([sys.executable, *arguments], env=env, capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        sys.exit(f"{' '.join(arguments)} failed:\n{done.stderr}")
    return done.stdout


def child_json(arguments: Sequence[str], env: dict[str, str]) -> dict:
    """Run `python <arguments>` as child_run does; the JSON object its last line prints."""
    return json.loads(child_run(arguments, env).strip().splitlines()[-1])


def percentile(values: Sequence[float], percent: int) -> float:
    """The `percent`-th percentile (inclusive method: within the values measured)."""
    return statistics.quantiles(values, n=100, method="inclusive")[percent - 1]
