from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.campaigns import campaign_create
from config.errors import ApplicationError


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

    def handle(self, *args, slug, name, description, owner, budget_cap, **options):
        extra = {}
        if budget_cap is not None:
            extra["budget_cap"] = budget_cap
        user = None
        if owner:
            user = get_user_model().objects.filter(username=owner).first()
            if user is None:
                raise CommandError(f"No user named {owner!r}.")
        try:
            campaign = campaign_create(slug=slug, name=name, description=description, owner=user, **extra)
        except ApplicationError as error:
            raise CommandError(error.message) from None
        self.stdout.write(self.style.SUCCESS(f"Created campaign {campaign.slug!r} ({campaign.name})."))
