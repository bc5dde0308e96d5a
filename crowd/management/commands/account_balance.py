from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Campaign
from config.errors import ApplicationError
from crowd.marketplaces.registry import marketplace_for


class Command(BaseCommand):
    help = "Print the requester's available balance at MTurk (the sandbox always shows $10,000.00)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--environment", choices=Campaign.Environment.values, help="Default: the MTURK_ENVIRONMENT setting."
        )

    def handle(self, *args, environment, **options):
        environment = environment or settings.MTURK_ENVIRONMENT
        try:
            balance = marketplace_for(channel=Campaign.Channel.MTURK, environment=environment).balance()
        except ApplicationError as error:
            raise CommandError(error.message) from None
        self.stdout.write(f"MTurk {environment}: ${balance} available.")
