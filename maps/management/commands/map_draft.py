from django.core.management.base import BaseCommand, CommandError

from annotation.models import Campaign
from maps.checker import map_check
from maps.draft import map_draft
from maps.models import TARGET_CONCEPTS
from maps.workbench import map_propositions


class Command(BaseCommand):
    help = (
        "The automatic draft of a topic's concept map: concepts merged by stemmed label, then the crowd's "
        "propositions in importance order, greedily, into a connected map of at most --target concepts. "
        "Says the largest map it reached when no connected map of the target size exists."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="the campaign's slug")
        parser.add_argument("--topic", required=True, help="the topic's key")
        parser.add_argument("--target", type=int, default=TARGET_CONCEPTS, help="concepts in the map (default 25)")

    def handle(self, *args, campaign, topic, target, **options):
        found = Campaign.objects.filter(slug=campaign).first()
        if found is None:
            raise CommandError(f"No campaign {campaign!r}.")
        chosen = found.topics.filter(key=topic).first()
        if chosen is None:
            keys = ", ".join(found.topics.order_by("key").values_list("key", flat=True)) or "none"
            raise CommandError(f"Campaign {campaign!r} has no topic {topic!r}; its topics: {keys}.")
        result = map_draft(topic=chosen, target=target)
        check = map_check(map_propositions(result.concept_map))
        self.stdout.write(result.message)
        self.stdout.write(
            f"Checker: {check.concepts} concepts, {check.relations} relations, connected: {str(check.connected).lower()}"
            + ("" if check.passes else f", duplicate relations: {len(check.duplicate_pairs)}")
        )
