"""What a topic's maps page shows beside the list of maps: the two annotators' agreement, the
maps' statistics, every map evaluated against the reference (gold if imported, else the first
annotator's map), and the stability of the crowd's top 50."""

from dataclasses import dataclass, field
from typing import Any

from annotation.models import Topic
from maps.agreement import clustering_agreement, decisions_agreement
from maps.decisions import map_clusters, map_decisions
from maps.evaluation.matching import concept_match, strict_match, unlabeled_match
from maps.files import map_provenance, map_title
from maps.models import ConceptMap
from maps.stability import StabilityPoint
from maps.stability_report import topic_stability
from maps.statistics import collection_statistics, map_statistics
from maps.workbench import map_propositions


@dataclass
class TopicMapsReport:
    pair: tuple[ConceptMap, ConceptMap] | None = None
    agreement: list[dict[str, Any]] = field(default_factory=list)
    clustering: dict[str, dict[str, Any]] = field(default_factory=dict)
    reference: ConceptMap | None = None
    reference_title: str = ""
    evaluation: list[dict[str, Any]] = field(default_factory=list)
    statistics: list[dict[str, Any]] = field(default_factory=list)
    collection: dict[str, Any] = field(default_factory=dict)
    stability: list[StabilityPoint] = field(default_factory=list)


def _annotated_pair(maps: list[ConceptMap]) -> tuple[ConceptMap, ConceptMap] | None:
    annotated = [m for m in maps if m.kind == ConceptMap.Kind.ANNOTATED]
    return (annotated[0], annotated[1]) if len(annotated) >= 2 else None


def _reference(maps: list[ConceptMap]) -> ConceptMap | None:
    for kind in (ConceptMap.Kind.GOLD, ConceptMap.Kind.ANNOTATED):
        found = [m for m in maps if m.kind == kind]
        if found:
            return found[0]
    return None


def maps_evaluate(reference: ConceptMap, maps: list[ConceptMap]) -> list[dict[str, Any]]:
    """Strict, unlabeled and concept P/R/F1 of each map against the reference (the corpus's protocol)."""
    gold = map_propositions(reference)
    rows = []
    for concept_map in maps:
        if concept_map.pk == reference.pk:
            continue
        system = map_propositions(concept_map)
        rows.append(
            {
                "map": concept_map,
                "title": map_title(concept_map),
                "strict": strict_match(system, gold),
                "unlabeled": unlabeled_match(system, gold),
                "concept": concept_match(system, gold),
            }
        )
    return rows


def pair_agreement(a: ConceptMap, b: ConceptMap) -> list[dict[str, Any]]:
    """Per decision set: % agreement, Cohen's κ, Krippendorff's α and positive-class F1
    (maps.agreement), beside the paper's figures (§5.6)."""
    decisions = map_decisions(a, b)
    rows = []
    for name, items, paper in (
        ("Selection of propositions", decisions.selection, "84 % (κ 0.66)"),
        ("Concept merges (all pairs)", decisions.merges, "95 % (κ 0.70)"),
        ("Labels kept", decisions.labels, "85 % (κ 0.69)"),
    ):
        figures = decisions_agreement([x for _, x, _ in items], [y for _, _, y in items])
        rows.append({"name": name, "figures": figures, "paper": paper})
    return rows


def pair_clustering(a: ConceptMap, b: ConceptMap) -> dict[str, dict[str, Any]]:
    """The two annotators' merges as clusterings of concept labels (Geiss 2009's family); {}
    while neither map has a concept."""
    first, second = map_clusters(a), map_clusters(b)
    items = sorted({*first, *second})
    return clustering_agreement(first, second, items=items) if items else {}


def maps_statistics(maps: list[ConceptMap]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Table 3's figures per map and, over the annotators' maps, mean ± sd."""
    figures = [(m, map_statistics(map_propositions(m), map_provenance(m))) for m in maps if m.relations.exists()]
    annotated = [f for m, f in figures if m.kind == ConceptMap.Kind.ANNOTATED]
    return [{"map": m, "title": map_title(m), "figures": f} for m, f in figures], (
        collection_statistics(annotated) if annotated else {}
    )


def topic_maps_report(*, topic: Topic, maps: list[ConceptMap]) -> TopicMapsReport:
    report = TopicMapsReport(pair=_annotated_pair(maps), reference=_reference(maps))
    if report.pair:
        report.agreement = pair_agreement(*report.pair)
        report.clustering = pair_clustering(*report.pair)
    report.statistics, report.collection = maps_statistics(maps)
    report.stability = topic_stability(topic=topic)
    if report.reference:
        report.reference_title = map_title(report.reference)
        report.evaluation = maps_evaluate(report.reference, maps)
    return report
