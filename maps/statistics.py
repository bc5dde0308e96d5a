"""Statistics of concept maps, the analogue of Falke & Gurevych, EMNLP 2017, §6.2 (Table 3):
25.0 concepts and 25.2 ± 1.3 relations per map; labels 3.2 ± 0.5 tokens (concepts 22.0 ± 4.1
characters, relations 17.1 ± 2.6); 7.2 central concepts per map.

Pure (no Django). Definitions used here:

- a concept is its label as the corpus checker identifies it (lower-cased, `maps.checker`);
  relations are propositions;
- tokens are white-space tokens of the normalised label (the paper's tokenizer is not named;
  punctuation attached to a word counts with it); characters count the normalised label;
- central concepts: concepts with more than two relations (degree ≥ 3 in the undirected
  multigraph of the map), as we read §6.2's "central concepts"; `central_min_degree` changes it;
- a map's figure for labels is its mean over labels; a collection's is the mean ± sample
  standard deviation (n − 1) of the maps' figures, as the paper reports "per map" figures;
- synthetic: propositions whose provenance says `"synthetic": true` (§5.6 allows 3 per map).
"""

from __future__ import annotations

import statistics as stats
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import networkx as nx

from maps.checker import concept_key
from maps.cmap import MapProposition, label_normalise

__all__ = ["CENTRAL_MIN_DEGREE", "MapStatistics", "collection_statistics", "map_statistics", "mean_sd"]

CENTRAL_MIN_DEGREE = 3


@dataclass(frozen=True)
class MapStatistics:
    """One map's figures (label figures are means over its labels)."""

    concepts: int
    relations: int
    connected: bool
    concept_tokens: float
    concept_characters: float
    relation_tokens: float
    relation_characters: float
    label_tokens: float
    central_concepts: int
    synthetic: int

    def as_dict(self) -> dict[str, Any]:
        """The figures as a plain dict."""
        return asdict(self)


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for fewer than two values)."""
    if not values:
        return 0.0, 0.0
    return float(stats.fmean(values)), float(stats.stdev(values)) if len(values) > 1 else 0.0


def _mean(values: Sequence[float]) -> float:
    return float(stats.fmean(values)) if values else 0.0


def map_statistics(
    propositions: Iterable[MapProposition],
    provenance: Sequence[Mapping[str, Any]] | None = None,
    *,
    central_min_degree: int = CENTRAL_MIN_DEGREE,
) -> MapStatistics:
    """Concepts, relations, connectivity, label lengths, central concepts and synthetic relations
    of one map; `provenance[i]` belongs to the i-th proposition (as `map_json_dumps` keeps it)."""
    items = list(propositions)
    graph: nx.MultiGraph[str] = nx.MultiGraph()
    concept_labels: dict[str, str] = {}
    for proposition in items:
        for label in (proposition.source, proposition.target):
            concept_labels.setdefault(concept_key(label), label_normalise(label))
        graph.add_edge(concept_key(proposition.source), concept_key(proposition.target))
    concepts = list(concept_labels.values())
    relations = [label_normalise(p.relation) for p in items]
    concept_tokens = [len(label.split()) for label in concepts]
    relation_tokens = [len(label.split()) for label in relations]
    central = sum(1 for _, degree in graph.degree() if degree >= central_min_degree)
    synthetic = sum(1 for extra in provenance or () if extra.get("synthetic") is True)
    return MapStatistics(
        concepts=len(concepts),
        relations=len(items),
        connected=graph.number_of_nodes() == 0 or nx.is_connected(graph),
        concept_tokens=_mean(concept_tokens),
        concept_characters=_mean([len(label) for label in concepts]),
        relation_tokens=_mean(relation_tokens),
        relation_characters=_mean([len(label) for label in relations]),
        label_tokens=_mean(concept_tokens + relation_tokens),
        central_concepts=central,
        synthetic=synthetic,
    )


def collection_statistics(maps: Sequence[MapStatistics]) -> dict[str, Any]:
    """Per figure, `{"mean", "sd"}` over the maps (Table 3's "per map" figures); `connected` is
    the number of connected maps, `maps` their number."""
    fields = [
        "concepts",
        "relations",
        "concept_tokens",
        "concept_characters",
        "relation_tokens",
        "relation_characters",
        "label_tokens",
        "central_concepts",
        "synthetic",
    ]
    result: dict[str, Any] = {"maps": len(maps), "connected": sum(1 for m in maps if m.connected)}
    for name in fields:
        mean, sd = mean_sd([float(getattr(m, name)) for m in maps])
        result[name] = {"mean": mean, "sd": sd}
    return result
