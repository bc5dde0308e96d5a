import logging
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from crowd.channel_demo import channel_demo_run
from ranking.demo import demo_campaign_create, demo_user, result_lines, serve_until_interrupted, server_start


class Command(BaseCommand):
    help = (
        "`make demo` on a session channel: the shipped sample recruited through the local Prolific "
        "endpoint (--channel prolific) or participant links (--channel links), worked by a simulated "
        "crowd in sessions through the real pages, through Likert, quality control and comparisons "
        "to the final ranking. Then serve the dashboard until Ctrl-C."
    )

    def add_arguments(self, parser):
        parser.add_argument("--channel", choices=["prolific", "links"], required=True)
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--quick", action="store_true", help="40 propositions per topic and a smaller comparison round."
        )
        parser.add_argument(
            "--no-serve", action="store_true", help="Exit after the run instead of serving the dashboard."
        )
        parser.add_argument("--workers", type=int, default=30)
        parser.add_argument("--spammers", type=float, default=0.1)

    def handle(self, *args, channel, port, quick, no_serve, workers, spammers, **options):
        if not settings.CELERY_TASK_ALWAYS_EAGER:
            self.stderr.write("The demo runs Celery eagerly: unset CELERY_BROKER_URL.")
            return
        started = time.monotonic()
        logging.getLogger("celery").setLevel(logging.WARNING)
        call_command("migrate", verbosity=0)
        base_url = f"http://127.0.0.1:{port}"
        settings.SITE_URL = base_url
        # A simulated crowd submits faster than people: the rate limits would turn it away.
        settings.SUBMIT_RATE_PER_WORKER = settings.SUBMIT_RATE_PER_ADDRESS = 0
        settings.PROLIFIC_API_URL = f"{base_url}/localprolific/api/v1/"
        settings.PROLIFIC_COMPLETION_URL = f"{base_url}/localprolific/submissions/complete?cc={{code}}"
        server = server_start(port)
        user = demo_user()
        campaign, latent = demo_campaign_create(owner=user, per_topic=40 if quick else None)
        self.stdout.write(
            f"Campaign {campaign.slug!r} on {channel}: {campaign.topics.count()} topics, {len(latent)} propositions; "
            f"{workers} simulated participants ({spammers:.0%} spammers), {campaign.tasks_per_session} tasks per session."
        )

        def show(report):
            states = ", ".join(
                f"{s.key} {s.state} {s.batches_done}/{s.batches_expected}"
                + (f" ρ(prev)={s.last_spearman:.3f}" if s.last_spearman is not None else "")
                for s in report.statuses
            )
            self.stdout.write(f"round {report.rounds}: {report.submitted} tasks done; {states}")

        report = channel_demo_run(
            campaign=campaign,
            channel=channel,
            latent=latent,
            base_url=base_url,
            workers=workers,
            spammers=spammers,
            on_round=show,
        )
        self.stdout.write(
            f"\n{report.submitted} tasks in {report.rounds} rounds, {time.monotonic() - started:.0f} s.\n"
        )
        for line in result_lines(campaign, latent):
            self.stdout.write(line)
        self.stdout.write(
            self.style.SUCCESS(f"\nDashboard: {base_url}/campaigns/{campaign.slug}/channel/  (log in as demo / demo)")
        )
        if no_serve:
            server.shutdown()
            return
        serve_until_interrupted(server, self.stdout.write)
