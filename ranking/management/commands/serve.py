import os
import signal
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from config.site_address import host_is_loopback, site_url_loopback_warning
from ranking.demo import PortBusy, server_start
from ranking.serving import first_login_ensure, loop_thread_start, worker_process_start


class Command(BaseCommand):
    help = (
        "Serve the app on this machine for a rehearsal (`make serve`): migrate, create a first login if there "
        "is none, serve the dashboard, the HIT pages and the local MTurk and Prolific endpoints on "
        "127.0.0.1:PORT, and run the campaign loop (a Celery worker with beat when CELERY_BROKER_URL is set; "
        "else every SYNC_INTERVAL_SECONDS in this process). Until Ctrl-C. A real study runs on the deployment "
        "(README: From rehearsal to a real study)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--host",
            default="127.0.0.1",
            help="The address to listen on (default 127.0.0.1, this machine only). Any other address serves "
            "other machines too, and then debug is always off.",
        )

    def handle(self, *args, port, host, **options):
        shown_host = f"[{host}]" if ":" in host else host
        base_url = f"http://{shown_host}:{port}"
        if not host_is_loopback(host):
            self._debug_off(host)
        elif base_url != settings.SITE_URL:
            self.stderr.write(
                f"Note: SITE_URL is {settings.SITE_URL}, but this server answers at {base_url}. Publishing and the "
                f"links you hand out use SITE_URL: set SITE_URL={base_url} (make serve does) unless a proxy "
                "forwards that address here."
            )
        try:
            server = server_start(
                port, name="salience-web", host=host
            )  # first: a busy port is said before anything else
        except PortBusy as busy:
            raise CommandError(busy.message) from None
        call_command("migrate", verbosity=0)  # before the address is printed, so nobody is served too early
        self.stdout.write(self.style.SUCCESS(f"Salience is serving at {base_url}/ (a rehearsal server)"))
        self._login_print()
        self.stdout.write(
            f"  dashboard        {base_url}/\n"
            f"  admin            {base_url}/admin/\n"
            f"  API docs         {base_url}/api/docs/\n"
            f"  local MTurk      {settings.MTURK_LOCAL_ENDPOINT_URL} (workers: {base_url}/localturk/worker/)\n"
            f"  local Prolific   {settings.PROLIFIC_API_URL}\n"
            f"  database         {settings.DATABASES['default']['NAME']}"
        )
        worker, stop = None, None
        if settings.CELERY_TASK_ALWAYS_EAGER:
            stop = loop_thread_start(interval=settings.SYNC_INTERVAL_SECONDS, on_error=self.stderr.write)
            self.stdout.write(
                f"  jobs             eager Celery (no CELERY_BROKER_URL): the campaign loop runs here every "
                f"{settings.SYNC_INTERVAL_SECONDS} s; `python manage.py sync_hits` runs a pass now"
            )
        else:
            worker = worker_process_start()
            self.stdout.write(
                f"  jobs             a Celery worker with beat (pid {worker.pid}) on {settings.CELERY_BROKER_URL}"
            )
        if port != 8000:
            self.stdout.write(f"In another shell, commands reach this server with SITE_URL={base_url} set.")
        warning = site_url_loopback_warning()
        if warning and not host_is_loopback(host):
            self.stderr.write(self.style.WARNING(f"Warning: {warning}"))
        self.stdout.write("Press Ctrl-C to stop.")
        for signum in (signal.SIGINT, signal.SIGTERM):  # both stop the server and the worker cleanly
            signal.signal(signum, _interrupt)
        try:
            while worker is None or worker.poll() is None:
                time.sleep(1)
            raise CommandError(f"The Celery worker exited with status {worker.returncode}; see its output above.")
        except KeyboardInterrupt:
            self.stdout.write("Stopping.")
        finally:
            server.shutdown()
            if stop is not None:
                stop.set()
            if worker is not None and worker.poll() is None:
                worker.terminate()
                worker.wait(timeout=30)

    def _debug_off(self, host: str) -> None:
        """Beyond loopback, strangers reach the server: Django's debug page (settings, URL
        patterns, tracebacks) must never be theirs to see."""
        if settings.DEBUG:
            settings.DEBUG = False
            self.stderr.write(
                self.style.WARNING(
                    f"Debug is off: this server listens on {host}, beyond this machine, so an unknown address or an "
                    "error shows a plain page, never Django's debug page. (DEBUG applies to 127.0.0.1 only.)"
                )
            )

    def _login_print(self) -> None:
        created = first_login_ensure(
            username=os.environ.get("DJANGO_SUPERUSER_USERNAME", ""),
            password=os.environ.get("DJANGO_SUPERUSER_PASSWORD", ""),
        )
        if created is None:
            self.stdout.write("  login            your existing account (`python manage.py createsuperuser` adds one)")
        elif created.password:
            self.stdout.write(
                self.style.SUCCESS(f"  login            {created.username} / {created.password}")
                + f"  (created now; `python manage.py changepassword {created.username}` changes it)"
            )
        else:
            self.stdout.write(
                f"  login            {created.username} (created now, password from DJANGO_SUPERUSER_PASSWORD)"
            )


def _interrupt(signum, frame):
    raise KeyboardInterrupt
