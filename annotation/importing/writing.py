"""Writing an import's propositions into their table, as fast as the database takes them.

PostgreSQL: COPY, fed while the file is read, so that reading and checking rows (this
process) and inserting them (the server) run side by side. A connection runs nothing else
during a COPY, so a row that needs the database first (its topic, met for the first time, is
looked up and locked, or created) ends one COPY, and the next begins once the topics of that
row and of the rows read ahead after it are open: one pause for all the topics of a file that
mixes them, one per topic for a file sorted by topic. SQLite: executemany in chunks, its
fastest way. Both write in the caller's transaction, so a problem found later rolls every
row back; rows are made as tuples, never as model instances (which would triple the time).
"""

from collections import deque
from collections.abc import Iterator
from typing import Protocol

from django.db import connection
from django.utils import timezone

from annotation.importing.formats import Row
from annotation.models import Proposition

CHUNK_ROWS = 5000  # SQLite: rows per executemany
ROWS_PER_READ = 2000  # PostgreSQL: rows handed to the COPY per read()
LOOKAHEAD_ROWS = 2000  # PostgreSQL: rows read ahead at a pause, whose topics are opened with it

# What `Admission.admit` returns, in this order; `created_at` is added here.
COLUMNS = (
    "topic_id",
    "subject",
    "relation",
    "object",
    "normalized",
    "confidence",
    "source",
    "external_id",
    "trap_kind",
)
Candidate = tuple[Row, str]  # a checked row and its normalized text


class Admission(Protocol):
    """Which candidates become rows; `prepare` (for the rows that are not `ready`) is the one
    step that may query the database."""

    def ready(self, row: Row) -> bool: ...

    def prepare(self, rows: list[Row]) -> None: ...

    def admit(self, row: Row, text: str) -> tuple | None: ...


def propositions_write(*, candidates: Iterator[Candidate], admission: Admission) -> None:
    if connection.vendor == "postgresql":
        _copy(candidates, admission)
    else:
        _insert(candidates, admission)


def _insert(candidates: Iterator[Candidate], admission: Admission) -> None:
    table = connection.ops.quote_name(Proposition._meta.db_table)
    names = ", ".join(connection.ops.quote_name(name) for name in (*COLUMNS, "created_at"))
    sql = f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * (len(COLUMNS) + 1))})"
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    chunk: list[tuple] = []
    with connection.cursor() as cursor:
        for row, text in candidates:
            if not admission.ready(row):
                admission.prepare([row])
            kept = admission.admit(row, text)
            if kept is None:
                continue
            chunk.append((*kept, now))
            if len(chunk) >= CHUNK_ROWS:
                cursor.executemany(sql, chunk)
                chunk = []
        if chunk:
            cursor.executemany(sql, chunk)


# The columns in the order _CopyFeed writes them: the texts together, as one join.
_COPY_COLUMNS = (
    "topic_id",
    "subject",
    "relation",
    "object",
    "normalized",
    "source",
    "external_id",
    "confidence",
    "trap_kind",
    "created_at",
)


def _copy(candidates: Iterator[Candidate], admission: Admission) -> None:
    table = connection.ops.quote_name(Proposition._meta.db_table)
    names = ", ".join(connection.ops.quote_name(name) for name in _COPY_COLUMNS)
    sql = f"COPY {table} ({names}) FROM STDIN"
    feed = _CopyFeed(candidates, admission, created_at=timezone.now().isoformat())
    with connection.cursor() as cursor:
        while not feed.finished:
            unready = [row for row, _text in feed.waiting if not admission.ready(row)]
            if unready:
                admission.prepare(unready)
            cursor.copy_expert(sql, feed)  # psycopg2 (requirements.txt): reads feed.read() until b""
    if feed.error is not None:
        raise feed.error


# COPY's text format: a tab between columns, a newline after each row, \N for NULL, and these
# escaped inside a value (NUL cannot occur: rows holding one are refused before).
_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_NULL = "\\N"


class _CopyFeed:
    """What a COPY reads: each read() the next admitted rows as COPY text; b"" (the end of the
    COPY) at the end of the candidates, or at one that must wait for the database. That one and
    the rows read ahead after it, in their order, are `waiting`: the caller prepares those that
    are not ready, all at once, before it starts the next COPY."""

    def __init__(self, candidates: Iterator[Candidate], admission: Admission, *, created_at: str):
        self.candidates = candidates
        self.admission = admission
        self.tail = f"\t{created_at}\n"
        self.waiting: deque[Candidate] = deque()
        self._read_ahead()
        self.finished = not self.waiting
        self.error: Exception | None = None

    def read(self, size: int = -1) -> bytes:
        try:
            return self._lines().encode("utf-8")
        except Exception as error:  # psycopg2 would turn it into a cancelled COPY: the caller raises it
            self.error, self.finished = error, True
            return b""

    def _lines(self) -> str:
        lines: list[str] = []
        ready, admit, line, waiting = self.admission.ready, self.admission.admit, self._line, self.waiting
        while len(lines) < ROWS_PER_READ:
            candidate = waiting.popleft() if waiting else next(self.candidates, None)
            if candidate is None:
                self.finished = True
                break
            if not ready(candidate[0]):
                waiting.appendleft(candidate)
                self._read_ahead()
                break
            kept = admit(*candidate)
            if kept is not None:
                lines.append(line(kept))
        return "".join(lines)

    def _read_ahead(self) -> None:
        while len(self.waiting) < LOOKAHEAD_ROWS:
            candidate = next(self.candidates, None)
            if candidate is None:
                return
            self.waiting.append(candidate)

    def _line(self, kept: tuple) -> str:
        topic_id, subject, relation, obj, normalized, confidence, source, external_id, trap_kind = kept
        texts = f"{subject}\t{relation}\t{obj}\t{normalized}\t{source}\t{external_id}"
        if "\\" in texts or "\n" in texts or "\r" in texts or texts.count("\t") != 5:
            texts = "\t".join(
                text.translate(_ESCAPES) for text in (subject, relation, obj, normalized, source, external_id)
            )
        number = _NULL if confidence is None else repr(confidence)
        return f"{topic_id}\t{texts}\t{number}\t{trap_kind}{self.tail}"
