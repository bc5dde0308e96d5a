import logging
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotation.models import Campaign
from crowd.marketplaces.registry import channel_offers
from maps.draft import draft_lines
from ranking.channel_demo import channel_demo_run
from ranking.demo import (
    PortBusy,
    RoundProgress,
    demo_campaign_create,
    demo_run,
    demo_user,
    result_lines,
    serve_until_interrupted,
    server_start,
    tryout_link_create,
)

CHANNELS = Campaign.Channel.values
PROGRESS_SECONDS = 10.0
DEFAULT_CHANNEL = Campaign._meta.get_field("channel").default


class Command(BaseCommand):
    help = (
        "A whole campaign on this machine: import the shipped sample, publish it on a channel "
        "(--channel mturk: the local MTurk endpoint; prolific: the local Prolific endpoint; links: "
        "participant links), let a simulated crowd work through the real pages, and run Likert → "
        "quality control → comparison batches → final ranking. Then serve the dashboard until Ctrl-C."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--channel",
            choices=CHANNELS,
            default=DEFAULT_CHANNEL,
            help=f"Default {DEFAULT_CHANNEL}. " + "; ".join(channel_offers()) + ".",
        )
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--quick", action="store_true", help="40 propositions per topic and a smaller comparison round."
        )
        parser.add_argument(
            "--no-serve", action="store_true", help="Exit after the run instead of serving the dashboard."
        )
        parser.add_argument(
            "--workers", type=int, default=30, help="The simulated crowd; the same people work every round."
        )
        parser.add_argument("--spammers", type=float, default=0.1)

    def handle(self, *args, channel, port, quick, no_serve, workers, spammers, **options):
        if not settings.CELERY_TASK_ALWAYS_EAGER:
            self.stderr.write("The demo runs Celery eagerly: unset CELERY_BROKER_URL.")
            return
        started = self._answers_shown = time.monotonic()
        logging.getLogger("celery").setLevel(logging.WARNING)  # one line per task would drown the output
        call_command("migrate", verbosity=0)
        base_url = f"http://127.0.0.1:{port}"
        settings.SITE_URL = base_url
        # A simulated crowd submits faster than people: the rate limits would turn it away.
        settings.SUBMIT_RATE_PER_WORKER = settings.SUBMIT_RATE_PER_ADDRESS = 0
        settings.MTURK_LOCAL_ENDPOINT_URL = f"{base_url}/localturk/"
        settings.PROLIFIC_API_URL = f"{base_url}/localprolific/api/v1/"
        settings.PROLIFIC_COMPLETION_URL = f"{base_url}/localprolific/submissions/complete?cc={{code}}"
        try:
            server = server_start(port)  # (its WSGI handler configures logging anew)
        except PortBusy as busy:
            raise CommandError(busy.message) from None
        # The simulated crowd is turned away from full studies and closed HITs on purpose (409s).
        logging.getLogger("django.request").setLevel(logging.ERROR)
        user = demo_user()
        campaign, latent = demo_campaign_create(owner=user, channel=channel, per_topic=40 if quick else None)
        crowd = {"workers": workers, "spammers": spammers}
        if channel == "mturk":
            self.stdout.write(
                f"Campaign {campaign.slug!r} on the local MTurk endpoint: {campaign.topics.count()} topics, "
                f"{len(latent)} propositions; {workers} simulated workers ({spammers:.0%} spammers), the same "
                f"{workers} in every round."
            )
            report = self._mturk_run(campaign, latent, crowd)
            where = f"{base_url}/campaigns/{campaign.slug}/  (log in as demo / demo)\n"
            where += f"Local MTurk worker site: {base_url}/localturk/worker/"
        else:
            self.stdout.write(
                f"Campaign {campaign.slug!r} on {channel}: {campaign.topics.count()} topics, {len(latent)} "
                f"propositions; {workers} simulated participants ({spammers:.0%} spammers), the same {workers} in every "
                f"round, {campaign.tasks_per_session} tasks per session."
            )
            report = channel_demo_run(
                campaign=campaign,
                channel=channel,
                latent=latent,
                base_url=base_url,
                on_round=self._line,
                on_answers=self._answers,
                **crowd,
            )
            where = f"{base_url}/campaigns/{campaign.slug}/channel/  (log in as demo / demo)"
        unit = "assignments" if channel == "mturk" else "tasks"
        self.stdout.write(
            f"\n{report.submitted} {unit} in {report.rounds} rounds, {time.monotonic() - started:.0f} s.\n"
        )
        for line in result_lines(campaign, latent):
            self.stdout.write(line)
        self.stdout.write("\nAutomatic concept-map drafts (the topic's Maps page has them):")
        for line in draft_lines(campaign=campaign):
            self.stdout.write(line)
        self.stdout.write(self.style.SUCCESS(f"\nDashboard: {where}"))
        tryout = tryout_link_create(owner=user)
        self.stdout.write(
            self.style.SUCCESS(f"Try a HIT yourself: {tryout}")
            + "\n  (a participant link of campaign demo-try: a consent page, then 3 Likert tasks in your browser)"
        )
        again = self._serve_again(port)
        if no_serve:
            server.shutdown()
            self.stdout.write(f"The demo's server has stopped; {again}")
            return
        self.stdout.write(f"After Ctrl-C, {again}")
        serve_until_interrupted(server, self.stdout.write)

    def _serve_again(self, port: int) -> str:
        """The command that serves the demo's pages and links again once this process is gone."""
        database = settings.DATABASES["default"]
        options = [f"SERVE_DB={database['NAME']}"] if database["ENGINE"] == "django.db.backends.sqlite3" else []
        options += [f"PORT={port}"] if port != 8000 else []
        return f"`{' '.join(['make serve', *options])}` serves these pages again."

    def _mturk_run(self, campaign, latent, crowd):
        bars: dict[str, tqdm] = {}

        def show(report):
            for status in report.statuses:
                bar = bars.get(status.key) or tqdm(
                    total=status.batches_expected,
                    leave=True,
                    position=len(bars),
                    bar_format="{desc} {bar:30} {n_fmt}/{total_fmt} batches",
                )
                bars[status.key] = bar
                bar.total = status.batches_expected
                bar.n = status.batches_done
                rho = f"  ρ(prev)={status.last_spearman:.3f}" if status.last_spearman is not None else ""
                bar.set_description_str(f"{status.key:<16} {status.state:<11}{rho:<17}", refresh=True)

        report = demo_run(
            campaign=campaign,
            latent=latent,
            localturk_url=settings.MTURK_LOCAL_ENDPOINT_URL,
            on_round=show,
            on_answers=self._answers,
            **crowd,
        )
        for bar in bars.values():
            bar.close()
        return report

    def _answers(self, progress: RoundProgress) -> None:
        """A line every PROGRESS_SECONDS while a round runs (the Likert round takes a minute)."""
        now = time.monotonic()
        if now - self._answers_shown < PROGRESS_SECONDS:
            return
        self._answers_shown = now
        with tqdm.external_write_mode(file=self.stdout):  # the MTurk run's progress bars stay below the line
            self.stdout.write(f"  {progress.what}: {progress.answers:,} / {progress.expected:,} answers")

    def _line(self, report):
        states = ", ".join(
            f"{s.key} {s.state} {s.batches_done}/{s.batches_expected}"
            + (f" ρ(prev)={s.last_spearman:.3f}" if s.last_spearman is not None else "")
            for s in report.statuses
        )
        self.stdout.write(f"round {report.rounds}: {report.submitted} tasks done; {states}")
