"""`manage.py check_maps DIR [NAME_REGEX]`: the corpus's `eval.CheckConceptMaps` on every `.cmap`
under DIR (recursively): concepts, relations, connected, double edges; exit status 4 when a map
is not connected or has two relations on one ordered concept pair, as the jar does."""

import re
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from maps.checker import map_check
from maps.evaluation.corpus import EvaluationInputError, map_file_read, maps_find


class Command(BaseCommand):
    help = (
        "Check concept maps as the corpus's CheckConceptMaps does: per *.cmap under DIR, concepts, relations, "
        "connected and double edges; exit status 4 when a map fails."
    )

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path)
        parser.add_argument("name_regex", nargs="?", default=".*", help="Only files whose name matches (default .*).")

    def handle(self, *args, directory, name_regex, **options):
        try:
            pattern = re.compile(name_regex)
        except re.error as error:
            raise CommandError(f"Bad NAME_REGEX {name_regex!r}: {error}.") from None
        try:
            paths = [path for path in maps_find(directory) if pattern.fullmatch(path.name)]
            checked = [(path, map_check(map_file_read(path).propositions)) for path in paths]
        except EvaluationInputError as error:
            raise CommandError(str(error)) from None
        failed = 0
        for path, check in checked:
            self.stdout.write(str(path))
            self.stdout.write(f"concepts: \t{check.concepts}")
            self.stdout.write(f"relations: \t{check.relations}")
            self.stdout.write(f"connected: \t{str(check.connected).lower()}")
            for source, target in check.duplicate_pairs:
                self.stdout.write(f"duplicate relation: \t{source} <-> {target}")
            for labels in check.case_variants:
                self.stderr.write(
                    f"warning: {path}: case variants {' / '.join(labels)} (the corpus jar keeps them apart)"
                )
            failed += not check.passes
        if failed:
            raise CommandError(f"{failed} of {len(checked)} concept maps fail the check.", returncode=4)
        if not checked:
            self.stderr.write(f"No *.cmap files under {directory}.")
