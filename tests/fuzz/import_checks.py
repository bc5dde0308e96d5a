"""What every import must leave behind, whichever interface ran it: the whole file with one
ImportRecord, or nothing at all and problems that name a file and a line that exists."""

import json
import re

from annotation.importing.importers import MAX_PROBLEMS
from annotation.models import ImportRecord, Proposition, Topic
from tests.fuzz.proposition_files import ProposedFile

DETAIL = re.compile(r"^(?P<file>[^:\[]+?)(?::(?P<line>\d+))?(?: \[(?P<field>\w+)\])?: \S.*", re.S)
KEY_LENGTH = Topic._meta.get_field("key").max_length


def import_snapshot(campaign) -> dict:
    """Everything an import may write, for 'nothing was written' comparisons."""
    return {
        "propositions": sorted(
            Proposition.objects.filter(topic__campaign=campaign).values_list(
                "id", "topic_id", "normalized", "trap_kind"
            )
        ),
        "topics": sorted(Topic.objects.filter(campaign=campaign).values_list("id", "key", "description")),
        "imports": sorted(ImportRecord.objects.filter(campaign=campaign).values_list("id", flat=True)),
    }


def assert_problems_name_lines(details: list[str], *files: ProposedFile) -> None:
    """Each problem reads 'file[:line] [field]: message', for one of `files` and a line in it."""
    assert details and len(details) <= MAX_PROBLEMS
    lines = {file.name: file.lines for file in files}
    for detail in details:
        match = DETAIL.match(detail)
        assert match, f"not 'file:line [field]: message': {detail!r}"
        assert match["file"] in lines, detail
        assert match["line"] is None or 1 <= int(match["line"]) <= lines[match["file"]], detail


def assert_nothing_written(before: dict, campaign) -> None:
    assert import_snapshot(campaign) == before


def assert_imported_whole(summary: dict, before: dict, campaign, *, trap_kind: str = "none") -> None:
    """What the summary (ImportSummary.as_dict()) says was kept is exactly what was written,
    with one ImportRecord holding that summary."""
    after = import_snapshot(campaign)
    before_ids = {row[0] for row in before["propositions"]}
    after_ids = {row[0] for row in after["propositions"]}
    assert before_ids <= after_ids
    new = Proposition.objects.filter(pk__in=after_ids - before_ids)
    assert new.count() == sum(counts["kept"] for counts in summary["topics"].values())
    assert set(new.values_list("trap_kind", flat=True)) <= {trap_kind}
    for key, counts in summary["topics"].items():
        assert counts["read"] == counts["kept"] + counts["below_threshold"] + counts["duplicates"]
        assert new.filter(topic__key=key).count() == counts["kept"]
    after_keys = {row[1] for row in after["topics"]}
    assert after_keys - {row[1] for row in before["topics"]} == set(summary["created_topics"])
    assert all(len(key) <= KEY_LENGTH for key in after_keys)  # SQLite would store a longer one
    record = ImportRecord.objects.get(pk__in=set(after["imports"]) - set(before["imports"]))
    assert record.summary == json.loads(json.dumps(summary))
