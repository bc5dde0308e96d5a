from django.core.management.base import BaseCommand, CommandError

from annotation.models import Batch, Campaign
from config.errors import ApplicationError
from crowd.work.expiry import batch_expire


class Command(BaseCommand):
    help = "Stop offering the remaining HITs of a campaign's published batches (or of one batch)."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="Campaign slug.")
        parser.add_argument("--batch", type=int, help="Only this batch (its id).")

    def handle(self, *args, campaign, batch, **options):
        found = Campaign.objects.filter(slug=campaign).first()
        if found is None:
            raise CommandError(f"No campaign {campaign!r}.")
        batches = Batch.objects.filter(topic__campaign=found).order_by("pk")
        if batch is not None:
            batches = batches.filter(pk=batch)
            if not batches:
                raise CommandError(f"Campaign {campaign!r} has no batch {batch}.")
        else:
            batches = batches.filter(status__in=(Batch.Status.CREATED, Batch.Status.PUBLISHED))
        try:
            for one in batches:
                result = batch_expire(batch_id=one.pk)
                self.stdout.write(
                    f"{one}: expired {result.expired} HITs; {result.unpublished} tasks were never published."
                )
        except ApplicationError as error:
            raise CommandError(error.message) from None
