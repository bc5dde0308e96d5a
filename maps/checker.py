"""Is a concept map well-formed? The corpus's checker, `eval.CheckConceptMaps`, in Python.

Pure (no Django). Falke & Gurevych, EMNLP 2017, §3 and §5.6: a summary concept map is a
connected graph with at most one relation between two concepts. The corpus's jar
(UKPLab/emnlp2017-cmapsum-corpus, `cmaps.ConceptMap`) checks, per map:

- concepts: distinct concept names, a name being the label lower-cased and trimmed
  (`cmaps.Concept`); relations: every proposition line (the jar never merges two lines);
- connected: one undirected component (an empty map counts as connected);
- a double edge: two propositions with the same *ordered* (source, target) pair.
  `a → b` beside `b → a` is **not** a double edge for the jar; the workbench's stricter
  `at_most_one_relation_per_unordered_pair` refuses it (issue 27: at most one relation per
  unordered pair).

Deliberate differences, each on maps the jar reads differently from what their author meant:

- Case variants. The jar keys its nodes by the raw label but compares names lower-cased, and
  its graph walk follows object identity: `ACL → x` and `acl → y` count as one concept yet the
  walk may not cross between them, so a connected map can be reported unconnected, and
  `ACL → x` beside `acl → x` is not a double edge. Here a concept is its lower-cased label
  throughout; `case_variants` lists the labels that differ only in case so a caller can warn
  (cmap_dumps writes what it is given; the workbench keeps one label per concept).
- The jar reports the first double edge it meets in hash order; `duplicate_pairs` lists them all.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import networkx as nx

from maps.cmap import MapProposition, label_normalise

__all__ = ["MapCheck", "at_most_one_relation_per_unordered_pair", "concept_key", "map_check"]


@dataclass(frozen=True)
class MapCheck:
    """What `eval.CheckConceptMaps` prints for one map, plus the case variants it misreads."""

    concepts: int
    relations: int
    connected: bool
    duplicate_pairs: list[tuple[str, str]]
    case_variants: list[tuple[str, ...]] = field(default_factory=list)

    @property
    def passes(self) -> bool:
        """The jar's verdict: exit status 4 unless connected and free of double edges."""
        return self.connected and not self.duplicate_pairs


def concept_key(label: str) -> str:
    """A concept's identity as the jar's `cmaps.Concept` has it: the label lower-cased and
    trimmed (after `label_normalise`, which folds white space)."""
    return label_normalise(label).lower().strip()


def map_check(propositions: Iterable[MapProposition]) -> MapCheck:
    """Concepts, relations, connectivity and double edges (same ordered concept pair), as
    `eval.CheckConceptMaps` computes them; see the module docstring for the differences."""
    items = list(propositions)
    graph: nx.Graph[str] = nx.Graph()
    labels: dict[str, set[str]] = defaultdict(set)
    seen: dict[tuple[str, str], int] = {}
    duplicates: list[tuple[str, str]] = []
    for proposition in items:
        source, target = concept_key(proposition.source), concept_key(proposition.target)
        labels[source].add(label_normalise(proposition.source))
        labels[target].add(label_normalise(proposition.target))
        graph.add_edge(source, target)
        seen[(source, target)] = seen.get((source, target), 0) + 1
        if seen[(source, target)] == 2:
            duplicates.append((source, target))
    connected = graph.number_of_nodes() == 0 or nx.is_connected(graph)
    variants = [tuple(sorted(group)) for _, group in sorted(labels.items()) if len(group) > 1]
    return MapCheck(
        concepts=graph.number_of_nodes(),
        relations=len(items),
        connected=connected,
        duplicate_pairs=duplicates,
        case_variants=variants,
    )


def at_most_one_relation_per_unordered_pair(propositions: Iterable[MapProposition]) -> list[tuple[str, str]]:
    """The unordered concept pairs ({a, b}, as a sorted tuple of concept keys) that carry more
    than one relation, in either direction; empty when the map keeps the workbench's rule
    (issue 27). Stricter than the jar, which only refuses the same ordered pair twice."""
    counts: dict[tuple[str, str], int] = {}
    offending: list[tuple[str, str]] = []
    for proposition in propositions:
        a, b = concept_key(proposition.source), concept_key(proposition.target)
        pair = (a, b) if a <= b else (b, a)
        counts[pair] = counts.get(pair, 0) + 1
        if counts[pair] == 2:
            offending.append(pair)
    return offending
