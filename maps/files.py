"""A stored map as files — `.cmap` (only when it passes the checker), CXL, JSON with
provenance — and imported `.cmap`/CXL files as a topic's gold or system maps."""

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from annotation.models import Topic
from config.errors import ApplicationError
from maps.checker import map_check
from maps.cmap import ConceptMap as MapFile
from maps.cmap import MapFormatError, cmap_dumps, cmap_loads, cxl_dumps, cxl_loads, label_normalise, map_json_dumps
from maps.labels import label_key
from maps.models import Concept, ConceptMap, Relation
from maps.workbench import map_constraints, map_propositions

MAX_IMPORT_BYTES = 2 * 1024 * 1024


class MapNotReady(ApplicationError):
    code = "map_fails_checker"


class MapImportError(ApplicationError):
    code = "map_import_invalid"


def map_cmap_text(concept_map: ConceptMap) -> str:
    """The corpus format, refused for a map the checker flags (not connected, or a pair with two relations)."""
    propositions = map_propositions(concept_map)
    check = map_check(propositions)
    if not propositions or not check.passes:
        problems = []
        if not propositions:
            problems.append("it has no relations")
        if propositions and not check.connected:
            problems.append("it is not connected")
        if check.duplicate_pairs:
            problems.append(f"{len(check.duplicate_pairs)} pairs of concepts have two relations")
        raise MapNotReady("No .cmap for this map: " + ", ".join(problems) + ". CXL and JSON are available.")
    return cmap_dumps(propositions)


def map_cxl_text(concept_map: ConceptMap) -> str:
    return cxl_dumps(map_propositions(concept_map), title=f"{concept_map.topic.key}: {map_title(concept_map)}")


def map_title(concept_map: ConceptMap) -> str:
    if concept_map.kind == ConceptMap.Kind.ANNOTATED and concept_map.annotator is not None:
        return f"{concept_map.annotator.get_username()}'s map"
    return concept_map.name or concept_map.get_kind_display()


def map_provenance(concept_map: ConceptMap) -> list[dict[str, Any]]:
    """Per relation, in the order of map_propositions: where it came from."""
    rows = []
    relations = concept_map.relations.select_related("source", "target", "proposition").order_by("id")
    for relation in relations:
        proposition = relation.proposition
        rows.append(
            {
                "synthetic": relation.synthetic,
                "revised_proposition": proposition.pk if proposition else None,
                "operation": proposition.operation if proposition else None,
                "revised_from": proposition.revised_from_id if proposition else None,
                "crowd_rank": proposition.crowd_rank if proposition else None,
                "importance_position": proposition.position if proposition else None,
                "source_merged_from": relation.source.merged_from,
                "target_merged_from": relation.target.merged_from,
            }
        )
    return rows


def map_json_text(concept_map: ConceptMap) -> str:
    """JSON with provenance; its "propositions" are exactly the map's relations (the page's counters)."""
    return map_json_dumps(map_propositions(concept_map), map_provenance(concept_map))


def map_counters(concept_map: ConceptMap) -> dict[str, Any]:
    constraints = map_constraints(concept_map)
    return {
        "concepts": constraints.concepts,
        "relations": constraints.relations,
        "target": constraints.target,
        "connected": constraints.connected,
        "duplicate_pairs": constraints.duplicate_pairs,
        "synthetic": constraints.synthetic,
        "max_synthetic": constraints.max_synthetic,
        "problems": constraints.problems,
        "met": constraints.met,
    }


def map_file_read(*, name: str, data: bytes) -> MapFile:
    """A .cmap or CXL upload as a map; errors say file:line (MapImportError)."""
    if len(data) > MAX_IMPORT_BYTES:
        raise MapImportError(f"{name}: larger than {MAX_IMPORT_BYTES // 1024} KiB.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise MapImportError(f"{name}:{line}: not UTF-8 text.") from error
    try:
        if name.lower().endswith(".cxl"):
            parsed = cxl_loads(text, name=name)
        elif name.lower().endswith(".cmap"):
            parsed = cmap_loads(text, name=name)
        else:
            raise MapImportError(f"{name}: name it .cmap (the corpus format) or .cxl (CmapTools).")
    except MapFormatError as error:
        raise MapImportError(str(error)) from error
    if not parsed.propositions:
        raise MapImportError(f"{name}:1: no propositions in the file.")
    return parsed


@dataclass(frozen=True)
class MapImport:
    concept_map: ConceptMap
    skipped: list[str]  # propositions the stored map cannot hold, each said


@transaction.atomic
def map_import(*, topic: Topic, name: str, data: bytes, kind: str) -> MapImport:
    """Store an uploaded map as the topic's gold or system map (a map of the same kind and name
    is replaced). A map is stored with one relation per pair of concepts and no loops: a file's
    proposition that breaks this is skipped, and said (`MapImport.skipped`)."""
    if kind not in (ConceptMap.Kind.GOLD, ConceptMap.Kind.SYSTEM):
        raise MapImportError("Import a map as gold or as a system's map.")
    parsed = map_file_read(name=name, data=data)
    Topic.objects.select_for_update().get(pk=topic.pk)
    ConceptMap.objects.filter(topic=topic, kind=kind, name=name).delete()
    concept_map = ConceptMap.objects.create(topic=topic, kind=kind, name=name[:200])
    concepts: dict[str, Concept] = {}
    pairs: set[frozenset[int]] = set()
    skipped = []

    def concept(label: str) -> Concept:
        key = label_key(label)
        if key not in concepts:
            text = label_normalise(label)
            concepts[key] = Concept.objects.create(concept_map=concept_map, label=text, merged_from=[text])
        return concepts[key]

    for number, proposition in enumerate(parsed.propositions, start=1):
        source, target = concept(proposition.source), concept(proposition.target)
        pair = frozenset((source.pk, target.pk))
        if source.pk == target.pk or pair in pairs:
            why = "joins a concept to itself" if source.pk == target.pk else "is a second relation on its pair"
            skipped.append(f"{name}: proposition {number} ({proposition.source} — {proposition.target}) {why}")
            continue
        pairs.add(pair)
        Relation.objects.create(concept_map=concept_map, source=source, target=target, label=proposition.relation)
    concept_map.concepts.filter(outgoing__isnull=True, incoming__isnull=True).delete()
    return MapImport(concept_map=concept_map, skipped=skipped)
