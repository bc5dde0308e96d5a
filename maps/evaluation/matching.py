"""Strict, unlabeled and concept match between a system map and a gold map, as the corpus's
jar computes them (Falke & Gurevych, EMNLP 2017, §7; UKPLab/emnlp2017-cmapsum-corpus,
`eval.metrics.PropositionMatchMetric` and `eval.metrics.ConceptMatchMetric` with
`eval.matcher.StemSWMatch`).

Pure (no Django). How the jar does it, step by step:

1. Each map becomes a *set* of strings (duplicates collapse). Strict (labeled) proposition
   match: `source + " " + relation + " " + target`, each lower-cased, concept labels also
   trimmed (the relation is left out when it is blank). Unlabeled: `source + " " + target`.
   Concept match: the concept labels.
2. Two strings match when their keys are equal and not empty. A key: split on white space,
   drop the 13 stop words of `lists/stopwords_en_eval.txt` (a, an, all, any, the, there,
   there's, these, this, that, those, many, most — after lower-casing, so case-insensitive),
   stem each token with Snowball English as OpenNLP 1.7 does (`snowballstemmer` 2.2.0 gives the
   same stems; 3.x changed the algorithm), join with spaces. Punctuation stays in the tokens:
   the jar's `ExactMatch.clean` calls `String.replace` with a regular expression as a literal
   string, which never occurs in a lower-cased label, so it removes nothing.
3. P = system strings that match *any* gold string / system strings; R = gold strings that
   match any system string / gold strings (not a one-to-one alignment: two system strings with
   one key both count); F1 their harmonic mean; 0 where undefined (`eval.Result`).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import snowballstemmer

from maps.checker import concept_key
from maps.cmap import MapProposition, label_normalise
from maps.evaluation.scores import Scores, scores_compute

__all__ = [
    "STOP_WORDS",
    "concept_match",
    "match_key",
    "proposition_string",
    "sets_compare",
    "strict_match",
    "unlabeled_match",
]

STOP_WORDS = frozenset(
    {"a", "an", "all", "any", "the", "there", "there's", "these", "this", "that", "those", "many", "most"}
)

_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def _stem(token: str) -> str:
    return str(_STEMMER.stemWord(token))


def match_key(text: str) -> str:
    """The key `StemSWMatch` compares: white-space tokens, stop words dropped, Snowball-stemmed,
    joined by single spaces. The text is expected lower-cased (the metrics lower-case first)."""
    return " ".join(_stem(token) for token in text.split() if token not in STOP_WORDS)


def proposition_string(proposition: MapProposition, *, labeled: bool = True) -> str:
    """The string `PropositionMatchMetric.getPropositionString` builds: concept names (lower-cased,
    trimmed) around the lower-cased relation; without the relation when unlabeled or blank."""
    source, target = concept_key(proposition.source), concept_key(proposition.target)
    relation = label_normalise(proposition.relation).lower()
    if labeled and relation.strip():
        return f"{source} {relation} {target}"
    return f"{source} {target}"


def sets_compare(system: Iterable[str], gold: Iterable[str]) -> Scores:
    """`Metric.compareSets` with `StemSWMatch`: P, R and F1 between two sets of strings, a string
    matched when its non-empty key equals the key of any string on the other side."""
    system_set, gold_set = set(system), set(gold)
    system_keys = {text: match_key(text) for text in system_set}
    gold_keys = {text: match_key(text) for text in gold_set}
    gold_key_set = {key for key in gold_keys.values() if key}
    system_key_set = {key for key in system_keys.values() if key}
    system_matched = sum(1 for key in system_keys.values() if key and key in gold_key_set)
    gold_matched = sum(1 for key in gold_keys.values() if key and key in system_key_set)
    return scores_compute(system_matched, len(system_set), gold_matched, len(gold_set))


def strict_match(system: Iterable[MapProposition], gold: Iterable[MapProposition]) -> Scores:
    """Strict (labeled) proposition match, the corpus's headline metric (paper §7, `RunEvaluation`)."""
    return sets_compare(
        (proposition_string(p) for p in system),
        (proposition_string(p) for p in gold),
    )


def unlabeled_match(system: Iterable[MapProposition], gold: Iterable[MapProposition]) -> Scores:
    """Unlabeled proposition match: concept pairs only, relation labels ignored
    (`PropositionMatchMetric(match, false)`)."""
    return sets_compare(
        (proposition_string(p, labeled=False) for p in system),
        (proposition_string(p, labeled=False) for p in gold),
    )


def _concepts(propositions: Iterable[MapProposition]) -> set[str]:
    return {concept_key(label) for p in propositions for label in (p.source, p.target)}


def concept_match(system: Iterable[MapProposition], gold: Iterable[MapProposition]) -> Scores:
    """Concept match: the maps' concept labels compared as sets (`ConceptMatchMetric`)."""
    return sets_compare(_concepts(system), _concepts(gold))
