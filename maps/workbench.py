"""An annotator's concept map of a topic (Falke & Gurevych 2017, §5.6): include propositions
in importance order, merge concepts and keep one of their labels, add up to three synthetic
relations, and mark the map final once it meets the task's constraints.

Concurrency: every change locks the map row and names the `version` it was made on; a change
made on an older version is refused with a Conflict (one annotator in two tabs gets a conflict,
never a silent overwrite), and the version goes up by one. A map belongs to one annotator: the
services take the acting user and refuse anyone else, so two annotators never write to one map.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Q

from annotation.models import Topic
from config.errors import ApplicationError, Conflict
from maps.checker import at_most_one_relation_per_unordered_pair, map_check
from maps.cmap import MapProposition, label_normalise
from maps.labels import head_noun, label_key, stemmed_tokens
from maps.models import MAX_SYNTHETIC, Concept, ConceptMap, MapAssignment, Relation, RevisedProposition

MAX_LABEL = 200
HEARTBEAT_CAP_SECONDS = 120  # active time counted per heartbeat at most: a tab left open is not work


class MapRefused(ApplicationError):
    code = "map_change_refused"


class NotYourMap(ApplicationError):
    code = "not_your_map"
    http_status = 403


@dataclass(frozen=True)
class Constraints:
    concepts: int
    relations: int
    target: int
    connected: bool
    duplicate_pairs: int
    synthetic: int
    max_synthetic: int

    @property
    def problems(self) -> list[str]:
        found = []
        if self.concepts != self.target:
            found.append(f"{self.concepts} concepts, the target is {self.target}")
        if not self.connected:
            found.append("the map is not connected")
        if self.duplicate_pairs:
            found.append(f"{self.duplicate_pairs} pairs of concepts with more than one relation")
        if self.synthetic > self.max_synthetic:
            found.append(f"{self.synthetic} synthetic relations, at most {self.max_synthetic}")
        return found

    @property
    def met(self) -> bool:
        return not self.problems


def map_propositions(concept_map: ConceptMap) -> list[MapProposition]:
    """The map as the corpus's file formats see it, in relation order."""
    return [
        MapProposition(relation.source.label, relation.label, relation.target.label)
        for relation in concept_map.relations.select_related("source", "target").order_by("id")
    ]


def map_constraints(concept_map: ConceptMap) -> Constraints:
    """The counters and constraints, measured by the checker (maps.checker) on the exported map."""
    propositions = map_propositions(concept_map)
    check = map_check(propositions)
    return Constraints(
        concepts=check.concepts,
        relations=check.relations,
        target=concept_map.target_concepts,
        connected=check.connected and check.concepts > 0,
        duplicate_pairs=len(at_most_one_relation_per_unordered_pair(propositions)),
        synthetic=concept_map.relations.filter(synthetic=True).count(),
        max_synthetic=MAX_SYNTHETIC,
    )


@transaction.atomic
def map_open(*, topic: Topic, annotator: Any) -> ConceptMap:
    """The annotator's map of the topic, created (and the topic assigned to them) on first opening."""
    MapAssignment.objects.get_or_create(topic=topic, annotator=annotator, defaults={"assigned_by": annotator})
    concept_map, _ = ConceptMap.objects.get_or_create(topic=topic, annotator=annotator, kind=ConceptMap.Kind.ANNOTATED)
    return concept_map


@transaction.atomic
def map_assign(*, topic: Topic, annotator: Any, assigned_by: Any) -> MapAssignment:
    assignment, _ = MapAssignment.objects.get_or_create(
        topic=topic, annotator=annotator, defaults={"assigned_by": assigned_by}
    )
    return assignment


def _change(
    *, map_id: int, user: Any, version: int, apply: Callable[[ConceptMap], None], draft_only: bool = True
) -> ConceptMap:
    with transaction.atomic():
        try:
            concept_map = ConceptMap.objects.select_for_update().get(pk=map_id)
        except ConceptMap.DoesNotExist:
            raise MapRefused(f"No map {map_id}.") from None
        if concept_map.kind != ConceptMap.Kind.ANNOTATED or concept_map.annotator_id != user.pk:
            raise NotYourMap("This map is another annotator's: you can read it, not change it.")
        if concept_map.version != version:
            raise Conflict(
                f"The map changed since you loaded it (version {version}, now {concept_map.version}), "
                "perhaps in another tab: reload it to see the changes, then try again."
            )
        if draft_only and concept_map.status == ConceptMap.Status.FINAL:
            raise MapRefused("The map is final: reopen it as a draft to change it.")
        apply(concept_map)
        concept_map.version += 1
        concept_map.save(update_fields=["version", "status", "updated_at"])
        return concept_map


def _concept_for(concept_map: ConceptMap, label: str) -> Concept:
    """The concept that stands for `label` (its label or a label merged into it), or a new one."""
    key = label_key(label)
    for concept in concept_map.concepts.all():
        if key in {label_key(name) for name in [concept.label, *concept.merged_from]}:
            return concept
    text = label_normalise(label)
    return Concept.objects.create(concept_map=concept_map, label=text, merged_from=[text])


def _pair_taken(concept_map: ConceptMap, a: Concept, b: Concept) -> Relation | None:
    pair = Q(source=a, target=b) | Q(source=b, target=a)
    return concept_map.relations.filter(pair).select_related("source", "target").first()


def _refuse_pair(existing: Relation) -> None:
    raise MapRefused(
        f"“{existing.source.label}” and “{existing.target.label}” are already related "
        f"(“{existing.label}”): at most one relation per pair of concepts."
    )


def _drop_orphans(concept_map: ConceptMap) -> None:
    concept_map.concepts.filter(outgoing__isnull=True, incoming__isnull=True).delete()


def proposition_include(*, map_id: int, user: Any, version: int, proposition_id: int) -> ConceptMap:
    """Add a revised proposition: its subject and object as concepts (existing ones where a
    label matches), its relation between them."""

    def apply(concept_map: ConceptMap) -> None:
        proposition = RevisedProposition.objects.filter(topic_id=concept_map.topic_id, pk=proposition_id).first()
        if proposition is None:
            raise MapRefused(f"No proposition {proposition_id} in this topic's revision.")
        if concept_map.relations.filter(proposition=proposition).exists():
            raise MapRefused("That proposition is in the map already.")
        if label_key(proposition.subject) == label_key(proposition.object):
            raise MapRefused("Its subject and object are one concept: a relation needs two.")
        source = _concept_for(concept_map, proposition.subject)
        target = _concept_for(concept_map, proposition.object)
        if source.pk == target.pk:
            raise MapRefused(f"Its subject and object are both in the concept “{source.label}”.")
        existing = _pair_taken(concept_map, source, target)
        if existing:
            _refuse_pair(existing)
        Relation.objects.create(
            concept_map=concept_map,
            source=source,
            target=target,
            label=label_normalise(proposition.relation) or "related to",
            proposition=proposition,
        )

    return _change(map_id=map_id, user=user, version=version, apply=apply)


def relation_remove(*, map_id: int, user: Any, version: int, relation_id: int) -> ConceptMap:
    """Take a relation out; concepts left without relations go with it."""

    def apply(concept_map: ConceptMap) -> None:
        deleted, _ = concept_map.relations.filter(pk=relation_id).delete()
        if not deleted:
            raise MapRefused(f"No relation {relation_id} in this map.")
        _drop_orphans(concept_map)

    return _change(map_id=map_id, user=user, version=version, apply=apply)


def _label_checked(label: str) -> str:
    text = label_normalise(label)
    if not text:
        raise MapRefused("A label cannot be empty.")
    if len(text) > MAX_LABEL:
        raise MapRefused(f"A label has at most {MAX_LABEL} characters.")
    return text


def concepts_merge(*, map_id: int, user: Any, version: int, keep_id: int, merge_id: int, label: str) -> ConceptMap:
    """Merge concept `merge_id` into `keep_id`, keeping `label`, one of their labels. Refused
    when two of their relations would then join the same pair, or one would join a concept to itself."""

    def apply(concept_map: ConceptMap) -> None:
        concepts = {c.pk: c for c in concept_map.concepts.filter(pk__in=[keep_id, merge_id])}
        if keep_id == merge_id or len(concepts) != 2:
            raise MapRefused("Choose two different concepts of this map to merge.")
        keep, merge = concepts[keep_id], concepts[merge_id]
        labels = list(dict.fromkeys([*keep.merged_from, *merge.merged_from]))
        chosen = label_normalise(label)
        if chosen not in labels:
            raise MapRefused("Keep one of the merged concepts' labels: " + " | ".join(labels))
        if _pair_taken(concept_map, keep, merge):
            raise MapRefused(
                f"“{keep.label}” and “{merge.label}” are related to each other: merged, "
                "that relation would join a concept to itself. Remove it first."
            )
        neighbours = {r.target_id if r.source_id == keep.pk else r.source_id for r in _touching(concept_map, keep)}
        for relation in _touching(concept_map, merge):
            other = relation.target_id if relation.source_id == merge.pk else relation.source_id
            if other in neighbours:
                raise MapRefused(
                    f"Both are related to “{Concept.objects.get(pk=other).label}”: merged, that pair would have "
                    "two relations. Remove one first."
                )
        concept_map.relations.filter(source=merge).update(source=keep)
        concept_map.relations.filter(target=merge).update(target=keep)
        merge.delete()
        keep.label = chosen
        keep.merged_from = labels
        keep.save(update_fields=["label", "merged_from"])

    return _change(map_id=map_id, user=user, version=version, apply=apply)


def _touching(concept_map: ConceptMap, concept: Concept) -> list[Relation]:
    return list(concept_map.relations.filter(Q(source=concept) | Q(target=concept)))


def concept_relabel(*, map_id: int, user: Any, version: int, concept_id: int, label: str) -> ConceptMap:
    """Keep another of the concept's available labels (its own or one merged into it)."""

    def apply(concept_map: ConceptMap) -> None:
        concept = concept_map.concepts.filter(pk=concept_id).first()
        if concept is None:
            raise MapRefused(f"No concept {concept_id} in this map.")
        chosen = label_normalise(label)
        if chosen not in concept.merged_from:
            raise MapRefused("Keep one of the concept's labels: " + " | ".join(concept.merged_from))
        concept.label = chosen
        concept.save(update_fields=["label"])

    return _change(map_id=map_id, user=user, version=version, apply=apply)


def synthetic_add(*, map_id: int, user: Any, version: int, source_id: int, target_id: int, label: str) -> ConceptMap:
    """A relation with a free label between two concepts of the map, flagged synthetic (at most three)."""

    def apply(concept_map: ConceptMap) -> None:
        text = _label_checked(label)
        concepts = {c.pk: c for c in concept_map.concepts.filter(pk__in=[source_id, target_id])}
        if source_id == target_id or len(concepts) != 2:
            raise MapRefused("A synthetic relation joins two different concepts of this map.")
        if concept_map.relations.filter(synthetic=True).count() >= MAX_SYNTHETIC:
            raise MapRefused(f"At most {MAX_SYNTHETIC} synthetic relations per map.")
        existing = _pair_taken(concept_map, concepts[source_id], concepts[target_id])
        if existing:
            _refuse_pair(existing)
        Relation.objects.create(
            concept_map=concept_map, source=concepts[source_id], target=concepts[target_id], label=text, synthetic=True
        )

    return _change(map_id=map_id, user=user, version=version, apply=apply)


def map_finalise(*, map_id: int, user: Any, version: int) -> ConceptMap:
    """Mark the map final: only when the checker finds it meets every constraint."""

    def apply(concept_map: ConceptMap) -> None:
        constraints = map_constraints(concept_map)
        if not constraints.met:
            raise MapRefused("Not final yet: " + "; ".join(constraints.problems) + ".")
        concept_map.status = ConceptMap.Status.FINAL

    return _change(map_id=map_id, user=user, version=version, apply=apply)


def map_reopen(*, map_id: int, user: Any, version: int) -> ConceptMap:
    def apply(concept_map: ConceptMap) -> None:
        concept_map.status = ConceptMap.Status.DRAFT

    return _change(map_id=map_id, user=user, version=version, apply=apply, draft_only=False)


@transaction.atomic
def active_time_record(*, map_id: int, user: Any, seconds: int) -> int:
    """Add the page's active seconds since its last heartbeat (capped); no version: it changes no content."""
    concept_map = ConceptMap.objects.select_for_update().filter(pk=map_id, annotator=user).first()
    if concept_map is None:
        raise NotYourMap("This map is another annotator's.")
    concept_map.active_seconds += max(0, min(int(seconds), HEARTBEAT_CAP_SECONDS))
    concept_map.save(update_fields=["active_seconds"])
    return concept_map.active_seconds


def merge_suggestions(concept_map: ConceptMap) -> list[tuple[Concept, Concept, str]]:
    """Pairs of concepts worth merging: the same stemmed tokens, or the same head noun with a shared token."""
    concepts = list(concept_map.concepts.all())
    found = []
    for index, a in enumerate(concepts):
        for b in concepts[index + 1 :]:
            ta, tb = stemmed_tokens(a.label), stemmed_tokens(b.label)
            if ta and set(ta) == set(tb):
                found.append((a, b, "same stemmed words"))
            elif head_noun(a.label) and head_noun(a.label) == head_noun(b.label):
                found.append((a, b, f"same head noun ({head_noun(a.label)})"))
    return found


def next_connecting(concept_map: ConceptMap) -> RevisedProposition | None:
    """The most important revised proposition not in the map that shares a concept with it
    and could be added (no second relation on a pair, no loop); the first one in an empty map."""
    included = set(concept_map.relations.exclude(proposition=None).values_list("proposition_id", flat=True))
    keys: dict[str, int] = {}
    for concept in concept_map.concepts.all():
        for name in [concept.label, *concept.merged_from]:
            keys[label_key(name)] = concept.pk
    pairs = {frozenset(p) for p in concept_map.relations.values_list("source_id", "target_id")}
    for proposition in RevisedProposition.objects.filter(topic_id=concept_map.topic_id).order_by("position", "id"):
        if proposition.pk in included:
            continue
        a, b = keys.get(label_key(proposition.subject)), keys.get(label_key(proposition.object))
        if not keys and label_key(proposition.subject) != label_key(proposition.object):
            return proposition
        if (a is None and b is None) or a == b or (a is not None and b is not None and frozenset((a, b)) in pairs):
            continue
        return proposition
    return None
