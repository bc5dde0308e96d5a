import requests
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Campaign, Proposition
from crowd.marketplaces.registry import channel_policy
from crowd.models import HIT
from crowd.simulation.hits import SimulationError, crowd_simulate


class Command(BaseCommand):
    help = (
        "Let simulated workers do a local campaign's open HITs over HTTP, as people would on the "
        "local endpoint's worker site (the server must be running)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="Campaign slug (environment: local).")
        parser.add_argument("--workers", type=int, default=30)
        parser.add_argument("--spammers", type=float, default=0.1, help="Share of spammers (random or constant).")
        parser.add_argument(
            "--trap-blind", type=float, default=0.1, help="Share of workers who rate traps like the rest."
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--base-url", help="The running server, e.g. http://127.0.0.1:8000 (default: MTURK_LOCAL_ENDPOINT_URL)."
        )

    def handle(self, *args, campaign, workers, spammers, trap_blind, seed, base_url, **options):
        found = Campaign.objects.filter(slug=campaign).first()
        if found is None:
            raise CommandError(f"No campaign {campaign!r}.")
        if found.environment != Campaign.Environment.LOCAL:
            raise CommandError(
                f"Campaign {campaign!r} publishes to {channel_policy(found.channel).environment_label(found.environment)}: "
                "a simulated crowd works only on the local endpoint."
            )
        if workers < 1 or not 0 <= spammers <= 1 or not 0 <= trap_blind <= 1:
            raise CommandError("--workers must be at least 1; --spammers and --trap-blind are shares from 0 to 1.")
        hit_ids = HIT.objects.filter(
            task__batch__topic__campaign=found, environment=Campaign.Environment.LOCAL, deleted=False
        ).values_list("hit_id", flat=True)
        traps = Proposition.objects.filter(topic__campaign=found).exclude(trap_kind=Proposition.TrapKind.NONE)
        localturk_url = f"{base_url.rstrip('/')}/localturk/" if base_url else settings.MTURK_LOCAL_ENDPOINT_URL
        try:
            report = crowd_simulate(
                localturk_url=localturk_url,
                workers=workers,
                spammers=spammers,
                trap_blind=trap_blind,
                seed=seed,
                traps=traps.values_list("pk", flat=True),
                hit_ids=list(hit_ids),
            )
        except SimulationError as error:
            raise CommandError(str(error)) from None
        except requests.RequestException as error:
            raise CommandError(f"Cannot work through {localturk_url}: {error}. Is the server running?") from None
        behaviours = ", ".join(f"{name} {count}" for name, count in sorted(report.by_behaviour.items()))
        self.stdout.write(
            f"Simulated crowd: {report.submitted} assignments submitted in {report.rounds} rounds ({behaviours}); "
            f"{report.refused} accepts refused, {report.turned_away} pages turned the worker away."
        )
