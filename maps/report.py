"""What a topic's maps page shows beside the list of maps: the two annotators' agreement, the
maps' statistics, every map evaluated against the reference (gold if imported, else the first
annotator's map), and the stability of the crowd's top 50."""

from dataclasses import dataclass, field
from typing import Any

from annotation.models import Topic
from maps.decisions import map_decisions
from maps.evaluation.matching import concept_match, strict_match, unlabeled_match
from maps.models import ConceptMap
from maps.workbench import map_propositions


@dataclass
class TopicMapsReport:
    pair: tuple[ConceptMap, ConceptMap] | None = None
    agreement: list[dict[str, Any]] = field(default_factory=list)
    reference: ConceptMap | None = None
    evaluation: list[dict[str, Any]] = field(default_factory=list)
    statistics: dict[str, Any] = field(default_factory=dict)


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
                "strict": strict_match(system, gold),
                "unlabeled": unlabeled_match(system, gold),
                "concept": concept_match(system, gold),
            }
        )
    return rows


def pair_agreement(a: ConceptMap, b: ConceptMap) -> list[dict[str, Any]]:
    """Per decision set: how many decisions and the share both made alike (maps.agreement adds κ, α, F1)."""
    decisions = map_decisions(a, b)
    rows = []
    for name, items, paper in (
        ("Selection of propositions", decisions.selection, "84 % (κ 0.66)"),
        ("Concept merges (all pairs)", decisions.merges, "95 % (κ 0.70)"),
        ("Labels kept", decisions.labels, "85 % (κ 0.69)"),
    ):
        same = sum(1 for _, x, y in items if x == y)
        rows.append({"name": name, "n": len(items), "agreement": same / len(items) if items else None, "paper": paper})
    return rows


def topic_maps_report(*, topic: Topic, maps: list[ConceptMap]) -> TopicMapsReport:
    report = TopicMapsReport(pair=_annotated_pair(maps), reference=_reference(maps))
    if report.pair:
        report.agreement = pair_agreement(*report.pair)
    if report.reference:
        report.evaluation = maps_evaluate(report.reference, maps)
    return report
