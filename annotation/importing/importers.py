"""Importing propositions into a campaign: one file, one transaction, a summary per topic.

The file is streamed line by line and inserted in chunks, so memory stays flat for files of
hundreds of thousands of rows. A line ends at a line feed (LF, or CRLF), whatever the source
is (a file, an upload, bytes in memory), so every interface reads the same bytes the same
way; a lone carriage return does not end a line. Any problem (undecodable bytes,
a missing column, an empty field, a bad confidence) rolls the whole file back; up to
`MAX_PROBLEMS` problems are reported with the file name and physical line number.

Limits, each a problem of its line: a topic key holds at most `TOPIC_KEY_MAX_CHARS` (100)
characters, each safe in a URL since the key names the topic's pages (annotation/url_keys.py:
ASCII letters, digits, "-", "_", and "." between two of them); a proposition's normalized text
(subject – relation – object, lower-cased, white space folded) at most `PROPOSITION_MAX_BYTES`
(2,000) bytes in UTF-8, so that it fits, with room to spare, the 2,704-byte row of
PostgreSQL's btree index that keeps it unique per topic; no field may hold a NUL character or
an unpaired surrogate (a JSON \\ud800 escape without its pair), which no database stores as
text.
"""

import io
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from annotation.importing import formats
from annotation.importing.formats import Problem, Row
from annotation.models import Campaign, ImportRecord, Proposition, Topic
from annotation.text import normalize_text, proposition_text
from annotation.url_keys import url_key_problem
from config.errors import ApplicationError

MAX_PROBLEMS = 20
CHUNK_ROWS = 5000
SNIFF_BYTES = 8192
TOPIC_KEY_MAX_CHARS: int = Topic._meta.get_field("key").max_length  # type: ignore[assignment]  # a CharField has one
PROPOSITION_MAX_BYTES = 2000


class ImportFailed(ApplicationError):
    """The file was not imported; `details` lists the problems as 'file:line [field]: message'."""

    code = "import_invalid"


@dataclass
class TopicCounts:
    read: int = 0
    kept: int = 0
    below_threshold: int = 0
    duplicates: int = 0


@dataclass
class ImportSummary:
    filename: str
    format: str
    topics: dict[str, TopicCounts] = field(default_factory=dict)
    created_topics: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def kept(self) -> int:
        return sum(counts.kept for counts in self.topics.values())

    def as_dict(self) -> dict:
        return {
            "file": self.filename,
            "format": self.format,
            "topics": {key: vars(counts) for key, counts in sorted(self.topics.items())},
            "created_topics": self.created_topics,
            "warnings": self.warnings,
        }

    def lines(self) -> list[str]:
        """A plain-text table for the terminal and the admin."""
        rows = [f"{'topic':<24} {'read':>8} {'kept':>8} {'below':>8} {'dupes':>8}"]
        for key, counts in sorted(self.topics.items()):
            rows.append(
                f"{key:<24} {counts.read:>8} {counts.kept:>8} {counts.below_threshold:>8} {counts.duplicates:>8}"
            )
        return rows + [f"warning: {warning}" for warning in self.warnings]


def propositions_import(
    *,
    campaign: Campaign,
    source: BinaryIO,
    filename: str,
    format: str = "auto",
    min_confidence: float = 0.5,
    topics_source: BinaryIO | None = None,
    topics_filename: str = "topics",
    topic_key: str | None = None,
    user=None,
    progress: bool = False,
    trap_kind: str = Proposition.TrapKind.NONE,
) -> ImportSummary:
    """Import one proposition file (and optionally a topics file) into `campaign`.

    `trap_kind="subtle"` imports the rows as subtle traps: plausible but off-topic
    propositions that a careful worker rates low (Falke & Gurevych 2017, §4).

    Raises ImportFailed, with nothing written, when either file has a problem.
    """
    filename = os.path.basename(filename) or "upload"
    head = _check_readable(source, filename)
    chosen = _choose_format(format, filename, head)
    if trap_kind not in (Proposition.TrapKind.NONE, Proposition.TrapKind.SUBTLE):
        raise ImportFailed(f"Unknown trap kind {trap_kind!r}: use none or subtle.", code="import_invalid_trap_kind")
    default_topic = topic_key or _topic_from_filename(filename)
    summary = ImportSummary(filename=filename, format=chosen)
    try:
        with transaction.atomic():
            descriptions = _read_topics(topics_source, topics_filename) if topics_source else {}
            topics = _TopicRegistry(campaign, descriptions, summary)
            problems = _insert_rows(
                rows=_rows(chosen, _decoded_lines(source, filename, progress), default_topic),
                filename=filename,
                topics=topics,
                min_confidence=min_confidence,
                summary=summary,
                trap_kind=trap_kind,
            )
            if problems:
                raise ImportFailed(_failure_message(filename, problems), details=problems)
            topics.warn_missing_descriptions()
            ImportRecord.objects.create(
                campaign=campaign, filename=filename, format=chosen, summary=summary.as_dict(), created_by=user
            )
    except _DecodeAbort as abort:
        raise ImportFailed(_failure_message(filename, abort.problems), details=abort.problems) from None
    return summary


def _failure_message(filename: str, problems: list[str]) -> str:
    more = "" if len(problems) < MAX_PROBLEMS else f" (showing the first {MAX_PROBLEMS})"
    return f"{filename} was not imported: {len(problems)} problem(s){more}; nothing was written."


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


def _choose_format(format: str, filename: str, head: bytes) -> str:
    if format != "auto":
        if format not in formats.FORMATS:
            raise ImportFailed(
                f"Unknown format {format!r}: use auto, {', '.join(formats.FORMATS)}.",
                code="import_unknown_format",
                details=[f"{filename}: unknown format {format!r}; expected one of auto, {', '.join(formats.FORMATS)}"],
            )
        return format
    first_line = next((line for line in head.decode("utf-8", "replace").split("\n") if line.strip()), "")
    try:
        return formats.detect_format(filename, first_line.lstrip("\ufeff"))
    except formats.FormatError as error:
        raise ImportFailed(
            f"{filename}: {error}.", code="import_unknown_format", details=[f"{filename}:1: {error}"]
        ) from None


def _topic_from_filename(filename: str) -> str:
    """'student-loans.openie.txt' → 'student-loans'."""
    return filename.split(".", 1)[0] or "topic"


class _DecodeAbort(Exception):
    def __init__(self, problems: list[str]):
        self.problems = problems


def _decoded_lines(source: BinaryIO, filename: str, progress: bool) -> Iterator[str]:
    """UTF-8 lines, each ending at LF (BOM stripped); undecodable lines become problems,
    reported by line. Not `for raw in source`: Django's File.__iter__ (uploads) ends lines
    at a lone CR too, where open files and BytesIO do not."""
    bar = _progress_bar(source, filename) if progress else None
    problems = []
    for number, raw in enumerate(iter(source.readline, b""), start=1):
        if bar is not None:
            bar.update(len(raw))
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            problems.append(
                f"{filename}:{number}: undecodable bytes at position {error.start} "
                f"({raw[error.start : error.start + 4]!r}); expected UTF-8 text"
            )
            if len(problems) >= MAX_PROBLEMS:
                break
            continue
        if number == 1:
            text = text.lstrip("\ufeff")
        yield text
    if bar is not None:
        bar.close()
    if problems:
        raise _DecodeAbort(problems)


def _progress_bar(source: BinaryIO, filename: str):
    from tqdm import tqdm

    source.seek(0, io.SEEK_END)
    size = source.tell()
    source.seek(0)
    if size < 256 * 1024:
        return None
    return tqdm(total=size, unit="B", unit_scale=True, desc=filename, leave=False)


def _rows(chosen: str, lines: Iterable[str], default_topic: str) -> Iterator[Row | Problem]:
    if chosen == "tsv":
        return formats.read_tabular(lines, "\t")
    if chosen == "csv":
        return formats.read_tabular(lines, ",")
    if chosen == "jsonl":
        return formats.read_jsonl(lines)
    return formats.read_openie(lines, default_topic)


def _read_topics(source: BinaryIO, filename: str) -> dict[str, str]:
    filename = os.path.basename(filename) or "topics"
    _check_readable(source, filename)
    delimiter = "," if filename.lower().endswith(".csv") else "\t"
    descriptions, problems = {}, []
    try:
        for item in formats.read_topics(_decoded_lines(source, filename, False), delimiter):
            if isinstance(item, Problem):
                found = [item]
            else:
                line, key, description = item
                found = _text_problems(line, {"key": key, "description": description}) or _key_problems(
                    line, key, "key"
                )
                descriptions[key] = description
            problems += [problem.describe(filename) for problem in found]
            if len(problems) >= MAX_PROBLEMS:
                break
    except _DecodeAbort as abort:
        problems.extend(abort.problems)
    if problems:
        raise ImportFailed(_failure_message(filename, problems), details=problems[:MAX_PROBLEMS])
    return descriptions


class _TopicRegistry:
    """Topics of the campaign met during the import, created on first sight."""

    def __init__(self, campaign: Campaign, descriptions: dict[str, str], summary: ImportSummary):
        self.campaign = campaign
        self.summary = summary
        self.by_key: dict[str, Topic] = {}
        self.seen_texts: dict[int, set[str]] = {}
        for key, description in descriptions.items():
            topic = self._get_or_create(key)
            if description and topic.description != description:
                topic.description = description
                topic.save(update_fields=["description"])

    def _get_or_create(self, key: str) -> Topic:
        topic, created = Topic.objects.select_for_update().get_or_create(campaign=self.campaign, key=key)
        if created:
            self.summary.created_topics.append(key)
        self.by_key[key] = topic
        self.seen_texts[topic.pk] = set(Proposition.objects.filter(topic=topic).values_list("normalized", flat=True))
        return topic

    def get(self, key: str) -> Topic:
        return self.by_key.get(key) or self._get_or_create(key)

    def warn_missing_descriptions(self) -> None:
        for key in sorted(self.by_key):
            if not self.by_key[key].description:
                self.summary.warnings.append(
                    f"topic {key!r} has no description; workers would see only its key, so publishing is blocked "
                    "until you give one (--topics file or the admin)"
                )


_COLUMNS = (
    "topic_id",
    "subject",
    "relation",
    "object",
    "normalized",
    "confidence",
    "source",
    "external_id",
    "trap_kind",
    "created_at",
)


def _insert_rows(
    *, rows, filename, topics: _TopicRegistry, min_confidence, summary: ImportSummary, trap_kind: str
) -> list[str]:
    """Insert kept rows in chunks; once a problem is seen, only collect further problems."""
    problems: list[str] = []
    chunk: list[tuple] = []
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    for item in rows:
        if isinstance(item, Row):
            text = normalize_text(proposition_text(item.subject, item.relation, item.object))
            found = _row_problems(item, text)
        else:
            found = [item]
        if found:
            problems += [problem.describe(filename) for problem in found]
            if len(problems) >= MAX_PROBLEMS:
                del problems[MAX_PROBLEMS:]
                break
            continue
        if problems:
            continue
        topic = topics.get(item.topic)
        counts = summary.topics.setdefault(item.topic, TopicCounts())
        counts.read += 1
        if item.confidence is not None and item.confidence < min_confidence:
            counts.below_threshold += 1
            continue
        seen = topics.seen_texts[topic.pk]
        if text in seen:
            counts.duplicates += 1
            continue
        seen.add(text)
        counts.kept += 1
        chunk.append(
            (
                topic.pk,
                item.subject,
                item.relation,
                item.object,
                text,
                item.confidence,
                item.source,
                item.external_id[:200],
                trap_kind,
                now,
            )
        )
        if len(chunk) >= CHUNK_ROWS:
            _flush(chunk)
            chunk = []
    if not problems and chunk:
        _flush(chunk)
    if not problems and not summary.topics:
        problems.append(f"{filename}: no propositions found")
    return problems


_ROW_TEXT = {
    "topic": "topic",
    "subject": "subject",
    "relation": "relation",
    "object": "object",
    "source": "source",
    "external_id": "id",
}  # Row attribute -> the column a problem names


def _row_problems(row: Row, text: str) -> list[Problem]:
    """What in `row` the database cannot store; `text` is its normalized proposition text."""
    problems = _text_problems(row.line, {column: getattr(row, attribute) for attribute, column in _ROW_TEXT.items()})
    if problems:
        return problems
    problems = _key_problems(row.line, row.topic, "topic")
    size = len(text.encode("utf-8"))
    if size > PROPOSITION_MAX_BYTES:
        longest = max(("subject", "relation", "object"), key=lambda column: len(getattr(row, column)))
        problems.append(
            Problem(
                row.line,
                f"the proposition (subject – relation – object, normalized) is {size:,} bytes in UTF-8; "
                f"the limit is {PROPOSITION_MAX_BYTES:,} bytes",
                longest,
            )
        )
    return problems


def _text_problems(line: int, values: dict[str, str]) -> list[Problem]:
    """A problem per value (column -> text) that is not storable text."""
    problems = []
    for column, value in values.items():
        if "\x00" in value:
            problems.append(Problem(line, "contains a NUL character (a zero byte or \\u0000); expected text", column))
        elif not value.isascii() and not _encodable(value):
            problems.append(
                Problem(
                    line,
                    "contains an unpaired surrogate (a \\ud800-\\udfff escape without its pair); expected valid Unicode",
                    column,
                )
            )
    return problems


def _encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _key_problems(line: int, key: str, column: str) -> list[Problem]:
    if len(key) > TOPIC_KEY_MAX_CHARS:
        return [
            Problem(line, f"the topic key is {len(key):,} characters long; the limit is {TOPIC_KEY_MAX_CHARS}", column)
        ]
    unsafe = url_key_problem(key)
    return [Problem(line, unsafe, column)] if unsafe else []


ROWS_PER_STATEMENT = 500


def _flush(chunk: list[tuple]) -> None:
    """Insert rows without model instances (which would triple the time). SQLite is fastest
    with executemany; PostgreSQL with multi-row statements, which save a round trip a row."""
    table = Proposition._meta.db_table
    quote = connection.ops.quote_name
    row_placeholder = "(" + ", ".join(["%s"] * len(_COLUMNS)) + ")"
    prefix = f"INSERT INTO {quote(table)} ({', '.join(quote(c) for c in _COLUMNS)}) VALUES "
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.executemany(prefix + row_placeholder, chunk)
            return
        for start in range(0, len(chunk), ROWS_PER_STATEMENT):
            rows = chunk[start : start + ROWS_PER_STATEMENT]
            cursor.execute(prefix + ", ".join([row_placeholder] * len(rows)), [value for row in rows for value in row])
