from django.core.management.base import BaseCommand, CommandError

from annotation.models import Campaign
from crowd.qc.worker_quality import campaign_quality_refresh
from ranking.workflow import topic_step


class Command(BaseCommand):
    help = (
        "Run one step for each topic of a campaign now: quality control once, then each topic's "
        "pipeline step, publishing what it chose (the loop, `sync_hits` or Celery beat, does this)."
    )

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
        excluded = campaign_quality_refresh(campaign_id=target.pk)
        for item in topics:
            step = topic_step(topic_id=item.pk, excluded=excluded)
            extra = " ".join(f"{key}={value}" for key, value in step.details.items())
            self.stdout.write(f"{item.key}: {step.action} → {step.state} {extra}".rstrip())
