import sys
from contextlib import ExitStack
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from annotation.importing.formats import DELIMITERS, FORMATS
from annotation.importing.importers import ImportFailed, propositions_import
from annotation.models import Campaign


class Command(BaseCommand):
    help = "Import propositions (TSV, CSV, JSON Lines or Open IE output) into a campaign."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--campaign", required=True, help="Campaign slug.")
        parser.add_argument("--topics", help="TSV/CSV with key and description per topic.")
        parser.add_argument("--traps", help="Subtle traps (plausible but off-topic), in the file's columns.")
        parser.add_argument("--topic", help="Topic key for Open IE files (default: the file name).")
        parser.add_argument("--format", default="auto", help=f"auto or one of {', '.join(FORMATS)}.")
        parser.add_argument(
            "--delimiter",
            default="auto",
            choices=("auto", *DELIMITERS),
            help="For TSV and CSV files; auto finds the one that splits the header into its columns.",
        )
        parser.add_argument("--min-confidence", type=float, default=0.5)
        parser.add_argument(
            "--trap-kind",
            default="none",
            choices=("none", "subtle"),
            help="'subtle' imports the rows as subtle traps (plausible but off-topic).",
        )

    def handle(
        self, *args, file, campaign, topics, traps, topic, format, delimiter, min_confidence, trap_kind, **options
    ):
        if not 0.0 <= min_confidence <= 1.0:
            raise CommandError(f"--min-confidence must be between 0 and 1, not {min_confidence}.")
        try:
            target = Campaign.objects.get(slug=campaign)
        except Campaign.DoesNotExist:
            raise CommandError(f"No campaign with the slug {campaign!r}.") from None
        except DatabaseError as error:
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise CommandError(f"The database is not ready ({reason}): run `python manage.py migrate` first.") from None
        with ExitStack() as files:
            handle, topics_handle, traps_handle = (
                _open(name, option, files)
                for name, option in ((file, "file"), (topics, "--topics"), (traps, "--traps"))
            )
            try:
                summary = propositions_import(
                    campaign=target,
                    source=handle,
                    filename=Path(file).name,
                    format=format,
                    delimiter=delimiter,
                    min_confidence=min_confidence,
                    topics_source=topics_handle,
                    topics_filename=topics or "topics",
                    traps_source=traps_handle,
                    traps_filename=traps or "traps",
                    topic_key=topic,
                    progress=sys.stderr.isatty(),
                    trap_kind=trap_kind,
                )
            except ImportFailed as failure:
                self.stderr.write(failure.message)
                for problem in failure.details:
                    self.stderr.write(f"  {problem}")
                sys.exit(2)
        self.stdout.write(
            self.style.SUCCESS(f"Imported {summary.kept} propositions from {Path(file).name} ({summary.read_as}).")
        )
        for line in summary.lines():
            self.stdout.write(line)


def _open(name: str | None, option: str, files: ExitStack):
    """`name` opened for reading bytes (None stays None); any reason it cannot be, as one line."""
    if name is None:
        return None
    try:
        return files.enter_context(open(name, "rb"))
    except OSError as error:
        raise CommandError(f"{option} {name}: {error.strerror or error}.") from None
