"""Spreadsheet-safe CSV: the one rule for every CSV download meant to be opened in Excel,
LibreOffice Calc, Numbers or Google Sheets.

A spreadsheet reads a cell whose text starts with `=`, `+`, `-` or `@` as a formula, and a
leading tab, carriage return or NUL can smuggle one past a quick look (CSV or formula
injection: OWASP's CSV Injection page, ASVS 5.0 requirement 1.2.10, CWE-1236). Worker ids,
proposition texts, topic keys and link labels come from outside, so such a cell gets a
leading `'`, which the spreadsheet takes as "this is text" and does not show.

Only text is touched: numbers are written as numbers (int, float, Decimal; a negative μ or
a Pearson r of -0.3 stays a number), so the writers pass numbers, never pre-formatted strings.
A text that merely looks like a number ("-2") is still text from outside and is neutralised,
so it shows as the text it is.

Machine formats (TSV, JSON Lines, the concept-map file) keep the exact text and do not use
this module: evaluation scripts read them.
"""

import csv
from collections.abc import Iterable, Mapping
from typing import Final, Protocol, TypeVar

FORMULA_TRIGGERS: Final = ("=", "+", "-", "@", "\t", "\r", "\0")
TEXT_MARKER: Final = "'"

Cell = TypeVar("Cell")


class TextSink(Protocol):
    """Where a CSV is written: a text stream, or an HttpResponse (which takes str too)."""

    def write(self, text: str, /) -> object: ...


def spreadsheet_cell(value: Cell) -> Cell | str:
    """The value a spreadsheet shows as written: text starting with a formula trigger gets
    a leading `'`; anything else, numbers included, is returned unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
        return TEXT_MARKER + value
    return value


def spreadsheet_row(values: Iterable[object]) -> list[object]:
    return [spreadsheet_cell(value) for value in values]


def spreadsheet_record(row: Mapping[str, object]) -> dict[str, object]:
    return {key: spreadsheet_cell(value) for key, value in row.items()}


class SpreadsheetWriter:
    """`csv.writer` whose every cell goes through `spreadsheet_cell`."""

    def __init__(self, stream: TextSink) -> None:
        self._writer = csv.writer(stream)

    def writerow(self, values: Iterable[object]) -> None:
        self._writer.writerow(spreadsheet_row(values))

    def writerows(self, rows: Iterable[Iterable[object]]) -> None:
        for values in rows:
            self.writerow(values)
