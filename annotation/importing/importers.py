"""Importing propositions into a campaign: one file (with its topics file and traps file, if
any), one transaction, a summary per topic.

The file is streamed line by line into the table (writing.py: COPY on PostgreSQL, fed while
the file is read), so that memory holds little more than each topic's normalized texts, for
finding duplicates, even for files of hundreds of thousands of rows. A line ends at a line
feed (LF, or CRLF), whatever the source is (a file, an upload, bytes in memory), so every
interface reads the same bytes the same way; a lone carriage return does not end a line. Any
problem (undecodable bytes, a missing column, an empty field, a bad confidence, a new
proposition for a topic whose Likert round is built: topics.py) rolls every file back; up to
`MAX_PROBLEMS` problems are reported with the file name and physical line number.

Limits, each a problem of its line (checks.py): a topic key holds at most 100 characters, each
safe in a URL since the key names the topic's pages (annotation/url_keys.py: ASCII letters,
digits, "-", "_", and "." between two of them); a proposition's normalized text (subject –
relation – object, lower-cased, white space folded) at most 2,000 bytes in UTF-8, so that it
fits, with room to spare, the 2,704-byte row of PostgreSQL's btree index that keeps it unique
per topic; no field may hold a NUL character or an unpaired surrogate (a JSON \\ud800 escape
without its pair), which no database stores as text.
"""

import io
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from django.conf import settings
from django.db import transaction

from annotation.campaigns import campaign_import_refusal
from annotation.importing import formats
from annotation.importing.checks import PROPOSITION_MAX_BYTES, key_problems, row_problems, text_problems
from annotation.importing.formats import DELIMITER_NAMES, DELIMITERS, Problem, Row
from annotation.importing.problems import MAX_PROBLEMS, ImportFailed, ProblemLog
from annotation.importing.topics import OpenTopic, TopicRegistry
from annotation.importing.writing import Candidate, propositions_write
from annotation.models import Campaign, ImportRecord, Proposition, Topic
from annotation.text import normalize_text, proposition_text

__all__ = ["MAX_PROBLEMS", "PROPOSITION_MAX_BYTES", "ImportFailed", "ImportSummary", "propositions_import"]

SNIFF_BYTES = 8192


@dataclass
class TopicCounts:
    read: int = 0
    kept: int = 0
    below_threshold: int = 0
    duplicates: int = 0
    ids_filled: int = 0  # propositions imported before without an id that this file gave one


@dataclass
class ImportSummary:
    filename: str
    format: str
    delimiter: str = ""  # tab, comma or semicolon (formats.DELIMITERS) for tsv and csv; "" otherwise
    min_confidence: float = 0.5  # the confidence threshold: rows below it are not kept
    topics: dict[str, TopicCounts] = field(default_factory=dict)
    traps: dict[str, TopicCounts] = field(default_factory=dict)  # from the traps file, per topic
    created_topics: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def kept(self) -> int:
        return sum(counts.kept for counts in self.topics.values())

    @property
    def read_as(self) -> str:
        """How the file was read, for messages: 'csv, semicolon-separated'."""
        return f"{self.format}, {self.delimiter}-separated" if self.delimiter else self.format

    def as_dict(self) -> dict:
        return {
            "file": self.filename,
            "format": self.format,
            "delimiter": self.delimiter,
            "min_confidence": self.min_confidence,
            "topics": {key: vars(counts) for key, counts in sorted(self.topics.items())},
            "traps": {key: vars(counts) for key, counts in sorted(self.traps.items())},
            "created_topics": self.created_topics,
            "warnings": self.warnings,
        }

    def lines(self) -> list[str]:
        """A plain-text table for the terminal and the admin."""
        below = f"below {self.min_confidence:g}"
        rows = [f"{'topic':<24} {'read':>8} {'kept':>8} {below:>10} {'dupes':>8} {'ids added':>10}"]
        for label, table in (("", self.topics), ("traps ", self.traps)):
            for key, counts in sorted(table.items()):
                rows.append(
                    f"{label + key:<24} {counts.read:>8} {counts.kept:>8} {counts.below_threshold:>10} "
                    f"{counts.duplicates:>8} {counts.ids_filled:>10}"
                )
        notes = [f"(below {self.min_confidence:g}: rows under the confidence threshold --min-confidence, not kept)"]
        filled = sum(counts.ids_filled for counts in (*self.topics.values(), *self.traps.values()))
        if filled:
            notes.append(
                f"(ids added: {filled} proposition(s) imported before without an id got the id this file gives them)"
            )
        return rows + notes + [f"warning: {warning}" for warning in self.warnings]


def propositions_import(
    *,
    campaign: Campaign,
    source: BinaryIO,
    filename: str,
    format: str = "auto",
    delimiter: str = "auto",
    min_confidence: float = 0.5,
    topics_source: BinaryIO | None = None,
    topics_filename: str = "topics",
    traps_source: BinaryIO | None = None,
    traps_filename: str = "traps",
    topic_key: str | None = None,
    user=None,
    progress: bool = False,
    trap_kind: str = Proposition.TrapKind.NONE,
) -> ImportSummary:
    """Import one proposition file, with optionally a topics file and a traps file, into `campaign`.

    `format` (auto, tsv, csv, jsonl, openie) and `delimiter` (auto, tab, comma, semicolon)
    say how to read the proposition and traps files; "auto" finds the format from the name
    and the first line, and the delimiter that splits the header into the required columns.
    The topics file gives each topic's description (key, description). The traps file holds
    subtle traps, in the proposition file's columns: plausible but off-topic propositions that
    a careful worker rates low (Falke & Gurevych 2017, §4); `trap_kind="subtle"` imports
    `source` itself as such traps.

    Raises ImportFailed, with nothing written, when any file has a problem, including a row
    that would add a proposition to a topic whose Likert round is built (topics.py), and when
    the campaign takes no new propositions (annotation.campaigns.campaign_import_refusal).
    """
    filename = os.path.basename(filename) or "upload"
    if trap_kind not in (Proposition.TrapKind.NONE, Proposition.TrapKind.SUBTLE):
        raise ImportFailed(f"Unknown trap kind {trap_kind!r}: use none or subtle.", code="import_invalid_trap_kind")
    delimiter = _delimiter_option(delimiter, filename)
    main = _SourceFile.check(source, filename, format, delimiter, topic_key)
    traps = (
        _SourceFile.check(traps_source, os.path.basename(traps_filename) or "traps", "auto", delimiter, topic_key)
        if traps_source is not None
        else None
    )
    summary = ImportSummary(
        filename=filename,
        format=main.format,
        delimiter=DELIMITER_NAMES.get(main.delimiter, ""),
        min_confidence=min_confidence,
    )
    problems = ProblemLog()
    with transaction.atomic():
        # Read under the campaign's row lock, which the import holds to the end anyway (topics.py).
        refusal = campaign_import_refusal(Campaign.objects.select_for_update().get(pk=campaign.pk))
        if refusal:
            raise ImportFailed(f"{filename} was not imported: {refusal}", code="campaign_finished")
        topics_name = os.path.basename(topics_filename) or "topics"
        descriptions = _read_topics(topics_source, topics_name) if topics_source is not None else {}
        topics = TopicRegistry(
            campaign=campaign,
            descriptions=descriptions,
            descriptions_file=topics_name,
            problems=problems,
            created=summary.created_topics,
        )
        for file, counts, kind in (
            (main, summary.topics, trap_kind),
            (traps, summary.traps, Proposition.TrapKind.SUBTLE),
        ):
            if file is not None and not problems:
                _file_import(
                    file,
                    topics=topics,
                    counts=counts,
                    trap_kind=kind,
                    min_confidence=min_confidence,
                    problems=problems,
                    progress=progress and file is main,
                )
        if not problems:
            imported = filename if traps is None else f"{filename} (and {traps.name})"
            summary.warnings += topics.describe_the_rest(imported=imported)
        if problems:
            raise problems.failure(filename)
        summary.warnings += _topic_warnings(campaign, summary, min_confidence)
        ImportRecord.objects.create(
            campaign=campaign, filename=filename, format=main.format, summary=summary.as_dict(), created_by=user
        )
    return summary


@dataclass(frozen=True)
class _SourceFile:
    """A proposition (or traps) file that passed the checks made before reading it."""

    source: BinaryIO
    name: str
    format: str
    delimiter: str  # a character of formats.DELIMITERS for tsv and csv; "" otherwise
    default_topic: str  # Open IE files name no topic

    @classmethod
    def check(cls, source: BinaryIO, name: str, format: str, delimiter: str, topic_key: str | None) -> "_SourceFile":
        head = _check_readable(source, name)
        chosen, character = _choose_format(format, delimiter, name, head)
        return cls(source, name, chosen, character, topic_key or _topic_from_filename(name))


def _file_import(
    file: _SourceFile,
    *,
    topics: TopicRegistry,
    counts: dict[str, TopicCounts],
    trap_kind: str,
    min_confidence: float,
    problems: ProblemLog,
    progress: bool,
) -> None:
    lines = _decoded_lines(file.source, file.name, problems, progress)
    candidates = _candidates(
        _rows(file, lines), filename=file.name, counts=counts, min_confidence=min_confidence, problems=problems
    )
    admission = _Admission(topics=topics, counts=counts, trap_kind=trap_kind, problems=problems, filename=file.name)
    propositions_write(candidates=candidates, admission=admission)
    if not problems:
        admission.ids_fill()
    if not problems and not counts:
        problems.add(f"{file.name}: no propositions found")


def _topic_warnings(campaign: Campaign, summary: ImportSummary, min_confidence: float) -> list[str]:
    """For each topic the files name: that it has no description, or that none was created."""
    named = {**summary.traps, **summary.topics}
    descriptions = dict(Topic.objects.filter(campaign=campaign, key__in=named).values_list("key", "description"))
    warnings = []
    for key in sorted(named):
        if key not in descriptions:  # every row below the threshold: a duplicate means it exists
            warnings.append(
                f"topic {key!r}: all its {named[key].read} row(s) are below the confidence threshold "
                f"({min_confidence}), so no topic was created"
            )
        elif not descriptions[key]:
            warnings.append(
                f"topic {key!r} has no description; workers would see only its key, so publishing is blocked "
                "until you give one (--topics file or the admin)"
            )
    return warnings


def _check_readable(source: BinaryIO, filename: str) -> bytes:
    """Size limit and binary-file check; returns the first bytes and rewinds."""
    try:
        source.seek(0, io.SEEK_END)
        size = source.tell()
        source.seek(0)
    except (AttributeError, OSError):
        size = None
    limit = settings.IMPORT_MAX_BYTES
    if size is not None and size > limit:
        raise ImportFailed(
            f"{filename} is {size:,} bytes, over the import limit of {limit:,} bytes (IMPORT_MAX_BYTES).",
            code="import_too_large",
            details=[f"{filename}: file is {size:,} bytes; the limit is {limit:,} bytes"],
        )
    head = source.read(SNIFF_BYTES)
    source.seek(0)
    if b"\x00" in head:
        detail = f"{filename}:1: this looks like a binary file (it contains NUL bytes); expected UTF-8 text"
        raise ImportFailed(
            f"{filename} was not imported: it is not a text file.", code="import_binary", details=[detail]
        )
    if not head.strip():
        raise ImportFailed(f"{filename} is empty.", code="import_empty", details=[f"{filename}: the file is empty"])
    return head


def _delimiter_option(delimiter: str, filename: str) -> str:
    """'auto', or the character of a delimiter given by name (tab, comma, semicolon) or as itself."""
    if delimiter == "auto" or delimiter in DELIMITER_NAMES:
        return delimiter
    if delimiter in DELIMITERS:
        return DELIMITERS[delimiter]
    expected = f"auto, {', '.join(DELIMITERS)}"
    raise ImportFailed(
        f"Unknown delimiter {delimiter!r}: use {expected}.",
        code="import_unknown_delimiter",
        details=[f"{filename}: unknown delimiter {delimiter!r}; expected one of {expected}"],
    )


def _choose_format(format: str, delimiter: str, filename: str, head: bytes) -> tuple[str, str]:
    """The reader, and for delimited files the delimiter: `delimiter` if given, else the one
    that splits the header into the required columns. A delimited file is 'tsv' when tabs
    separate it and 'csv' otherwise (commas or semicolons)."""
    first_lines = head.decode("utf-8", "replace").split("\n")
    if format != "auto":
        if format not in formats.FORMATS:
            raise ImportFailed(
                f"Unknown format {format!r}: use auto, {', '.join(formats.FORMATS)}.",
                code="import_unknown_format",
                details=[f"{filename}: unknown format {format!r}; expected one of auto, {', '.join(formats.FORMATS)}"],
            )
        chosen = format
    else:
        first_line = next((line for line in first_lines if line.strip()), "")
        try:
            chosen = formats.detect_format(filename, first_line.lstrip("\ufeff"))
        except formats.FormatError as error:
            raise ImportFailed(
                f"{filename}: {error}.", code="import_unknown_format", details=[f"{filename}:1: {error}"]
            ) from None
    if chosen not in ("tsv", "csv"):
        if delimiter != "auto":
            message = f"a delimiter applies to TSV and CSV files; {filename} is read as {chosen}"
            raise ImportFailed(f"{message}.", code="import_unknown_delimiter", details=[f"{filename}: {message}"])
        return chosen, ""
    if delimiter == "auto":
        preferred = "\t" if chosen == "tsv" else ","
        delimiter = formats.sniff_delimiter(first_lines[0].lstrip("\ufeff"), formats.REQUIRED_COLUMNS, preferred)
    return ("tsv" if delimiter == "\t" else "csv"), delimiter


def _topic_from_filename(filename: str) -> str:
    """'student-loans.openie.txt' → 'student-loans'."""
    return filename.split(".", 1)[0] or "topic"


def _decoded_lines(source: BinaryIO, filename: str, problems: ProblemLog, progress: bool) -> Iterator[str]:
    """UTF-8 lines, each ending at LF (BOM stripped). An undecodable line is a problem, and is
    read as an empty line so that the lines after it keep their numbers. Not `for raw in
    source`: Django's File.__iter__ (uploads) ends lines at a lone CR too, where open files
    and BytesIO do not."""
    bar = _progress_bar(source, filename) if progress else None
    try:
        for number, raw in enumerate(iter(source.readline, b""), start=1):
            if bar is not None:
                bar.update(len(raw))
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                problems.add(
                    f"{filename}:{number}: undecodable bytes at position {error.start} "
                    f"({raw[error.start : error.start + 4]!r}); expected UTF-8 text"
                    + ("" if problems else _encoding_guess(raw, error.start, filename))
                )
                if problems.full:
                    return
                text = "\n"
            yield text.lstrip("\ufeff") if number == 1 else text
    finally:
        if bar is not None:
            bar.close()


def _encoding_guess(raw: bytes, start: int, filename: str) -> str:
    """What a file that is not UTF-8 probably is, and how to convert it: Windows-1252 (what
    Excel writes as "CSV" on Windows) when the line reads as such."""
    try:
        text = raw.decode("cp1252")
    except UnicodeDecodeError:
        return ""
    shown = raw[start : start + 1].decode("cp1252")
    return (
        f". The file is probably Windows-1252 (Excel's plain “CSV” on Windows; there this byte is “{shown}”, the "
        f"line reads “{text.strip()[:60]}”): save it from Excel as “CSV UTF-8”, or convert it with "
        f"`iconv -f WINDOWS-1252 -t UTF-8 {filename} > utf8-{filename}`, and import that"
    )


def _progress_bar(source: BinaryIO, filename: str):
    from tqdm import tqdm

    source.seek(0, io.SEEK_END)
    size = source.tell()
    source.seek(0)
    if size < 256 * 1024:
        return None
    return tqdm(total=size, unit="B", unit_scale=True, desc=filename, leave=False)


def _rows(file: _SourceFile, lines: Iterable[str]) -> Iterator[Row | Problem]:
    if file.format in ("tsv", "csv"):
        return formats.read_tabular(lines, file.delimiter)
    if file.format == "jsonl":
        return formats.read_jsonl(lines)
    return formats.read_openie(lines, file.default_topic)


def _read_topics(source: BinaryIO, filename: str) -> dict[str, tuple[int, str]]:
    """{key: (line, description)} from a topics file (tab-, comma- or semicolon-separated)."""
    head = _check_readable(source, filename)
    header = head.decode("utf-8", "replace").split("\n")[0].lstrip("\ufeff")
    preferred = "," if filename.lower().endswith(".csv") else "\t"
    delimiter = formats.sniff_delimiter(header, ("key", "description"), preferred)
    descriptions, problems = {}, ProblemLog()
    for item in formats.read_topics(_decoded_lines(source, filename, problems, False), delimiter):
        if isinstance(item, Problem):
            found = [item]
        else:
            line, key, description = item
            found = text_problems(line, {"key": key, "description": description}) or key_problems(line, key, "key")
            descriptions[key] = (line, description)
        for problem in found:
            problems.add(problem.describe(filename))
        if problems.full:
            break
    if problems:
        raise problems.failure(filename)
    return descriptions


def _candidates(
    rows: Iterable[Row | Problem],
    *,
    filename: str,
    counts: dict[str, TopicCounts],
    min_confidence: float,
    problems: ProblemLog,
) -> Iterator[Candidate]:
    """The rows that are fine and at or above the threshold, each with its normalized text,
    counted as read; once there is a problem, none, and reading goes on only to report more."""
    safe_keys: set[str] = set()
    found_before = problems.details  # read once a row: the list, not the log's methods
    for item in rows:
        if not isinstance(item, Row):
            problems.add(item.describe(filename))
            if problems.full:
                return
            continue
        text = normalize_text(proposition_text(item.subject, item.relation, item.object))
        found = row_problems(item, text, safe_keys)
        if found:
            for problem in found:
                problems.add(problem.describe(filename))
            if problems.full:
                return
            continue
        if found_before:
            continue
        topic_counts = counts.get(item.topic) or counts.setdefault(item.topic, TopicCounts())
        topic_counts.read += 1
        if item.confidence is not None and item.confidence < min_confidence:
            topic_counts.below_threshold += 1
            continue
        yield item, text


class _Admission:
    """Which candidates of one file become propositions (writing.Admission): the first of a
    topic opens it; a text already in its topic is counted as a duplicate, not kept; a new one
    for a closed topic is a problem, reported once per topic."""

    def __init__(
        self,
        *,
        topics: TopicRegistry,
        counts: dict[str, TopicCounts],
        trap_kind: str,
        problems: ProblemLog,
        filename: str,
    ):
        self.topics = topics
        self.counts = counts
        self.trap_kind = trap_kind
        self.problems = problems
        self.filename = filename
        self.refused: set[str] = set()
        self.fills: list[Proposition] = []  # existing propositions given the id they lacked

    def ready(self, row: Row) -> bool:
        return self.topics.knows(row.topic)

    def prepare(self, rows: list[Row]) -> None:
        self.topics.open(row.topic for row in rows)

    def admit(self, row: Row, text: str) -> tuple | None:
        topic = self.topics.topics[row.topic]
        encoded = text.encode()
        if encoded in topic.seen:
            self.counts[row.topic].duplicates += 1
            if row.external_id and encoded in topic.existing and encoded not in topic.met:
                topic.met.add(encoded)  # a later row repeating it in this file is a plain duplicate
                self._id_check(row, topic, encoded)
            return None
        if topic.closed:
            if row.topic not in self.refused:
                self.refused.add(row.topic)
                self.problems.add(
                    f"{self.filename}:{row.line} [topic]: topic {row.topic!r} takes no new propositions "
                    f"({topic.closed}): they would never be rated; import them under a new topic key"
                )
            return None
        topic.seen.add(encoded)
        if row.external_id:
            topic.ids.add(row.external_id[:200])
        self.counts[row.topic].kept += 1
        return (
            topic.pk,
            row.subject,
            row.relation,
            row.object,
            text,
            row.confidence,
            row.source,
            row.external_id[:200],
            self.trap_kind,
        )

    def _id_check(self, row: Row, topic: OpenTopic, encoded: bytes) -> None:
        """A row repeating a proposition the topic had, with an id: fill in the id it lacked, or
        refuse an id that differs from its own or belongs to another proposition of the topic."""
        given = row.external_id[:200]
        pk, current = topic.existing[encoded]
        if current == given:
            return
        where = f"{self.filename}:{row.line} [id]"
        if current:
            self.problems.add(
                f"{where}: this proposition of topic {row.topic!r} was imported with id {current!r}; the file gives "
                f"{given!r}. An id names one proposition for good: correct the file (or the proposition in the admin)"
            )
        elif given in topic.ids:
            self.problems.add(
                f"{where}: id {given!r} already belongs to another proposition of topic {row.topic!r}; "
                "ids must be unique within a topic"
            )
        else:
            topic.existing[encoded] = (pk, given)
            topic.ids.add(given)
            self.fills.append(Proposition(pk=pk, external_id=given))
            self.counts[row.topic].ids_filled += 1

    def ids_fill(self) -> None:
        """Write the ids found for existing propositions (their topics are locked: topics.py)."""
        Proposition.objects.bulk_update(self.fills, ["external_id"], batch_size=1000)
