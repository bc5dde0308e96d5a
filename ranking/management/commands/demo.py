import logging
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from tqdm import tqdm

from ranking.demo import demo_campaign_create, demo_run, demo_user, result_lines, serve_until_interrupted, server_start


class Command(BaseCommand):
    help = (
        "A whole campaign on this machine: import the shipped sample, publish to the local MTurk "
        "endpoint, let a simulated crowd work through the real HIT pages, and run Likert → quality "
        "control → comparison batches → final ranking. Then serve the dashboard until Ctrl-C."
    )

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--quick", action="store_true", help="40 propositions per topic and a smaller comparison round."
        )
        parser.add_argument(
            "--no-serve", action="store_true", help="Exit after the run instead of serving the dashboard."
        )
        parser.add_argument("--workers", type=int, default=30)
        parser.add_argument("--spammers", type=float, default=0.1)

    def handle(self, *args, port, quick, no_serve, workers, spammers, **options):
        if not settings.CELERY_TASK_ALWAYS_EAGER:
            self.stderr.write("The demo runs Celery eagerly: unset CELERY_BROKER_URL.")
            return
        started = time.monotonic()
        logging.getLogger("celery").setLevel(logging.WARNING)  # one line per task would drown the bars
        call_command("migrate", verbosity=0)
        base_url = f"http://127.0.0.1:{port}"
        settings.SITE_URL = base_url
        # A simulated crowd submits faster than people: the rate limits would turn it away.
        settings.SUBMIT_RATE_PER_WORKER = settings.SUBMIT_RATE_PER_ADDRESS = 0
        settings.MTURK_LOCAL_ENDPOINT_URL = f"{base_url}/localturk/"
        server = server_start(port)
        user = demo_user()
        campaign, latent = demo_campaign_create(owner=user, per_topic=40 if quick else None)
        self.stdout.write(
            f"Campaign {campaign.slug!r}: {campaign.topics.count()} topics, "
            f"{len(latent)} propositions; {workers} simulated workers ({spammers:.0%} spammers)."
        )
        bars = {}

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
            workers=workers,
            spammers=spammers,
            on_round=show,
        )
        for bar in bars.values():
            bar.close()
        self.stdout.write(
            f"\n{report.submitted} assignments in {report.rounds} rounds, {time.monotonic() - started:.0f} s.\n"
        )
        for line in result_lines(campaign, latent):
            self.stdout.write(line)
        self.stdout.write(
            self.style.SUCCESS(
                f"\nDashboard: {base_url}/campaigns/{campaign.slug}/  (log in as demo / demo)\n"
                f"Local MTurk worker site: {base_url}/localturk/worker/"
            )
        )
        if no_serve:
            server.shutdown()
            return
        serve_until_interrupted(server, self.stdout.write)
