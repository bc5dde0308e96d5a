from django.core.management.base import BaseCommand, CommandError

from annotation.models import Batch, Campaign
from config.errors import ApplicationError
from config.site_address import site_url_loopback_warning
from crowd.channels.settings import channel_set
from crowd.marketplaces.registry import channel_policy
from crowd.work.rounds import plans_budget_preview, round_wording, topic_publish_plans
from ranking.stopping import budget_warning
from ranking.workflow import topic_round_publish

MTURK_CLOSED = channel_policy(Campaign.Channel.MTURK).status_note


class Command(BaseCommand):
    help = (
        "Publish a campaign's HITs (the Likert batch of each topic is built first if needed). "
        "--dry-run prints the number of HITs and their cost; production also needs --live."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="Campaign slug.")
        parser.add_argument("--topic", help="Only this topic (its key).")
        parser.add_argument("--kind", choices=Batch.Kind.values, default=Batch.Kind.LIKERT)
        parser.add_argument("--dry-run", action="store_true", help="Print what would be published and its cost.")
        parser.add_argument("--live", action="store_true", help="Confirm publishing to production (real money).")
        parser.add_argument(
            "--channel",
            choices=Campaign.Channel.values,
            help="Where workers come from: links (your own participants), prolific (a study per round) or "
            f"mturk (HITs; {MTURK_CLOSED}). Sets the campaign's channel; fixed once something is published.",
        )

    def handle(self, *args, campaign, topic, kind, dry_run, live, channel, **options):
        found = Campaign.objects.filter(slug=campaign).first()
        if found is None:
            raise CommandError(f"No campaign {campaign!r}.")
        warning = site_url_loopback_warning()
        if warning:
            self.stderr.write(self.style.WARNING(f"Warning: {warning}"))
        if channel:
            try:
                channel_set(campaign=found, channel=channel)
            except ApplicationError as error:
                raise CommandError(error.message) from None
        topics = found.topics.order_by("key")
        if topic:
            topics = topics.filter(key=topic)
        if not topics:
            raise CommandError(f"Campaign {campaign!r} has no topic{f' {topic!r}' if topic else 's'}.")
        where = f"{found.get_channel_display()} ({channel_policy(found.channel).environment_label(found.environment)})"
        if kind == Batch.Kind.LIKERT:
            for one in topics:
                advice = budget_warning(one)
                if advice:
                    self.stderr.write(self.style.WARNING(f"Warning: {advice}"))
        try:
            if dry_run:
                self._plans_print(
                    campaign=found, topics=topics, kind=kind, where=where, policy=channel_policy(found.channel)
                )
            else:
                for one in topics:
                    results = topic_round_publish(topic=one, kind=kind, live=live)
                    wording = round_wording(topic=one, kind=kind, results=results)
                    published = any(result.published for result in results)
                    self.stdout.write(self.style.SUCCESS(wording) if published else wording)
        except ApplicationError as error:
            raise CommandError(error.message) from None

    def _plans_print(self, *, campaign, topics, kind, where, policy):
        plans, refused = [], 0
        for one in topics:
            try:
                topic_plans = topic_publish_plans(topic=one, kind=kind)
            except ApplicationError as error:  # one topic's problem is said, the others still planned
                self.stdout.write(f"{one}: not publishable: {error.message}")
                refused += 1
                continue
            for plan in topic_plans:
                self.stdout.write(f"{plan.batch}: {policy.tasks_wording(plan.hits)}, ${plan.cost}")
                plans.append(plan)
        if not plans:
            self.stdout.write("Nothing to publish." if not refused else "Nothing else to publish.")
            return
        budget = plans_budget_preview(campaign=campaign, plans=plans)
        hits = sum(plan.hits for plan in plans)
        bonuses = f", ${budget.pending_bonuses} of bonuses granted but not paid yet" if budget.pending_bonuses else ""
        verdict = "fits the budget" if budget.fits else f"exceeds the budget by ${budget.shortfall}"
        self.stdout.write(
            f"Dry run: {policy.tasks_wording(hits)} to {where}, ${budget.cost} with fees; ${budget.committed} already "
            f"committed{bonuses}, cap ${budget.cap}: {verdict}."
            + (f" {refused} topic(s) above cannot be published until their problem is fixed." if refused else "")
        )
        if budget.refusal is not None:
            self.stdout.write(f"Publishing would be refused: {budget.refusal.message}")
