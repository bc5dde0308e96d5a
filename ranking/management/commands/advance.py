from django.core.management.base import BaseCommand, CommandError

from annotation.models import Campaign
from ranking.pipeline import topic_advance


class Command(BaseCommand):
    help = "Run one pipeline step for each topic of a campaign (the sync runs it automatically)."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--topic")

    def handle(self, *args, campaign, topic, **options):
        try:
            target = Campaign.objects.get(slug=campaign)
        except Campaign.DoesNotExist:
            raise CommandError(f"No campaign with the slug {campaign!r}.") from None
        topics = target.topics.order_by("key")
        if topic:
            topics = topics.filter(key=topic)
            if not topics.exists():
                raise CommandError(f"Campaign {campaign!r} has no topic {topic!r}.")
        for item in topics:
            step = topic_advance(topic_id=item.pk)
            extra = " ".join(f"{key}={value}" for key, value in step.details.items())
            self.stdout.write(f"{item.key}: {step.action} → {step.state} {extra}".rstrip())
