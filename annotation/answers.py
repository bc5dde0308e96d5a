"""A worker's answer: its form fields, and whether it is a valid answer to its task.

The field names are shared by our HIT form, the copy posted to MTurk's externalSubmit and
the answer XML that assignment sync reads back, so an answer can be recovered from MTurk:

    rating-<proposition id> = 1..5                 Likert: 5 = extremely important
    order = <id>,<id>,...                          comparison: most important first

Parsing is pure (no database): it takes the task's kind and proposition ids in display order.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
    shown = set(item_ids)
    for name, values in fields.items():
        if not name.startswith(RATING_PREFIX):
            continue
        pid = _int_or_none(name[len(RATING_PREFIX) :])
        if pid not in shown:
            problems.append(_problem(name, "This statement is not part of this task."))
        elif len(values) != 1:
            problems.append(_problem(name, "This statement was rated more than once."))
        elif _int_or_none(values[0]) not in LIKERT_SCORES:
            problems.append(_problem(name, f"{values[0]!r} is not a rating: use 1 to 5."))
        else:
            scores[pid] = int(values[0])
    unrated = [pid for pid in item_ids if pid not in scores and f"{RATING_PREFIX}{pid}" not in fields]
    problems += [_problem(f"{RATING_PREFIX}{pid}", "This statement is not rated.") for pid in unrated]
    if problems:
        raise InvalidAnswer(_summary(problems, "Please rate every statement once, from 1 to 5."), details=problems)
    return Answer(kind=Batch.Kind.LIKERT, ratings=tuple((pid, scores[pid]) for pid in item_ids))


def _ordering_parse(item_ids: Sequence[int], fields: Mapping[str, Sequence[str]]) -> Answer:
    values = fields.get(ORDER_FIELD, [])
    if len(values) != 1:
        problem = _problem(ORDER_FIELD, "The order is missing." if not values else "The order was sent more than once.")
        raise InvalidAnswer(problem["message"], details=[problem])
    parts = [part.strip() for part in values[0].split(",")] if values[0].strip() else []
    order = [_int_or_none(part) for part in parts]
    shown = set(item_ids)
    problems = []
    seen: set[int] = set()
    for part, pid in zip(parts, order, strict=True):
        if pid not in shown:
            problems.append(_problem(ORDER_FIELD, f"{part!r} is not a statement of this task."))
        elif pid in seen:
            problems.append(_problem(ORDER_FIELD, f"Statement {pid} appears more than once."))
        seen.add(pid)
    missing = [pid for pid in item_ids if pid not in seen]
    problems += [_problem(ORDER_FIELD, f"Statement {pid} is missing from the order.") for pid in missing]
    if problems:
        rule = "The order must list every statement of the task exactly once."
        raise InvalidAnswer(_summary(problems, rule), details=problems)
    ordered = tuple(order)
    return Answer(kind=Batch.Kind.COMPARISON, order=ordered, untouched=ordered == tuple(item_ids))


def _int_or_none(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() else None


def _problem(field: str, message: str) -> dict:
    return {"field": field, "message": message}


def _summary(problems: list[dict], rule: str) -> str:
    first = problems[0]["message"]
    more = f" ({len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})" if len(problems) > 1 else ""
    return f"{rule} {first}{more}"
