"""A rehearsal's hidden truth: how important each proposition is, read from a file, so a
simulated crowd rates the researcher's own propositions by it instead of by noise.

The file is TSV or CSV (tab, comma or semicolon, guessed as the importer guesses) with a header
naming `id` and `importance` (or `score`), and optionally `topic`. `id` is the propositions
file's own id column (Proposition.external_id), so the propositions file itself, with an
importance column added, is a truth file (the importer ignores the extra column; see
samples/demo/propositions.tsv). `topic` is needed only when two topics use the same id. An id
the campaign does not have (a row the import dropped: below the confidence threshold, a
duplicate) is skipped and counted; a file none of whose ids the campaign has is refused.

Importances are on any scale: the crowd sees them as z-scores (latent = (x - mean) / sd over the
file), so a diligent worker's Likert score is about round(3 + z + noise), as in
crowd.simulation.hits. Propositions without a row keep a latent drawn from the seed.

A file with any problem gives none of its truth: every problem is listed as
`file:line [field]: what was expected` (the first MAX_PROBLEMS), its values quoted and cut short.
Reads the campaign's propositions; writes nothing.
"""

import csv
import io
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from annotation.importing.formats import DELIMITERS, Problem, sniff_delimiter
from annotation.models import Campaign, Proposition
from config.errors import ApplicationError

MAX_PROBLEMS = 20
MAX_BYTES = 50 * 2**20  # a truth file is a column of numbers per proposition: far below this
IMPORTANCE_COLUMNS = ("importance", "score")


class TruthFileInvalid(ApplicationError):
    """The truth file cannot be used; `details` lists each problem."""

    code = "truth_file_invalid"
    http_status = 400


@dataclass
class Truth:
    latent: dict[int, float] = field(default_factory=dict)  # proposition id -> z-score
    skipped: list[str] = field(default_factory=list)  # "file:line: id 'x'" of ids the campaign does not have


def _shown(value: str) -> str:
    """A value as a problem quotes it: escaped (no terminal control characters) and short."""
    return repr(value[:40] + "…" if len(value) > 40 else value)


def truth_read(*, campaign: Campaign, data: bytes, filename: str) -> Truth:
    """The crowd's latent importance per proposition id of `campaign`, from a truth file's bytes."""
    problems: list[Problem] = []
    unknown: list[Problem] = []
    rows = _rows(data, problems)
    latent = _matched(campaign, rows, problems, unknown) if rows else {}
    if problems or (rows and not latent):  # a bad file, or nothing of it in the campaign (the wrong one?)
        _refuse(filename, sorted(problems + unknown, key=lambda problem: problem.line or 0))
    return Truth(latent=latent, skipped=[problem.describe(filename) for problem in unknown])


def _refuse(filename: str, problems: list[Problem]) -> None:
    shown = [problem.describe(filename) for problem in problems[:MAX_PROBLEMS]]
    more = f" (and {len(problems) - MAX_PROBLEMS} more)" if len(problems) > MAX_PROBLEMS else ""
    raise TruthFileInvalid(
        f"{filename}: {len(problems)} problem{'s' if len(problems) != 1 else ''}{more}, nothing of it used:\n  "
        + "\n  ".join(shown),
        details=shown,
    )


def _rows(data: bytes, problems: list[Problem]) -> list[tuple[int, str, str, float]]:
    """(line, topic, id, importance) of each row; what is wrong goes to `problems`."""
    if len(data) > MAX_BYTES:
        problems.append(Problem(None, f"the file has {len(data):,} bytes; a truth file has at most {MAX_BYTES:,}"))
        return []
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        problems.append(Problem(line, f"not UTF-8 text (byte {data[error.start]:#04x}): save the file as UTF-8"))
        return []
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        problems.append(Problem(line, "a NUL character: this is not a text file"))
        return []
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    header = lines[0] if lines else ""
    named = next((name for name in IMPORTANCE_COLUMNS if name in header.lower()), IMPORTANCE_COLUMNS[0])
    delimiter = sniff_delimiter(header, ("id", named), "\t")
    reader = csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter)
    try:
        names = [name.strip().lower() for name in next(reader, [])]
    except csv.Error as error:
        problems.append(Problem(1, f"the header cannot be read ({error})"))
        return []
    importance = next((name for name in IMPORTANCE_COLUMNS if name in names), None)
    missing = [name for name, present in (("id", "id" in names), ("importance", importance)) if not present]
    if missing:
        found = ", ".join(_shown(name) for name in names[:10] if name) or "nothing"
        separators = " or ".join(DELIMITERS)
        problems.append(
            Problem(
                1,
                f"the header needs the columns id and importance (or score), {separators}-separated; it has {found}",
                field=", ".join(missing),
            )
        )
        return []
    column: dict[str, int] = {name: names.index(name) for name in ("topic", "id") if name in names}
    column["importance"] = names.index(importance or "")
    rows = []
    decimal_comma = delimiter == ";"
    try:
        for number, cells in enumerate(reader, start=2):
            if not any(cell.strip() for cell in cells):
                continue
            row = _row(number, cells, column, decimal_comma, problems)
            if row is not None:
                rows.append(row)
    except csv.Error as error:
        problems.append(Problem(reader.line_num, f"the line cannot be read ({error})"))
    if not rows and not problems:
        problems.append(Problem(None, "no rows: give an importance for each proposition id"))
    return rows


def _row(
    number: int, cells: list[str], column: dict[str, int], decimal_comma: bool, problems: list[Problem]
) -> tuple[int, str, str, float] | None:
    def cell(name: str) -> str:
        index = column.get(name)
        return cells[index].strip() if index is not None and index < len(cells) else ""

    key, raw = cell("id"), cell("importance")
    if not key:
        problems.append(Problem(number, "empty: the proposition's id from the propositions file", field="id"))
        return None
    value = raw.replace(",", ".") if decimal_comma else raw
    try:
        importance = float(value)
    except ValueError:
        importance = math.nan
    if not math.isfinite(importance):
        problems.append(Problem(number, f"{_shown(raw)} is not a number", field="importance"))
        return None
    return number, cell("topic"), key, importance


def _matched(
    campaign: Campaign, rows: list[tuple[int, str, str, float]], problems: list[Problem], unknown: list[Problem]
) -> dict[int, float]:
    """Each row's proposition of the campaign (not a trap), and its importance as a z-score."""
    by_id: dict[str, dict[str, int]] = defaultdict(dict)  # external id -> topic key -> proposition id
    propositions = Proposition.objects.filter(topic__campaign=campaign, trap_kind=Proposition.TrapKind.NONE)
    for pk, key, external_id in propositions.exclude(external_id="").values_list("pk", "topic__key", "external_id"):
        by_id[external_id][key] = pk
    seen: dict[int, int] = {}
    importance: dict[int, float] = {}
    for number, topic, key, value in rows:
        topics = by_id.get(key, {})
        if topic and topics and topic not in topics:
            problems.append(
                Problem(number, f"no proposition with id {_shown(key)} in topic {_shown(topic)}", field="id")
            )
            continue
        if not topics:
            unknown.append(
                Problem(number, f"no proposition of campaign {campaign.slug} has id {_shown(key)}", field="id")
            )
            continue
        if not topic and len(topics) > 1:
            problems.append(Problem(number, f"id {_shown(key)} is in several topics: add a topic column", field="id"))
            continue
        pk = topics[topic] if topic else next(iter(topics.values()))
        if pk in seen:
            problems.append(Problem(number, f"id {_shown(key)} again (first on line {seen[pk]})", field="id"))
            continue
        seen[pk] = number
        importance[pk] = value
    if problems or not importance:
        return {}
    mean = statistics.fmean(importance.values())
    spread = statistics.pstdev(importance.values())
    return {pk: (value - mean) / spread if spread else 0.0 for pk, value in importance.items()}
