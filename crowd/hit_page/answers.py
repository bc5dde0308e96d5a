"""A worker's answer: its form fields, and whether it is a valid answer to its task.

The field names are shared by our HIT form, the copy posted to MTurk's externalSubmit and
the answer XML that assignment sync reads back, so an answer can be recovered from MTurk:

    rating-<proposition id> = 1..5                 Likert: 5 = extremely important
    order = <id>,<id>,...                          comparison: most important first

A rating field is named exactly as the form names it (`rating-7`, not `rating-07` or
`rating- 7`), so no two fields can rate one statement. Values (scores, order parts) may
carry white space and leading zeros; a number is ASCII digits, at most `MAX_NUMBER_DIGITS`
of them after leading zeros (no id, score or order part is longer, and int() refuses more
than 4,300). A refused answer lists at most `MAX_PROBLEMS` problems.

Parsing is pure (no database): it takes the task's kind and proposition ids in display order.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn, cast

from annotation.models import Batch
from config.errors import ApplicationError

LIKERT_SCALE = (
    (5, "Extremely important"),
    (4, "Very important"),
    (3, "Moderately important"),
    (2, "Slightly important"),
    (1, "Not at all important"),
)
LIKERT_SCORES = frozenset(score for score, _ in LIKERT_SCALE)
RATING_PREFIX = "rating-"
ORDER_FIELD = "order"
MAX_NUMBER_DIGITS = 19  # a 64-bit id's
MAX_PROBLEMS = 20


class InvalidAnswer(ApplicationError):
    """The answer does not fit its task; `details` lists each problem by field."""

    code = "invalid_answer"


@dataclass(frozen=True)
class Answer:
    kind: str
    ratings: tuple[tuple[int, int], ...] = ()  # (proposition id, score) in display order
    order: tuple[int, ...] = ()  # proposition ids, most important first
    untouched: bool = False  # a comparison submitted in the order it was shown

    def as_json(self) -> dict:
        """What `Assignment.answer` stores and what a repeated submission is compared with."""
        if self.kind == Batch.Kind.LIKERT:
            return {"kind": self.kind, "ratings": {str(pid): score for pid, score in self.ratings}}
        return {"kind": self.kind, "order": list(self.order), "untouched": self.untouched}

    def fields(self) -> list[tuple[str, str]]:
        """The answer as form fields, for the copy posted to MTurk."""
        if self.kind == Batch.Kind.LIKERT:
            return [(f"{RATING_PREFIX}{pid}", str(score)) for pid, score in self.ratings]
        return [(ORDER_FIELD, ",".join(str(pid) for pid in self.order))]

    def pairs(self) -> list[tuple[int, int]]:
        """(winner, loser) for every pair of an ordering: each item beats all below it."""
        return [(above, below) for index, above in enumerate(self.order) for below in self.order[index + 1 :]]


def answer_parse(*, kind: str, item_ids: Sequence[int], fields: Mapping[str, Sequence[str]]) -> Answer:
    """The answer in `fields` (name → posted values) for a task showing `item_ids`.

    Raises InvalidAnswer listing every problem. Fields that are not answer fields (token,
    assignmentId, ...) are ignored.
    """
    if kind == Batch.Kind.LIKERT:
        return _likert_parse(item_ids, fields)
    return _ordering_parse(item_ids, fields)


def _likert_parse(item_ids: Sequence[int], fields: Mapping[str, Sequence[str]]) -> Answer:
    problems: list[dict] = []
    scores: dict[int, int] = {}
    rated = {f"{RATING_PREFIX}{pid}": pid for pid in item_ids}
    for name, values in fields.items():
        if not name.startswith(RATING_PREFIX):
            continue
        pid = rated.get(name)
        if pid is None:
            problems.append(_problem(name, _unknown_rating(name, rated)))
        elif len(values) != 1:
            problems.append(_problem(name, "This statement was rated more than once."))
        elif (score := form_int(values[0])) not in LIKERT_SCORES:
            problems.append(_problem(name, f"{_clipped(values[0])!r} is not a rating: use 1 to 5."))
        else:
            scores[pid] = score
    unrated = [pid for name, pid in rated.items() if pid not in scores and name not in fields]
    problems += [_problem(f"{RATING_PREFIX}{pid}", "This statement is not rated.") for pid in unrated]
    if problems:
        _refuse(problems, "Please rate every statement once, from 1 to 5.")
    return Answer(kind=Batch.Kind.LIKERT, ratings=tuple((pid, scores[pid]) for pid in item_ids))


def _unknown_rating(name: str, rated: Mapping[str, int]) -> str:
    """Why `name` is no rating field of the task: another statement's, or a shown one's misspelt."""
    pid = form_int(name[len(RATING_PREFIX) :])
    if f"{RATING_PREFIX}{pid}" in rated:
        return f"Not a field of this task: statement {pid} is rated in the field {RATING_PREFIX}{pid}."
    return "This statement is not part of this task."


def _ordering_parse(item_ids: Sequence[int], fields: Mapping[str, Sequence[str]]) -> Answer:
    values = fields.get(ORDER_FIELD, [])
    if len(values) != 1:
        problem = _problem(ORDER_FIELD, "The order is missing." if not values else "The order was sent more than once.")
        raise InvalidAnswer(problem["message"], details=[problem])
    parts = [part.strip() for part in values[0].split(",")] if values[0].strip() else []
    order = [form_int(part) for part in parts]
    shown = set(item_ids)
    problems = []
    seen: set[int | None] = set()
    for part, pid in zip(parts, order, strict=True):
        if pid not in shown:
            problems.append(_problem(ORDER_FIELD, f"{_clipped(part)!r} is not a statement of this task."))
        elif pid in seen:
            problems.append(_problem(ORDER_FIELD, f"Statement {pid} appears more than once."))
        seen.add(pid)
    missing = [pid for pid in item_ids if pid not in seen]
    problems += [_problem(ORDER_FIELD, f"Statement {pid} is missing from the order.") for pid in missing]
    if problems:
        _refuse(problems, "The order must list every statement of the task exactly once.")
    # Every pid is in `shown` (an unreadable one, None, is not, and _refuse raised), so an int.
    ordered = cast(tuple[int, ...], tuple(order))
    return Answer(kind=Batch.Kind.COMPARISON, order=ordered, untouched=ordered == tuple(item_ids))


def form_int(text: str) -> int | None:
    """The number in a form value (white space and leading zeros allowed), or None when it
    is not ASCII digits or has more than MAX_NUMBER_DIGITS significant ones."""
    text = text.strip()
    if not (text.isascii() and text.isdigit()):
        return None
    significant = text.lstrip("0") or "0"
    return int(significant) if len(significant) <= MAX_NUMBER_DIGITS else None


def _clipped(text: str) -> str:
    """A posted value as a problem quotes it: at most 40 characters."""
    return text[:40] + "…" if len(text) > 40 else text


def _problem(field: str, message: str) -> dict:
    return {"field": _clipped(field), "message": message}


def _refuse(problems: list[dict], rule: str) -> NoReturn:
    """Raise InvalidAnswer: the rule and the first problem, with at most MAX_PROBLEMS details."""
    first = problems[0]["message"]
    more = f" ({len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})" if len(problems) > 1 else ""
    raise InvalidAnswer(f"{rule} {first}{more}", details=problems[:MAX_PROBLEMS])
