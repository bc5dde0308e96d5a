"""Revision of a topic's top propositions (Falke & Gurevych 2017, §5.5): one expert splits
conjunctions into one proposition per conjunct and fixes span errors, 50 → about 56.

The revision starts from the crowd's top `top` (ties explicit: a tie that the cut splits comes
in whole, and `RevisionStart.tie_note` says so). Every revised proposition keeps the proposition
it came from (`revised_from`) and its operation; `position` is the importance order, the source's
crowd rank first. Span edits keep to the tokens of the source sentence when the import gave one.
"""

import re
from dataclasses import dataclass

from django.db import transaction
from django.db.models import F

from annotation.models import Topic
from config.errors import ApplicationError
from maps.cmap import label_normalise
from maps.models import RevisedProposition
from ranking.export import ranking_rows
from ranking.pipeline import TOP_FOR_CONCEPT_MAPS

FIELDS = ("subject", "relation", "object")
_CONJUNCTION = re.compile(r"\s+(?:and|&)\s+|\s*,\s+(?:and\s+)?", re.IGNORECASE)
_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


class RevisionError(ApplicationError):
    code = "revision_refused"


@dataclass(frozen=True)
class RevisionStart:
    created: int  # propositions copied now (0: the revision existed already)
    top: int
    tie_note: str  # "" unless the cut at `top` fell inside a tie


@dataclass(frozen=True)
class SplitSuggestion:
    field: str
    parts: tuple[str, ...]


def revision_start(*, topic: Topic, top: int = TOP_FOR_CONCEPT_MAPS) -> RevisionStart:
    """Copy the crowd's top `top` (a tie at the cut in whole) as `kept` propositions, unless
    the topic's revision exists already. Safe to run twice at once: the topic row is locked."""
    with transaction.atomic():
        Topic.objects.select_for_update().get(pk=topic.pk)
        if RevisedProposition.objects.filter(topic=topic).exists():
            return RevisionStart(created=0, top=top, tie_note="")
        rows = ranking_rows(topic=topic, top=top)
        tie_note = ""
        if rows:
            last = rows[-1]
            end = last["tie_rank"] + last["tie_size"] - 1
            if end > top:
                rows = ranking_rows(topic=topic, top=end)
                tie_note = (
                    f"Ranks {last['tie_rank']}–{end} are tied, so the cut at {top} falls inside a tie: "
                    f"all {len(rows)} are in the revision."
                )
        RevisedProposition.objects.bulk_create(
            RevisedProposition(
                topic=topic,
                subject=row["subject"],
                relation=row["relation"],
                object=row["object"],
                revised_from_id=row["id"],
                operation=RevisedProposition.Operation.KEPT,
                position=number,
                crowd_rank=row["rank"],
                tie_rank=row["tie_rank"],
            )
            for number, row in enumerate(rows, start=1)
        )
        return RevisionStart(created=len(rows), top=top, tie_note=tie_note)


def split_suggestions(proposition: RevisedProposition) -> list[SplitSuggestion]:
    """Conjunctions in the subject or the object ("X and Y", "X, Y and Z"): one proposition per conjunct."""
    suggestions = []
    for field in ("subject", "object"):
        parts = tuple(part for part in (p.strip() for p in _CONJUNCTION.split(getattr(proposition, field))) if part)
        if len(parts) > 1:
            suggestions.append(SplitSuggestion(field=field, parts=parts))
    return suggestions


def _locked(*, topic: Topic, proposition_id: int) -> RevisedProposition:
    Topic.objects.select_for_update().get(pk=topic.pk)
    try:
        return RevisedProposition.objects.select_related("revised_from").get(topic=topic, pk=proposition_id)
    except RevisedProposition.DoesNotExist:
        raise RevisionError(f"No proposition {proposition_id} in the revision of topic {topic.key!r}.") from None


def _clean(text: str, what: str) -> str:
    value = label_normalise(text)
    if not value:
        raise RevisionError(f"The {what} cannot be empty.")
    if len(value) > 300:
        raise RevisionError(f"The {what} is longer than 300 characters.")
    return value


@transaction.atomic
def proposition_split(*, topic: Topic, proposition_id: int, field: str, parts: list[str]) -> list[RevisedProposition]:
    """Replace a proposition by one per conjunct of its `field` (subject or object), in its place."""
    if field not in ("subject", "object"):
        raise RevisionError("Only a subject or an object is split.")
    original = _locked(topic=topic, proposition_id=proposition_id)
    if original.relations.exists():
        raise RevisionError("That proposition is in a map already: take it out of the map before splitting it.")
    cleaned = [_clean(part, field) for part in parts if part.strip()]
    if len(cleaned) < 2:
        raise RevisionError("A split needs at least two conjuncts.")
    RevisedProposition.objects.filter(topic=topic, position__gt=original.position).update(
        position=F("position") + len(cleaned) - 1
    )
    created = []
    for offset, part in enumerate(cleaned):
        values = {name: getattr(original, name) for name in FIELDS} | {field: part}
        created.append(
            RevisedProposition.objects.create(
                topic=topic,
                revised_from=original.revised_from,
                operation=RevisedProposition.Operation.SPLIT,
                position=original.position + offset,
                crowd_rank=original.crowd_rank,
                tie_rank=original.tie_rank,
                **values,
            )
        )
    original.delete()
    return created


def source_tokens(proposition: RevisedProposition) -> set[str] | None:
    """The lower-cased tokens of the source sentence, or None where the import gave none. The
    import's `source` column holds a sentence or a document's name ("doc01.html"): fewer than
    three words is read as a name, which limits nothing."""
    source = proposition.revised_from.source if proposition.revised_from else ""
    if len(source.split()) < 3:
        return None
    return {token.casefold() for token in _TOKEN.findall(source)}


@transaction.atomic
def proposition_span_edit(
    *, topic: Topic, proposition_id: int, subject: str, relation: str, object: str
) -> RevisedProposition:
    """New spans for a proposition; where the source sentence is known, every token must be one of its tokens."""
    proposition = _locked(topic=topic, proposition_id=proposition_id)
    values = {
        "subject": _clean(subject, "subject"),
        "relation": _clean(relation, "relation"),
        "object": _clean(object, "object"),
    }
    allowed = source_tokens(proposition)
    if allowed is not None:
        foreign = [t for text in values.values() for t in _TOKEN.findall(text) if t.casefold() not in allowed]
        if foreign:
            raise RevisionError(
                "A span edit keeps to the words of the source sentence; not in it: " + ", ".join(dict.fromkeys(foreign))
            )
    for name, value in values.items():
        setattr(proposition, name, value)
    if proposition.operation == RevisedProposition.Operation.KEPT:
        proposition.operation = RevisedProposition.Operation.SPAN_EDIT
    proposition.save(update_fields=[*FIELDS, "operation"])
    return proposition


@transaction.atomic
def proposition_add(*, topic: Topic, subject: str, relation: str, object: str) -> RevisedProposition:
    """An expert's own proposition, last in the importance order."""
    Topic.objects.select_for_update().get(pk=topic.pk)
    last = RevisedProposition.objects.filter(topic=topic).order_by("-position").values_list("position", flat=True)
    return RevisedProposition.objects.create(
        topic=topic,
        subject=_clean(subject, "subject"),
        relation=_clean(relation, "relation"),
        object=_clean(object, "object"),
        operation=RevisedProposition.Operation.ADDED,
        position=(last.first() or 0) + 1,
    )


def revision_summary(*, topic: Topic) -> dict[str, int]:
    """ "50 → n": how many crowd propositions went in and how many came out, per operation."""
    rows = list(RevisedProposition.objects.filter(topic=topic).values_list("operation", "revised_from_id"))
    counts = {op.value: 0 for op in RevisedProposition.Operation}
    for operation, _ in rows:
        counts[operation] += 1
    sources = {source for _, source in rows if source is not None}
    return {"sources": len(sources), "revised": len(rows), **counts}
