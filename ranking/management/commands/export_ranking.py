import os
import sys

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Campaign
from ranking import export


class Command(BaseCommand):
    help = "Export the ranking per topic, the raw labels behind it, or concept-map-ready triples."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--topic", help="One topic key (default: every topic of the campaign).")
        parser.add_argument("--format", default="csv", choices=export.FORMATS)
        parser.add_argument("--top", type=int, help="Only the best N propositions per topic.")
        parser.add_argument(
            "--what",
            default="ranking",
            choices=("ranking", "labels", "concept-map"),
            help="ranking (default), raw labels, or a subject<TAB>relation<TAB>object list (top 50).",
        )
        parser.add_argument("--output", help="File to write (default: standard output).")

    def handle(self, *args, campaign, topic, format, top, what, output, **options):
        try:
            target = Campaign.objects.get(slug=campaign)
        except Campaign.DoesNotExist:
            raise CommandError(f"No campaign with the slug {campaign!r}.") from None
        topics = target.topics.all()
        if topic:
            topics = topics.filter(key=topic)
            if not topics.exists():
                raise CommandError(f"Campaign {campaign!r} has no topic {topic!r}.")
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
            self.stderr.write(f"Wrote {written} rows to {output}.")

    def _write(self, topics, fmt, top, what, stream) -> int:
        if what == "concept-map":
            lines = [line for topic in topics for line in export.concept_map_lines(topic=topic, top=top or 50)]
            stream.write("".join(line + "\n" for line in lines))
            return len(lines)
        if what == "labels":
            rows = (row for topic in topics for row in export.raw_label_rows(topic=topic))
            columns = tuple(dict.fromkeys(export.LIKERT_COLUMNS + export.COMPARISON_COLUMNS))
            return export.write_rows(rows, fmt, stream, columns=columns)
        rows = (row for topic in topics for row in export.ranking_rows(topic=topic, top=top))
        return export.write_rows(rows, fmt, stream)
