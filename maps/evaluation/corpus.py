"""Evaluate system concept maps against gold maps, topic by topic, as the corpus's tools do
(Falke & Gurevych, EMNLP 2017, §7; UKPLab/emnlp2017-cmapsum-corpus, `eval.RunEvaluation`,
`eval/run_eval.sh`).

Pure (no Django). Layout: `GOLD_DIR/TOPIC/*.cmap` (one reference map per topic) and
`SYSTEM_DIR/TOPIC/*.cmap` (every system map of that topic, named alike across topics).

Deliberate differences from the jar, each where the jar's result depends on chance:

- Pairing by name, not by index. The jar takes the first `.cmap` its directory listing gives
  in a gold topic folder, and its corpus average pairs the i-th system map of each topic, in
  directory-listing order, under the first topic's file name; two topics listed in different
  orders average different systems together. Here a gold topic folder must hold one `.cmap`
  (or one named after the topic), and the macro average of `system_a.cmap` is over the topics
  that have a `system_a.cmap`.
- A line that is not three tab-separated fields stops the run with `file:line`; the jar skips
  short lines and ignores extra fields, so a broken map is scored as a smaller one.
- Labels are read through `label_normalise` (NFC, white space folded) and a BOM is dropped;
  the jar keeps a BOM in the first label and treats `a  b` and `a b` as two concepts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from maps.checker import MapCheck, map_check
from maps.cmap import ConceptMap, MapFormatError, cmap_loads, label_normalise
from maps.evaluation.matching import concept_match, strict_match, unlabeled_match
from maps.evaluation.meteor import meteor_batch, meteor_unavailable_reason
from maps.evaluation.rouge import RougeScores, map_text, rouge2_batch
from maps.evaluation.scores import Scores, scores_macro_average

__all__ = [
    "CorpusEvaluation",
    "EvaluationInputError",
    "SystemResult",
    "TopicPair",
    "corpus_evaluate",
    "corpus_pairs",
    "map_file_read",
    "maps_find",
]


class EvaluationInputError(ValueError):
    """Input the evaluation cannot use: a missing folder, an unreadable file, a bad line."""


@dataclass(frozen=True)
class TopicPair:
    """One topic: its gold map and its system maps (sorted by file name)."""

    topic: str
    gold: Path
    systems: list[Path]


@dataclass
class SystemResult:
    """One system map of one topic: the checker's figures and every metric."""

    check: MapCheck
    strict: Scores
    unlabeled: Scores
    concept: Scores
    rouge2: RougeScores
    rouge2_canonical: RougeScores
    meteor: Scores | None


@dataclass
class CorpusEvaluation:
    """Per topic and system file, plus the gold maps' checks and notes for the reader."""

    topics: dict[str, dict[str, SystemResult]]
    gold_checks: dict[str, MapCheck]
    notes: list[str] = field(default_factory=list)

    def failed_checks(self) -> list[str]:
        """Maps that fail the corpus checker (not connected or a double edge): exit status 4."""
        failed = [f"gold {topic}" for topic, check in self.gold_checks.items() if not check.passes]
        for topic, systems in self.topics.items():
            failed.extend(f"{topic}/{name}" for name, result in systems.items() if not result.check.passes)
        return failed

    def as_dict(self) -> dict[str, Any]:
        """`{"topics": {TOPIC: {SYSTEM_FILE: metrics}}, "macro": {SYSTEM_FILE: metrics}}`."""
        topics = {
            topic: {name: _result_dict(result) for name, result in systems.items()}
            for topic, systems in self.topics.items()
        }
        return {"topics": topics, "macro": self.macro()}

    def macro(self) -> dict[str, dict[str, Any]]:
        """Macro averages per system file over the topics that have it, P, R and F1 (and ROUGE's
        R, P and F) averaged separately as `eval.Evaluation.getAvgResults` does."""
        names = sorted({name for systems in self.topics.values() for name in systems})
        macro: dict[str, dict[str, Any]] = {}
        for name in names:
            results = [systems[name] for systems in self.topics.values() if name in systems]
            meteors = [r.meteor for r in results]
            macro[name] = {
                "topics": len(results),
                "check": {
                    "concepts": sum(r.check.concepts for r in results) / len(results),
                    "relations": sum(r.check.relations for r in results) / len(results),
                    "connected": all(r.check.connected for r in results),
                },
                "strict": scores_macro_average(r.strict for r in results).as_dict(),
                "unlabeled": scores_macro_average(r.unlabeled for r in results).as_dict(),
                "concept": scores_macro_average(r.concept for r in results).as_dict(),
                "rouge2": _rouge_macro([r.rouge2 for r in results]),
                "rouge2_canonical": _rouge_macro([r.rouge2_canonical for r in results]),
                "meteor": None
                if any(m is None for m in meteors)
                else scores_macro_average(m for m in meteors if m is not None).as_dict(),
            }
        return macro


def _check_dict(check: MapCheck) -> dict[str, Any]:
    return {
        "concepts": check.concepts,
        "relations": check.relations,
        "connected": check.connected,
        "duplicate_pairs": [list(pair) for pair in check.duplicate_pairs],
    }


def _result_dict(result: SystemResult) -> dict[str, Any]:
    return {
        "check": _check_dict(result.check),
        "strict": result.strict.as_dict(),
        "unlabeled": result.unlabeled.as_dict(),
        "concept": result.concept.as_dict(),
        "rouge2": result.rouge2.as_dict(),
        "rouge2_canonical": result.rouge2_canonical.as_dict(),
        "meteor": result.meteor.as_dict() if result.meteor is not None else None,
    }


def _rouge_macro(items: list[RougeScores]) -> dict[str, float | str]:
    n = len(items)
    engines = sorted({item.engine for item in items})
    return {
        "r": sum(i.r for i in items) / n,
        "p": sum(i.p for i in items) / n,
        "f": sum(i.f for i in items) / n,
        "engine": ", ".join(engines),
    }


def map_file_read(path: Path) -> ConceptMap:
    """A `.cmap` file as a ConceptMap named by its file name; EvaluationInputError naming the
    file (and line, for bad UTF-8 or a bad line) when it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise EvaluationInputError(f"{path}: cannot read: {error.strerror or error}") from error
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise EvaluationInputError(f"{path}:{line}: not UTF-8 ({error.reason})") from error
    try:
        concept_map = cmap_loads(text, name=str(path))
    except MapFormatError as error:
        raise EvaluationInputError(str(error)) from error
    concept_map.name = path.name
    return concept_map


def maps_find(folder: Path) -> list[Path]:
    """Every `*.cmap` file under a folder, recursively and sorted (`CheckConceptMaps` walks the
    folder recursively too)."""
    if not folder.is_dir():
        raise EvaluationInputError(f"{folder}: not a directory")
    return sorted(path for path in folder.rglob("*.cmap") if path.is_file())


def corpus_pairs(gold_dir: Path, system_dir: Path) -> tuple[list[TopicPair], list[str]]:
    """Topics paired by folder name: each gold topic folder's one `.cmap` with every `.cmap` in
    the system folder of the same name. Returns the pairs and notes (system topics without a
    gold topic are listed and skipped)."""
    for folder in (gold_dir, system_dir):
        if not folder.is_dir():
            raise EvaluationInputError(f"{folder}: not a directory")
    pairs = []
    for topic_dir in sorted(p for p in gold_dir.iterdir() if p.is_dir()):
        topic = topic_dir.name
        golds = sorted(p for p in topic_dir.glob("*.cmap") if p.is_file())
        if len(golds) > 1:
            named = [p for p in golds if p.stem == topic]
            if len(named) != 1:
                raise EvaluationInputError(
                    f"{topic_dir}: {len(golds)} gold maps ({', '.join(p.name for p in golds)}); keep one, or name it {topic}.cmap"
                )
            golds = named
        if not golds:
            raise EvaluationInputError(f"{topic_dir}: no reference concept map found (*.cmap)")
        system_topic = system_dir / topic
        if not system_topic.is_dir():
            raise EvaluationInputError(f"{system_topic}: no system folder for topic {topic}")
        systems = sorted(p for p in system_topic.glob("*.cmap") if p.is_file())
        if not systems:
            raise EvaluationInputError(f"{system_topic}: no system concept maps found (*.cmap)")
        pairs.append(TopicPair(topic, golds[0], systems))
    if not pairs:
        raise EvaluationInputError(f"{gold_dir}: no topic folders")
    gold_topics = {pair.topic for pair in pairs}
    notes = [
        f"{path}: no gold topic of that name, skipped"
        for path in sorted(p for p in system_dir.iterdir() if p.is_dir() and p.name not in gold_topics)
    ]
    return pairs, notes


def _proposition_strings(concept_map: ConceptMap) -> list[str]:
    return [
        f"{label_normalise(p.source)} {label_normalise(p.relation)} {label_normalise(p.target)}"
        for p in concept_map.propositions
    ]


def corpus_evaluate(
    gold_dir: Path,
    system_dir: Path,
    *,
    rouge_engine: Literal["auto", "fallback"] = "auto",
    meteor: bool = True,
    progress: Callable[[str], None] | None = None,
) -> CorpusEvaluation:
    """Check and score every system map against its topic's gold map: strict, unlabeled and
    concept match (the jar's metrics), ROUGE-2 in file and canonical order (one ROUGE-1.5.5 run
    for everything) and METEOR 1.5 where it can run (one JVM for everything)."""
    pairs, notes = corpus_pairs(gold_dir, system_dir)
    golds = {pair.topic: map_file_read(pair.gold) for pair in pairs}
    systems = {pair.topic: [map_file_read(path) for path in pair.systems] for pair in pairs}
    jobs = [(topic, system) for topic in golds for system in systems[topic]]
    if progress:
        progress(f"{len(jobs)} system maps in {len(golds)} topics")
    rouge_pairs = [
        (map_text(system.propositions, order=order), map_text(golds[topic].propositions, order=order))
        for order in ("file", "canonical")
        for topic, system in jobs
    ]
    rouge = rouge2_batch(rouge_pairs, engine=rouge_engine)
    meteor_scores = None
    if meteor:
        reason = meteor_unavailable_reason()
        if reason:
            notes.append(reason)
        else:
            if progress:
                progress("METEOR 1.5: scoring every pair of propositions in one run")
            meteor_scores = meteor_batch(
                [(_proposition_strings(system), _proposition_strings(golds[topic])) for topic, system in jobs]
            )
    else:
        notes.append("METEOR 1.5 not requested")
    topics: dict[str, dict[str, SystemResult]] = {topic: {} for topic in golds}
    for index, (topic, system) in enumerate(jobs):
        gold = golds[topic].propositions
        topics[topic][system.name] = SystemResult(
            check=map_check(system.propositions),
            strict=strict_match(system.propositions, gold),
            unlabeled=unlabeled_match(system.propositions, gold),
            concept=concept_match(system.propositions, gold),
            rouge2=rouge[index],
            rouge2_canonical=rouge[len(jobs) + index],
            meteor=meteor_scores[index] if meteor_scores is not None else None,
        )
    fallback_notes = {r.note for r in rouge if r.note and r.engine != "ROUGE-1.5.5"}
    notes.extend(sorted(fallback_notes))
    gold_checks = {topic: map_check(concept_map.propositions) for topic, concept_map in golds.items()}
    return CorpusEvaluation(topics=topics, gold_checks=gold_checks, notes=notes)
