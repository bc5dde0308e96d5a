"""The decisions two annotators made on one topic (Falke & Gurevych 2017, §5.6, double
annotation): which propositions they selected, which pairs of concept labels they merged, and
which labels they kept. One row per decision, both annotators' answers side by side, so the
agreement figures (maps.agreement) can be recomputed by anyone from the CSV."""

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations

from maps.labels import label_key
from maps.models import ConceptMap, RevisedProposition

DECISION_COLUMNS = ("decision", "item", "annotator_a", "annotator_b", "a", "b")


@dataclass(frozen=True)
class Decisions:
    selection: list[tuple[str, bool, bool]]
    merges: list[tuple[str, bool, bool]]
    labels: list[tuple[str, bool, bool]]


def _clusters(concept_map: ConceptMap) -> tuple[dict[str, int], set[str]]:
    """label key → concept id, and the keys of the labels kept."""
    members: dict[str, int] = {}
    kept: set[str] = set()
    for concept in concept_map.concepts.all():
        for name in concept.merged_from:
            members[label_key(name)] = concept.pk
        kept.add(label_key(concept.label))
    return members, kept


def map_clusters(concept_map: ConceptMap) -> dict[str, int]:
    """Each concept label the map holds (its key) → the concept it belongs to: merges as a clustering."""
    return _clusters(concept_map)[0]


def map_decisions(a: ConceptMap, b: ConceptMap) -> Decisions:
    """Selection over the topic's revised propositions; merges over every pair of labels either
    map holds (a pair neither merged counts as two "no"s, as the paper counts all pairs); labels
    kept over the labels both maps hold (a label one map left out is a selection decision)."""
    propositions = RevisedProposition.objects.filter(topic_id=a.topic_id).order_by("position", "id")
    chosen_a = set(a.relations.exclude(proposition=None).values_list("proposition_id", flat=True))
    chosen_b = set(b.relations.exclude(proposition=None).values_list("proposition_id", flat=True))
    selection = [(f"{p.position}: {p}", p.pk in chosen_a, p.pk in chosen_b) for p in propositions]
    members_a, kept_a = _clusters(a)
    members_b, kept_b = _clusters(b)
    labels = sorted(set(members_a) | set(members_b))
    merges = []
    for x, y in combinations(labels, 2):
        merged_a = x in members_a and members_a.get(x) == members_a.get(y)
        merged_b = x in members_b and members_b.get(x) == members_b.get(y)
        merges.append((f"{x} | {y}", merged_a, merged_b))
    both = [label for label in labels if label in members_a and label in members_b]
    kept = [(label, label in kept_a, label in kept_b) for label in both]
    return Decisions(selection=selection, merges=merges, labels=kept)


def decision_rows(a: ConceptMap, b: ConceptMap) -> Iterator[dict[str, object]]:
    decisions = map_decisions(a, b)
    names = (_who(a), _who(b))
    for kind, rows in (
        ("selection", decisions.selection),
        ("merge", decisions.merges),
        ("label_kept", decisions.labels),
    ):
        for item, first, second in rows:
            yield dict(zip(DECISION_COLUMNS, (kind, item, *names, int(first), int(second)), strict=True))


def _who(concept_map: ConceptMap) -> str:
    return concept_map.annotator.get_username() if concept_map.annotator else concept_map.name
