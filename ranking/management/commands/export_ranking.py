import os
import sys

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Campaign
from ranking import export
from ranking.bundle import campaign_bundle_write


class Command(BaseCommand):
    help = (
        "Export the ranking per topic, the raw labels behind it, or a topic's top 50 propositions; "
        "or, with --all-topics, one zip with all of them for every topic."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--topic", help="One topic key (default: every topic of the campaign).")
        parser.add_argument("--format", default="csv", choices=export.FORMATS)
        parser.add_argument("--top", type=int, help="Only the best N propositions per topic.")
        parser.add_argument(
            "--what",
            default="ranking",
            choices=("ranking", "labels", "top-propositions"),
            help="ranking (default), raw labels, or one topic's top propositions: subject<TAB>relation<TAB>object "
            "per line, no header, top 50 unless --top (the input of a concept map, not one).",
        )
        parser.add_argument(
            "--all-topics",
            action="store_true",
            help="Write one zip to --output: per topic the ranking (CSV and TSV), the labels (CSV) and the "
            "top 50 propositions, with a README.txt saying which file is which.",
        )
        parser.add_argument("--output", help="File to write (default: standard output).")

    def handle(self, *args, campaign, topic, format, top, what, output, all_topics, **options):
        try:
            target = Campaign.objects.get(slug=campaign)
        except Campaign.DoesNotExist:
            raise CommandError(f"No campaign with the slug {campaign!r}.") from None
        if all_topics:
            self._write_bundle(target, topic=topic, output=output, narrowed=(what != "ranking" or top is not None))
            return
        topics = target.topics.all()
        if topic:
            topics = topics.filter(key=topic)
            if not topics.exists():
                raise CommandError(f"Campaign {campaign!r} has no topic {topic!r}.")
        elif what == "top-propositions" and topics.count() > 1:
            raise CommandError(
                f"A top-propositions file holds one topic and campaign {campaign!r} has {topics.count()}: give "
                "--topic KEY, or --all-topics --output FILE.zip for a zip with every topic's."
            )
        stream = open(output, "w", encoding="utf-8", newline="") if output else sys.stdout
        try:
            written = self._write(list(topics), format, top, what, stream)
            stream.flush()
        except BrokenPipeError:
            # The reader stopped early (`export_ranking ... | head`): what it read is all it
            # wanted. Point stdout at /dev/null so the interpreter's own flush at exit is quiet.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return
        finally:
            if output:
                stream.close()
        if output:
            unit = "top-proposition lines" if what == "top-propositions" else "rows"
            self.stderr.write(f"Wrote {written} {unit} to {output}.")

    def _write_bundle(self, campaign: Campaign, *, topic: str | None, output: str | None, narrowed: bool) -> None:
        if topic or narrowed:
            raise CommandError("--all-topics writes every file of every topic: leave out --topic, --what and --top.")
        if not output:
            raise CommandError("--all-topics writes a zip: name it with --output, e.g. --output export.zip.")
        with open(output, "wb") as archive:
            topics = campaign_bundle_write(campaign=campaign, target=archive)
        self.stderr.write(f"Wrote {topics} topic{'s' if topics != 1 else ''} to {output} (see README.txt inside).")

    def _write(self, topics, fmt, top, what, stream) -> int:
        if what == "top-propositions":
            return sum(export.write_top_propositions(topic=topic, stream=stream, top=top or 50) for topic in topics)
        if what == "labels":
            rows = (row for topic in topics for row in export.raw_label_rows(topic=topic))
            return export.write_rows(rows, fmt, stream, columns=export.LABEL_COLUMNS)
        rows = (row for topic in topics for row in export.ranking_rows(topic=topic, top=top))
        return export.write_rows(rows, fmt, stream)
