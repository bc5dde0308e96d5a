"""`make serve`: the app on this machine, as a researcher uses it day to day.

One process serves the web pages together with the local MTurk and Prolific endpoints
(ranking.demo.server_start), so publishing always finds the endpoint it talks to. The
campaign loop (ranking.workflow) runs beside it: in a Celery worker with beat when a broker
is configured (CELERY_BROKER_URL), else, as Celery runs eagerly then, every
SYNC_INTERVAL_SECONDS on a thread of this process — what beat would have sent.
"""

import logging
import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import close_old_connections, transaction

from ranking.workflow import loop_run_exclusive

logger = logging.getLogger(__name__)

DEFAULT_USERNAME = "admin"


@dataclass(frozen=True)
class FirstLogin:
    username: str
    password: str  # empty when it came from the environment, so it is not echoed


@transaction.atomic
def first_login_ensure(*, username: str = "", password: str = "") -> FirstLogin | None:
    """A superuser to log in with, when the database has none of the one asked for:
    `username` and `password` (Django's DJANGO_SUPERUSER_USERNAME and _PASSWORD) if given,
    else `admin` with a generated password — created only when there is no user at all. None
    when nothing was created."""
    users = get_user_model().objects
    if username:
        if users.filter(username=username).exists():
            return None
    elif users.exists():
        return None
    chosen = password or secrets.token_urlsafe(12)
    users.create_superuser(username=username or DEFAULT_USERNAME, email="", password=chosen)
    return FirstLogin(username=username or DEFAULT_USERNAME, password="" if password else chosen)


def loop_thread_start(*, interval: float, on_error: Callable[[str], None]) -> threading.Event:
    """Run the campaign loop every `interval` seconds on a daemon thread, as Celery beat would;
    set the returned event to stop it. A failing pass is reported and the next one runs."""
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(interval):
            try:
                loop_run_exclusive()
            except Exception as error:  # one bad pass must not end the loop; the next pass heals it
                logger.exception("a pass of the campaign loop failed")
                on_error(f"a pass of the campaign loop failed: {error}")
            finally:
                close_old_connections()

    threading.Thread(target=run, name="campaign-loop", daemon=True).start()
    return stop


def worker_process_start() -> subprocess.Popen:
    """A Celery worker with beat (the loop every SYNC_INTERVAL_SECONDS), in this environment."""
    schedule = Path(settings.BASE_DIR) / "var" / "celerybeat-schedule"
    schedule.parent.mkdir(exist_ok=True)
    command = [sys.executable, "-m", "celery", "-A", "config", "worker", "-B", "--loglevel=INFO"]
    if settings.DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
        command.append("--concurrency=1")  # one writer beside the web server: SQLite locks the whole file
    return subprocess.Popen([*command, "--schedule", str(schedule)], cwd=settings.BASE_DIR, env=os.environ.copy())
