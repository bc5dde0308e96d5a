"""Hypothesis strategies for what a browser (or anyone) may post to a HIT's submit URL, and
an independent reading of the answer fields: the answer a correct server stores, or None
when it must refuse them.

Answer fields follow crowd/hit_page/answers.py's contract: `rating-<id>` = 1..5 once for every
statement of a Likert task, the field named exactly so (`rating-07` and `rating- 7` are no
rating fields); `order` = every statement id of a comparison task exactly once,
comma-separated. Values may carry white space and leading zeros; numbers stay far below
4,300 digits (test_submission.py has its own test for longer ones).
"""

from dataclasses import dataclass

from hypothesis import strategies as st

from annotation.models import Batch

IDENTITY_FIELDS = ("assignmentId", "hitId", "workerId", "turkSubmitTo", "token", "elapsed_ms")

_junk_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_number = st.integers(0, 10**30).map(str)
_score_text = st.one_of(
    st.integers(1, 5).map(str),
    st.integers(1, 5).map(lambda n: f" 0{n} "),
    st.sampled_from(["0", "6", "-1", "+3", "3.0", "three", "", " ", "٣", "³", "5\x00", "1e0", "4,5"]),
    _number,
    _junk_text,
)


@dataclass(frozen=True)
class Posted:
    fields: tuple[tuple[str, str], ...]  # in posting order; a name may repeat


def _ascii_int(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() else None


def _named_id(name: str, item_ids: list[int]) -> int | None:
    """The statement a field name rates: only `rating-<id>`, as the form writes it."""
    return next((pid for pid in item_ids if name == f"rating-{pid}"), None)


def expected_answer(kind: str, item_ids: list[int], fields: tuple[tuple[str, str], ...]) -> dict | None:
    """Answer.as_json() of a valid answer to a task shown in the order `item_ids`, else None."""
    values: dict[str, list[str]] = {}
    for name, value in fields:
        values.setdefault(name, []).append(value)
    if kind == Batch.Kind.LIKERT:
        scores = {}
        for name, posted in values.items():
            if not name.startswith("rating-"):
                continue
            pid = _named_id(name, item_ids)
            score = _ascii_int(posted[0])
            if pid is None or len(posted) != 1 or score not in range(1, 6):
                return None
            scores[pid] = score
        if set(scores) != set(item_ids):
            return None
        return {"kind": kind, "ratings": {str(pid): scores[pid] for pid in item_ids}}
    orders = values.get("order", [])
    if len(orders) != 1:
        return None
    order = [_ascii_int(part) for part in orders[0].split(",")] if orders[0].strip() else []
    if sorted(order, key=str) != sorted(item_ids, key=str) or len(set(order)) != len(order):
        return None
    return {"kind": kind, "order": order, "untouched": order == list(item_ids)}


def _junk_fields():
    """Fields a correct server ignores: neither answer fields nor the form's own."""
    name = _junk_text.filter(lambda n: not n.startswith("rating-") and n not in ("order", *IDENTITY_FIELDS))
    return st.lists(st.tuples(name, _junk_text), max_size=3)


@st.composite
def likert_fields(draw, item_ids: list[int]) -> Posted:
    fields = []
    for pid in item_ids:
        if draw(st.integers(0, 9)) == 0:
            continue  # unrated
        name = f"rating-{draw(st.sampled_from([str(pid)] * 4 + [f'0{pid}', f' {pid} ']))}"  # aliases: refused
        for _ in range(draw(st.sampled_from([1, 1, 1, 1, 2]))):  # rated twice now and then
            fields.append((name, draw(st.one_of(st.integers(1, 5).map(str), _score_text))))
    not_shown = st.one_of(_number, _junk_text).filter(lambda suffix: _ascii_int(suffix) not in item_ids)
    foreign = draw(st.lists(not_shown, max_size=2))
    fields += [(f"rating-{suffix}", draw(_score_text)) for suffix in foreign]
    fields += draw(_junk_fields())
    return Posted(tuple(draw(st.permutations(fields))))


@st.composite
def comparison_fields(draw, item_ids: list[int]) -> Posted:
    parts = [str(pid) for pid in draw(st.permutations(item_ids))]
    for _ in range(draw(st.integers(0, 2))):
        mutation = draw(st.sampled_from(["drop", "repeat", "foreign", "junk", "pad", "zero"]))
        at = draw(st.integers(0, len(parts) - 1)) if parts else 0
        if mutation == "drop" and parts:
            parts.pop(at)
        elif mutation == "repeat" and parts:
            parts.insert(at, parts[at])
        elif mutation == "foreign":
            parts.insert(at, draw(_number.filter(lambda n: int(n) not in item_ids)))
        elif mutation == "junk":
            parts.insert(at, draw(_junk_text.filter(lambda text: "," not in text)))
        elif mutation == "pad" and parts:
            parts[at] = f" {parts[at]}\t"
        elif mutation == "zero" and parts:
            parts[at] = f"0{parts[at]}"
    separator = draw(st.sampled_from([",", ",", ",", ", ", ";", " "]))
    orders = draw(st.sampled_from([1, 1, 1, 1, 0, 2]))
    fields = [("order", separator.join(parts)) for _ in range(orders)]
    fields += draw(_junk_fields())
    return Posted(tuple(draw(st.permutations(fields))))


def answer_fields(kind: str, item_ids: list[int]):
    return likert_fields(item_ids) if kind == Batch.Kind.LIKERT else comparison_fields(item_ids)


def valid_fields(kind: str, item_ids: list[int]):
    """A plain valid answer, as the page's own form sends it."""
    if kind == Batch.Kind.LIKERT:
        return st.lists(st.integers(1, 5), min_size=len(item_ids), max_size=len(item_ids)).map(
            lambda scores: Posted(
                tuple((f"rating-{pid}", str(score)) for pid, score in zip(item_ids, scores, strict=True))
            )
        )
    return st.permutations(item_ids).map(lambda order: Posted((("order", ",".join(map(str, order))),)))


# Who posts: how the token and the ids relate to the task, and what the server must answer.
IDENTITIES = {
    "valid": (200, None),
    "another_worker": (400, "invalid_token"),  # worker A's token posted by worker B
    "another_assignment": (400, "invalid_token"),
    "another_task": (400, "invalid_token"),
    "garbage_token": (400, "invalid_token"),
    "tampered_token": (400, "invalid_token"),
    "no_token": (400, "invalid_token"),
    "expired_token": (400, "token_expired"),
    "preview": (400, "not_accepted"),
    "unusable_ids": (400, "invalid_ids"),  # a token minted for ids MTurk never sends
    "no_worker": (400, "missing_ids"),
    "unknown_task": (404, "not_found"),
}
elapsed = st.one_of(
    st.none(),
    st.sampled_from(["", "0", "1500", "-5", "abc", "1e3", "٣", " 42 ", "99999999999999999999"]),
    _number,
)
