"""What the database cannot store, found row by row: each a Problem of its line and column.

A topic key holds at most `TOPIC_KEY_MAX_CHARS` (100) characters, each safe in a URL since the
key names the topic's pages (annotation/url_keys.py); a proposition's normalized text at most
`PROPOSITION_MAX_BYTES` (2,000) bytes in UTF-8, within the 2,704-byte row of PostgreSQL's btree
index that keeps it unique per topic; no text may hold a NUL character or an unpaired
surrogate, which no database stores as text.
"""

from annotation.importing.formats import Problem, Row
from annotation.models import Topic
from annotation.url_keys import url_key_problem

TOPIC_KEY_MAX_CHARS: int = Topic._meta.get_field("key").max_length  # type: ignore[assignment]  # a CharField has one
PROPOSITION_MAX_BYTES = 2000

_ROW_TEXT = {
    "topic": "topic",
    "subject": "subject",
    "relation": "relation",
    "object": "object",
    "source": "source",
    "external_id": "id",
}  # Row attribute -> the column a problem names


def row_problems(row: Row, text: str, safe_keys: set[str]) -> list[Problem]:
    """What in `row` the database cannot store; `text` is its normalized proposition text,
    `safe_keys` the topic keys already found fine (most rows repeat one)."""
    joined = "".join((row.topic, row.subject, row.relation, row.object, row.source, row.external_id))
    if "\x00" in joined or not (joined.isascii() or _encodable(joined)):
        problems = text_problems(row.line, {column: getattr(row, attribute) for attribute, column in _ROW_TEXT.items()})
        if problems:
            return problems
    problems = []
    if row.topic not in safe_keys:
        problems = key_problems(row.line, row.topic, "topic")
        if not problems:
            safe_keys.add(row.topic)
    size = len(text.encode("utf-8")) if len(text) * 4 > PROPOSITION_MAX_BYTES else 0  # ≤ 4 bytes a character
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


def text_problems(line: int, values: dict[str, str]) -> list[Problem]:
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


def key_problems(line: int, key: str, column: str) -> list[Problem]:
    if len(key) > TOPIC_KEY_MAX_CHARS:
        return [
            Problem(line, f"the topic key is {len(key):,} characters long; the limit is {TOPIC_KEY_MAX_CHARS}", column)
        ]
    unsafe = url_key_problem(key)
    return [Problem(line, unsafe, column)] if unsafe else []
