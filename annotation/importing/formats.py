"""Readers for proposition files: TSV, CSV, JSON Lines and Open IE 4/5 output.

Each reader takes decoded physical lines and yields `Row`s or `Problem`s, both carrying the
physical line number (the header is line 1). Readers never touch the database.

Open IE (University of Washington / IIT Delhi, versions 4 and 5) writes one of two layouts:

* column (``--format column``): one extraction per line, tab-separated —
  ``confidence, context, arg1, relation, arg2s (joined by "; "), sentence`` where each part
  prints as ``SimpleArgument(text,List([start, end)))``, ``Relation(text,List(...))``,
  ``SpatialArgument(...)``/``TemporalArgument(...)`` and the context as ``Context(...)`` or
  an empty field;
* simple (the default): the sentence on a line, then one line per extraction such as
  ``0.93 (Barack Obama; gave; his speech; T:on Tuesday)``, optionally prefixed by
  ``Context(...):``, then an empty line.

An n-ary extraction becomes subject = arg1, relation = rel, object = the arg2s joined by a
space (the ``L:``/``T:`` markers of spatial and temporal arguments dropped).

Delimited files (TSV and CSV) may be separated by tabs, commas or semicolons (Excel writes
semicolons in locales whose decimal mark is a comma): `sniff_delimiter` finds the one that
splits the header into the required columns.
"""

import csv
import json
import math
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

REQUIRED_COLUMNS = ("topic", "subject", "relation", "object")
OPTIONAL_COLUMNS = ("confidence", "source", "id")
FORMATS = ("tsv", "csv", "jsonl", "openie")
DELIMITERS = {"tab": "\t", "comma": ",", "semicolon": ";"}  # name -> character
DELIMITER_NAMES = {character: name for name, character in DELIMITERS.items()}


class Row(NamedTuple):  # a tuple, not a dataclass: built once per row of files of 10⁵–10⁶ rows
    line: int
    topic: str
    subject: str
    relation: str
    object: str
    confidence: float | None
    source: str
    external_id: str


@dataclass(frozen=True)
class Problem:
    line: int | None
    message: str
    field: str = ""

    def describe(self, filename: str) -> str:
        where = f"{filename}:{self.line}" if self.line else filename
        field = f" [{self.field}]" if self.field else ""
        return f"{where}{field}: {self.message}"


class FormatError(Exception):
    """The file as a whole cannot be read in the asked format."""


def detect_format(filename: str, first_line: str) -> str:
    """The format from the file name's extension, else from the first non-empty line."""
    lowered = filename.lower()
    for extension, name in (
        (".tsv", "tsv"),
        (".tab", "tsv"),
        (".csv", "csv"),
        (".jsonl", "jsonl"),
        (".ndjson", "jsonl"),
        (".json", "jsonl"),
    ):
        if lowered.endswith(extension):
            return name
    stripped = first_line.strip()
    if stripped.startswith("{"):
        return "jsonl"
    if _OPENIE_COLUMN.match(first_line):
        return "openie"
    header = stripped.lower()
    if "\t" in header and "topic" in header:
        return "tsv"
    if ("," in header or ";" in header) and "topic" in header:
        return "csv"
    if lowered.endswith((".txt", ".openie", ".oie")):
        return "openie"
    raise FormatError(
        "cannot tell the format: name the file .tsv, .csv or .jsonl, or pass --format tsv|csv|jsonl|openie"
    )


def sniff_delimiter(header: str, required: tuple[str, ...], preferred: str) -> str:
    """The delimiter (a character of DELIMITERS) that splits the header line into all the
    `required` columns, `preferred` first; when none does, the one that splits it into the most
    columns (`preferred` on a tie), for the message that names what is missing."""
    candidates = [preferred, *(character for character in DELIMITERS.values() if character != preferred)]
    names = {character: _header_names(header, character) for character in candidates}
    for character in candidates:
        if all(column in names[character] for column in required):
            return character
    return max(candidates, key=lambda character: len(names[character]))


def _header_names(header: str, delimiter: str) -> list[str]:
    try:
        cells = next(csv.reader([header], delimiter=delimiter), [])
    except csv.Error:
        return []
    return [name.strip().lower().lstrip("\ufeff") for name in cells]


def parse_confidence(value, line: int, *, decimal_comma: bool = False) -> tuple[float | None, Problem | None]:
    """A confidence is optional; when present it must be a number between 0 and 1. With
    `decimal_comma` (semicolon-separated files, which Excel writes where the decimal mark is a
    comma) 0,75 reads as 0.75."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, None
    if isinstance(value, bool):
        return None, Problem(line, f"expected a number between 0 and 1, got {value!r}", "confidence")
    try:
        number = float(value.replace(",", ".") if decimal_comma and isinstance(value, str) else value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a JSON integer past 1e308
        return None, Problem(line, f"expected a number between 0 and 1, got {_shown(value, quoted=True)}", "confidence")
    if math.isnan(number) or not 0.0 <= number <= 1.0:
        return None, Problem(
            line, f"expected a number between 0 and 1, got {_shown(value, quoted=False)}", "confidence"
        )
    return number, None


def _shown(value, *, quoted: bool) -> str:
    """A value as a problem quotes it: at most 40 characters; a JSON array or object by its kind."""
    if isinstance(value, (list, dict)):
        return _json_kind(value)
    text = str(value)
    text = text[:40] + "…" if len(text) > 40 else text
    return repr(text) if quoted else text


def _json_kind(value: list | dict) -> str:
    return "a JSON array" if isinstance(value, list) else "a JSON object"


def _text(value) -> str:
    return "" if value is None else str(value).strip()


def _row_from_mapping(record: dict, line: int, *, decimal_comma: bool = False) -> Row | list[Problem]:
    problems = []
    for column in (*REQUIRED_COLUMNS, "source", "id"):
        value = record.get(column)
        if isinstance(value, (list, dict)):  # JSON Lines only; str() of a deeply nested one may not even return
            problems.append(Problem(line, f"expected text, got {_json_kind(value)}", column))
        elif column in REQUIRED_COLUMNS and not _text(value):
            problems.append(Problem(line, "required field is empty", column))
    confidence, problem = parse_confidence(record.get("confidence"), line, decimal_comma=decimal_comma)
    if problem:
        problems.append(problem)
    if problems:
        return problems
    return Row(
        line=line,
        topic=_text(record["topic"]),
        subject=_text(record["subject"]),
        relation=_text(record["relation"]),
        object=_text(record["object"]),
        confidence=confidence,
        source=_text(record.get("source")),
        external_id=_text(record.get("id")),
    )


def read_tabular(lines: Iterable[str], delimiter: str) -> Iterator[Row | Problem]:
    reader = csv.reader(lines, delimiter=delimiter)
    columns = _csv_header(
        reader, empty="the file is empty; expected a header row with topic, subject, relation, object"
    )
    if isinstance(columns, Problem):
        yield columns
        return
    missing = [name for name in REQUIRED_COLUMNS if name not in columns]
    if missing:
        yield Problem(
            1,
            f"missing required column(s): {', '.join(missing)}; the header must name "
            f"{', '.join(REQUIRED_COLUMNS)} (optional: {', '.join(OPTIONAL_COLUMNS)}), separated by tabs, "
            f"commas or semicolons; read as {DELIMITER_NAMES.get(delimiter, repr(delimiter))}-separated, "
            f"it has {len(columns)} column(s)",
            "header",
        )
        return
    at = {name: index for index, name in enumerate(columns)}  # a repeated name: the last, as dict(zip()) keeps
    required = [at[name] for name in REQUIRED_COLUMNS]
    optional = [at.get(name) for name in OPTIONAL_COLUMNS]
    decimal_comma = delimiter == ";"
    for row in _csv_rows(reader):
        if isinstance(row, Problem):
            yield row
            continue
        line, values = row
        if len(values) > len(columns):
            yield Problem(line, f"expected {len(columns)} fields as in the header, found {len(values)}")
            continue
        quick = _quick_row(values, line, required, optional, decimal_comma) if len(values) == len(columns) else None
        if quick is not None:
            yield quick
            continue
        result = _row_from_mapping(dict(zip(columns, values)), line, decimal_comma=decimal_comma)
        yield from (result if isinstance(result, list) else [result])


def _quick_row(
    values: list[str], line: int, required: list[int], optional: list[int | None], decimal_comma: bool
) -> Row | None:
    """The Row of a full-width line whose fields are all fine, as `_row_from_mapping` would
    build it but without its dict; None for anything else, which that function then reports."""
    topic_at, subject_at, relation_at, object_at = required
    topic, subject = values[topic_at].strip(), values[subject_at].strip()
    relation, obj = values[relation_at].strip(), values[object_at].strip()
    if not (topic and subject and relation and obj):
        return None
    confidence_at, source_at, id_at = optional
    confidence = None
    if confidence_at is not None and values[confidence_at]:
        try:  # as parse_confidence reads it; anything it would refuse goes to it
            confidence = float(values[confidence_at].replace(",", ".") if decimal_comma else values[confidence_at])
        except ValueError:
            return None
        if not 0.0 <= confidence <= 1.0:  # NaN too
            return None
    source = values[source_at].strip() if source_at is not None else ""
    external_id = values[id_at].strip() if id_at is not None else ""
    return Row(line, topic, subject, relation, obj, confidence, source, external_id)


def _csv_header(reader, *, empty: str) -> list[str] | Problem:
    """The header's column names, trimmed and lower-cased (a byte-order mark dropped), or the
    Problem that there is none."""
    try:
        header = next(reader)
    except StopIteration:
        return Problem(None, empty)
    except csv.Error as error:
        return Problem(1, f"unreadable header: {_csv_reason(error)}")
    return [name.strip().lower().lstrip("\ufeff") for name in header]


def _csv_rows(reader) -> Iterator[tuple[int, list[str]] | Problem]:
    """(line, values) of each non-blank row after the header; an unreadable row is a Problem,
    and reading goes on."""
    while True:
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            yield Problem(reader.line_num, f"unreadable row: {_csv_reason(error)}")
            continue
        joined = "".join(values)
        if joined and not joined.isspace():  # not a blank row
            yield reader.line_num, values


def _csv_reason(error: csv.Error) -> str:
    """csv's message, without its advice to programmers about newline=''."""
    if "new-line character seen in unquoted field" in str(error):
        return "a carriage return (CR) not followed by a line feed, outside quotes; lines end with LF or CRLF"
    return str(error)


def read_jsonl(lines: Iterable[str]) -> Iterator[Row | Problem]:
    for line_number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            yield Problem(line_number, f"invalid JSON: {error.msg} at column {error.colno}")
            continue
        except ValueError:  # int() of a JSON number past sys.get_int_max_str_digits()
            yield Problem(line_number, f"invalid JSON: a number of more than {sys.get_int_max_str_digits()} digits")
            continue
        except RecursionError:
            yield Problem(line_number, "invalid JSON: arrays or objects nested too deeply")
            continue
        if not isinstance(record, dict):
            yield Problem(line_number, f"expected a JSON object with {', '.join(REQUIRED_COLUMNS)}")
            continue
        result = _row_from_mapping({key.lower(): value for key, value in record.items()}, line_number)
        yield from (result if isinstance(result, list) else [result])


_OPENIE_COLUMN = re.compile(r"^\s*(\d+(?:\.\d+)?(?:[eE]-?\d+)?)\t")
_OPENIE_SIMPLE = re.compile(r"^(\d\.\d+) (?:Context\(.*?\):)?\((.*)\)\s*$")
_OPENIE_PART = re.compile(r"^(?:Simple|Spatial|Temporal)?(?:Argument|Relation|Context)\((.*),List\(.*\)\)$", re.S)
_OPENIE_ARG_SPLIT = re.compile(r"(?<=\)\)); (?=(?:Simple|Spatial|Temporal)Argument\()")
_MARKER = re.compile(r"^[LT]:")


def _openie_part_text(part: str) -> str | None:
    match = _OPENIE_PART.match(part.strip())
    return match.group(1).strip() if match else None


def read_openie(lines: Iterable[str], topic: str) -> Iterator[Row | Problem]:
    """Both Open IE layouts; a file may not mix them."""
    sentence = ""
    for line_number, line in enumerate(lines, start=1):
        text = line.rstrip("\r\n")
        if not text.strip():
            sentence = ""
            continue
        if _OPENIE_COLUMN.match(text):
            yield _openie_column_row(text, line_number, topic)
            continue
        simple = _OPENIE_SIMPLE.match(text)
        if simple and sentence:
            yield _openie_simple_row(simple, sentence, line_number, topic)
        elif not sentence:
            sentence = text.strip()
        else:
            yield Problem(
                line_number, "expected an extraction such as '0.93 (arg1; relation; arg2)' after the sentence"
            )


def _openie_column_row(text: str, line: int, topic: str) -> Row | Problem:
    fields = text.split("\t")
    if len(fields) < 6:
        return Problem(
            line,
            f"expected 6 tab-separated fields (confidence, context, arg1, relation, arg2s, sentence), found {len(fields)}",
        )
    confidence, problem = parse_confidence(fields[0], line)
    if problem:
        return problem
    subject = _openie_part_text(fields[2])
    relation = _openie_part_text(fields[3])
    if subject is None:
        return Problem(line, "expected an argument such as 'SimpleArgument(text,List([0, 4)))'", "arg1")
    if relation is None:
        return Problem(line, "expected a relation such as 'Relation(text,List([5, 9)))'", "relation")
    arguments = [_openie_part_text(part) for part in _OPENIE_ARG_SPLIT.split(fields[4])] if fields[4].strip() else []
    if any(argument is None for argument in arguments):
        return Problem(line, "expected arguments such as 'SimpleArgument(text,List([0, 4)))' joined by '; '", "arg2s")
    return _openie_row(line, topic, subject, relation, arguments, confidence, "\t".join(fields[5:]).strip())


def _openie_simple_row(match: re.Match, sentence: str, line: int, topic: str) -> Row | Problem:
    confidence, problem = parse_confidence(match.group(1), line)
    if problem:
        return problem
    parts = [part.strip() for part in match.group(2).split("; ")]
    if len(parts) < 2:
        return Problem(line, "expected at least an argument and a relation: '(arg1; relation; arg2)'")
    return _openie_row(line, topic, parts[0], parts[1], parts[2:], confidence, sentence)


def _openie_row(line, topic, subject, relation, arguments, confidence, sentence) -> Row | Problem:
    obj = " ".join(_MARKER.sub("", argument) for argument in arguments if argument)
    if not subject or not relation:
        return Problem(line, "the extraction has an empty argument or relation")
    return Row(line, topic, subject, relation, obj, confidence, sentence, "")


def read_topics(lines: Iterable[str], delimiter: str) -> Iterator[tuple[int, str, str] | Problem]:
    """A topics file: header with key and description; yields (line, key, description)."""
    reader = csv.reader(lines, delimiter=delimiter)
    header = _csv_header(reader, empty="the topics file is empty; expected a header row with key, description")
    if isinstance(header, Problem):
        yield header
        return
    if "key" not in header or "description" not in header:
        yield Problem(1, "the header must name the columns key and description", "header")
        return
    key_at, description_at = header.index("key"), header.index("description")
    for row in _csv_rows(reader):
        if isinstance(row, Problem):
            yield row
            continue
        line, values = row
        padded = values + [""] * (len(header) - len(values))
        key, description = padded[key_at].strip(), padded[description_at].strip()
        if not key:
            yield Problem(line, "required field is empty", "key")
            continue
        yield line, key, description
