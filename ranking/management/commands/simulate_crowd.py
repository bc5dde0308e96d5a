from pathlib import Path

import requests
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from annotation.models import Batch, Campaign, Proposition
from config.errors import ApplicationError
from crowd.channels.links import links
from crowd.marketplaces.registry import channel_policy
from crowd.models import HIT, ParticipantLink, Study, WorkSession
from crowd.simulation.hits import SimulationError, SimulationReport, crowd_simulate
from crowd.simulation.sessions import CrowdOptions, links_simulate, prolific_simulate
from crowd.simulation.truth import truth_read
from ranking.channel_demo import local_prolific_returner, local_prolific_starter

# The open link the simulated participants come through, made on a links campaign's first rehearsal.
SIMULATED_LINK_LABEL = "simulated crowd (simulate_crowd)"


class Command(BaseCommand):
    help = (
        "Let a simulated crowd do a local campaign's open work over HTTP, as people would: the HITs on the "
        "local MTurk endpoint's worker site, the sessions of a participant-links campaign (through an open "
        "link), or the studies on the local Prolific endpoint. The server must be running."
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
            "--truth",
            type=Path,
            help="TSV/CSV with the columns id (the propositions file's id) and importance (or score), optionally "
            "topic: the simulated workers rate by it instead of by noise. The propositions file with an "
            "importance column will do.",
        )
        parser.add_argument(
            "--base-url",
            help="The running server, e.g. http://127.0.0.1:8000 (default: SITE_URL; on MTurk campaigns "
            "MTURK_LOCAL_ENDPOINT_URL).",
        )

    def handle(self, *args, campaign, workers, spammers, trap_blind, seed, truth, base_url, **options):
        found = Campaign.objects.filter(slug=campaign).first()
        if found is None:
            raise CommandError(f"No campaign {campaign!r}.")
        if found.environment != Campaign.Environment.LOCAL:
            raise CommandError(
                f"Campaign {campaign!r} publishes to {channel_policy(found.channel).environment_label(found.environment)}: "
                "a simulated crowd works only on the local endpoints."
            )
        if workers < 1 or not 0 <= spammers <= 1 or not 0 <= trap_blind <= 1:
            raise CommandError("--workers must be at least 1; --spammers and --trap-blind are shares from 0 to 1.")
        crowd: CrowdOptions = {
            "workers": workers,
            "spammers": spammers,
            "trap_blind": trap_blind,
            "seed": seed,
            "latent": self._truth(found, truth) if truth else None,
            "traps": list(
                Proposition.objects.filter(topic__campaign=found)
                .exclude(trap_kind=Proposition.TrapKind.NONE)
                .values_list("pk", flat=True)
            ),
        }
        base = (base_url or settings.SITE_URL).rstrip("/")
        work = {
            Campaign.Channel.MTURK: self._mturk,
            Campaign.Channel.LINKS: self._links,
            Campaign.Channel.PROLIFIC: self._prolific,
        }[Campaign.Channel(found.channel)]
        try:
            report, where = work(found, crowd, base, base_url)
        except SimulationError as error:
            raise CommandError(str(error)) from None
        except requests.RequestException as error:
            raise CommandError(f"Cannot work through {base}: {error}. Is the server running?") from None
        self._say(found, report, where, truth)

    def _truth(self, campaign: Campaign, path: Path) -> dict[int, float]:
        """The crowd's latent importances from the truth file; ids the campaign lacks are said, not fatal."""
        try:
            data = path.read_bytes()
        except OSError as error:
            raise CommandError(f"Cannot read the truth file {path}: {error.strerror or error}.") from None
        try:
            truth = truth_read(campaign=campaign, data=data, filename=str(path))
        except ApplicationError as error:
            raise CommandError(error.message) from None
        if truth.skipped:
            self.stdout.write(
                f"{path}: {len(truth.skipped)} id(s) the campaign does not have (dropped at import?) skipped, "
                f"first {truth.skipped[0]}; {len(truth.latent)} propositions rated by the file."
            )
        return truth.latent

    def _mturk(self, campaign, crowd, base, base_url) -> tuple[SimulationReport, str]:
        localturk_url = f"{base}/localturk/" if base_url else settings.MTURK_LOCAL_ENDPOINT_URL
        hit_ids = HIT.objects.filter(
            task__batch__topic__campaign=campaign, environment=Campaign.Environment.LOCAL, deleted=False
        ).values_list("hit_id", flat=True)
        return crowd_simulate(localturk_url=localturk_url, hit_ids=list(hit_ids), **crowd), localturk_url

    def _links(self, campaign, crowd, base, base_url) -> tuple[SimulationReport, str]:
        real = WorkSession.objects.filter(campaign=campaign).exclude(link__label=SIMULATED_LINK_LABEL)
        if real.exists():
            raise CommandError(
                f"Campaign {campaign.slug!r} has {real.count()} session(s) of real participants: a simulated crowd "
                "would mix its answers into theirs. Rehearse on a campaign of its own."
            )
        link = campaign.participant_links.filter(
            kind=ParticipantLink.Kind.OPEN, label=SIMULATED_LINK_LABEL, revoked_at__isnull=True
        ).first()
        if link is None:
            link = links.link_create(campaign=campaign, kind=ParticipantLink.Kind.OPEN, label=SIMULATED_LINK_LABEL)
            self.stdout.write(f"Made the open link {SIMULATED_LINK_LABEL!r} for the simulated participants.")
        link_url = f"{base}{reverse('sessions:link', args=[link.token])}"
        return links_simulate(link_url=link_url, **crowd), link_url

    def _prolific(self, campaign, crowd, base, base_url) -> tuple[SimulationReport, str]:
        studies = (
            Study.objects.of_campaign(campaign).filter(batch_links__batch__status=Batch.Status.PUBLISHED).distinct()
        )
        study_ids = list(studies.exclude(study_id="").order_by("pk").values_list("study_id", flat=True))
        if not study_ids:
            raise CommandError(f"Campaign {campaign.slug!r} has no open study: publish a round first.")
        report = prolific_simulate(
            start_participant=local_prolific_starter(base),
            return_study=local_prolific_returner(base),
            study_ids=study_ids,
            **crowd,
        )
        return report, f"{base}/localprolific/"

    def _say(self, campaign: Campaign, report: SimulationReport, where: str, truth: Path | None) -> None:
        policy = channel_policy(campaign.channel)
        behaviours = ", ".join(f"{name} {count}" for name, count in sorted(report.by_behaviour.items())) or "none"
        rated_by = f"rating by {truth}" if truth else "rating by a truth drawn from --seed"
        if campaign.channel == Campaign.Channel.MTURK:
            self.stdout.write(
                f"Simulated crowd: {report.submitted} assignments submitted in {report.rounds} rounds ({behaviours}); "
                f"{report.refused} accepts refused, {report.turned_away} pages turned the worker away; {rated_by}."
            )
            return
        self.stdout.write(
            f"Simulated crowd on {where}: {policy.tasks_wording(report.submitted)} submitted in sessions "
            f"({behaviours}); {report.refused} arrivals refused, {report.turned_away} sessions turned away; "
            f"{rated_by}."
        )
        if not report.submitted:
            self.stdout.write("Nothing was there to do: publish a round first (or every task has its answers).")
