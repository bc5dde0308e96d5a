"""manage.py in a process that stays up: the replay's passes of the loop (tests/attacks/deployment.py)
run here one after another, as a Celery worker runs them in a deployment, instead of paying a
fresh Python's import of the whole app (seconds of CPU each on a 2-core machine) for every pass.

Each request is one JSON line on stdin, manage.py's arguments; the process runs manage.py with
them as `python manage.py ...` would (its file, its settings from the environment), with its file
descriptors 1 and 2 sent to files, so the command's output and every log line land in the answer
as they would in a fresh process's stdout and stderr. The answer is one JSON line on the
descriptor the process was started with as its stdout: the exit status, stdout and stderr. The
database connections are closed after each command, as a process's end closes them.
"""

import json
import os
import runpy
import sys
import tempfile
import traceback
from pathlib import Path

MANAGE = Path(__file__).resolve().parents[2] / "manage.py"


def _run(args: list[str]) -> dict:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        status = 0
        try:
            sys.argv = [str(MANAGE), *args]
            runpy.run_path(str(MANAGE), run_name="__main__")
        except SystemExit as exit:
            status = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
        except BaseException:  # what a fresh process would print before exiting with 1
            traceback.print_exc()
            status = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            from django.db import connections

            connections.close_all()
        out.seek(0)
        err.seek(0)
        return {
            "returncode": status,
            "stdout": out.read().decode(errors="replace"),
            "stderr": err.read().decode(errors="replace"),
        }


def main() -> None:
    answers = os.fdopen(os.dup(1), "w")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    answers.write(json.dumps({"ready": True}) + "\n")
    answers.flush()
    for line in sys.stdin:
        answers.write(json.dumps(_run(json.loads(line))) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
