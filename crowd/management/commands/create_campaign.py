from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.campaigns import campaign_create
from annotation.models import Campaign
from config.errors import ApplicationError
from crowd.channels.settings import campaign_rewards_fit
from crowd.marketplaces.registry import channel_offers, channel_policy


class Command(BaseCommand):
    help = (
        "Create a campaign with the paper's defaults (5 per HIT, 5 assignments, $0.06/$0.05, top 100, 10 % of pairs)."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--name", required=True)
        parser.add_argument("--description", default="")
        parser.add_argument("--owner", help="Username of the researcher who owns the campaign.")
        parser.add_argument("--budget-cap", help="Budget cap in USD (default 100.00).")
        parser.add_argument(
            "--channel",
            choices=Campaign.Channel.values,
            default=Campaign._meta.get_field("channel").default,
            help="Where workers come from (default %(default)s): " + "; ".join(channel_offers()) + ".",
        )
        parser.add_argument(
            "--consent-file",
            type=Path,
            help="A UTF-8 text file: the information and consent page participants agree to before their first "
            "task (Prolific, participant links). Without it: no consent step.",
        )

    def handle(self, *args, slug, name, description, owner, budget_cap, channel, consent_file, **options):
        extra = {"channel": channel}
        if budget_cap is not None:
            extra["budget_cap"] = budget_cap
        if consent_file is not None:
            try:
                extra["consent_text"] = consent_file.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as error:
                raise CommandError(f"Cannot read the consent text from {consent_file}: {error}.") from None
        user = None
        if owner:
            user = get_user_model().objects.filter(username=owner).first()
            if user is None:
                raise CommandError(f"No user named {owner!r}.")
        try:
            campaign = campaign_create(slug=slug, name=name, description=description, owner=user, **extra)
        except ApplicationError as error:
            raise CommandError(error.message) from None
        raised = campaign_rewards_fit(campaign=campaign)
        campaign.refresh_from_db()
        policy = channel_policy(campaign.channel)
        consent = "with a consent page" if campaign.consent_text else "no consent page"
        self.stdout.write(
            self.style.SUCCESS(
                f"Created campaign {campaign.slug!r} ({campaign.name}) on {policy.offered_label}, "
                f"{policy.environment_label(campaign.environment)}; budget cap "
                f"{policy.money_wording(campaign.budget_cap)}; {consent}."
            )
        )
        if raised:
            self.stdout.write(raised)
        self.stdout.write(
            f"Next: python manage.py import_propositions FILE --campaign {campaign.slug} --topics TOPICS_FILE"
        )
