import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.importing.formats import FORMATS
from annotation.importing.importers import ImportFailed, propositions_import
from annotation.models import Campaign


class Command(BaseCommand):
    help = "Import propositions (TSV, CSV, JSON Lines or Open IE output) into a campaign."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--campaign", required=True, help="Campaign slug.")
        parser.add_argument("--topics", help="TSV/CSV with key and description per topic.")
        parser.add_argument("--topic", help="Topic key for Open IE files (default: the file name).")
        parser.add_argument("--format", default="auto", help=f"auto or one of {', '.join(FORMATS)}.")
        parser.add_argument("--min-confidence", type=float, default=0.5)
        parser.add_argument(
            "--trap-kind",
            default="none",
            choices=("none", "subtle"),
            help="'subtle' imports the rows as subtle traps (plausible but off-topic).",
        )

    def handle(self, *args, file, campaign, topics, topic, format, min_confidence, trap_kind, **options):
        try:
            target = Campaign.objects.get(slug=campaign)
        except Campaign.DoesNotExist:
            raise CommandError(f"No campaign with the slug {campaign!r}.") from None
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"{file}: no such file.")
        topics_handle = open(topics, "rb") if topics else None
        try:
            with path.open("rb") as handle:
                summary = propositions_import(
                    campaign=target,
                    source=handle,
                    filename=path.name,
                    format=format,
                    min_confidence=min_confidence,
                    topics_source=topics_handle,
                    topics_filename=topics or "topics",
                    topic_key=topic,
                    progress=sys.stderr.isatty(),
                    trap_kind=trap_kind,
                )
        except ImportFailed as failure:
            self.stderr.write(failure.message)
            for problem in failure.details:
                self.stderr.write(f"  {problem}")
            sys.exit(2)
        finally:
            if topics_handle:
                topics_handle.close()
        self.stdout.write(
            self.style.SUCCESS(f"Imported {summary.kept} propositions from {path.name} ({summary.format}).")
        )
        for line in summary.lines():
            self.stdout.write(line)
