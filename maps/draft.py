"""The automatic draft of a topic's map: the paper's baseline idea (§7) applied to the crowd's
ranking. Concepts with the same stemmed label are merged (maps.labels.stemmed_key), then
propositions are taken in importance order, each one only if it touches the map so far, adds
no second relation to a pair and no loop, and keeps the map within the target size. A greedy
run from the most important proposition may stall below the target; then every other
proposition is tried as the start and the largest map reached is kept, and said.
"""

from dataclasses import dataclass

from django.db import transaction

from annotation.models import Topic
from maps.checker import map_check
from maps.cmap import label_normalise
from maps.labels import stemmed_key
from maps.models import TARGET_CONCEPTS, Concept, ConceptMap, Relation, RevisedProposition
from maps.workbench import map_propositions
from ranking.export import ranking_rows


@dataclass(frozen=True)
class Candidate:
    subject: str
    relation: str
    object: str
    revised_id: int | None  # the revised proposition, where the draft reads the revision


@dataclass(frozen=True)
class DraftResult:
    concept_map: ConceptMap
    concepts: int
    relations: int
    target: int
    candidates: int

    @property
    def message(self) -> str:
        reached = f"{self.concepts} concepts, {self.relations} relations"
        if self.concepts >= self.target:
            return f"Automatic draft: {reached}, connected."
        return (
            f"Automatic draft: no connected map of {self.target} concepts exists among the {self.candidates} "
            f"propositions; the largest it reached has {reached}."
        )


def draft_select(candidates: list[Candidate], *, target: int = TARGET_CONCEPTS) -> list[int]:
    """Indexes of the candidates in the draft: greedy in importance order from each start, the
    first run that reaches `target` concepts (else the largest). Pure: labels in, indexes out."""
    keys = [(stemmed_key(c.subject), stemmed_key(c.object)) for c in candidates]
    best: list[int] = []
    best_size = 0
    for start, (s0, o0) in enumerate(keys):
        if s0 == o0:
            continue
        chosen, concepts, pairs = [start], {s0, o0}, {frozenset((s0, o0))}
        grown = True
        while grown and len(concepts) < target:
            grown = False
            for index, (s, o) in enumerate(keys):
                pair = frozenset((s, o))
                new = {s, o} - concepts
                if s == o or pair in pairs or len(new) == 2 or len(concepts) + len(new) > target:
                    continue
                chosen.append(index)
                concepts |= new
                pairs.add(pair)
                grown = True
                break
        if len(concepts) > best_size:
            best, best_size = sorted(chosen), len(concepts)
        if best_size >= target:
            break
    return best


def draft_candidates(*, topic: Topic) -> list[Candidate]:
    """The topic's revision in importance order where there is one, else the crowd's whole ranking."""
    revised = list(RevisedProposition.objects.filter(topic=topic).order_by("position", "id"))
    if revised:
        return [Candidate(p.subject, p.relation, p.object, p.pk) for p in revised]
    return [Candidate(r["subject"], r["relation"], r["object"], None) for r in ranking_rows(topic=topic)]


def map_draft(*, topic: Topic, target: int = TARGET_CONCEPTS) -> DraftResult:
    """Build (or rebuild) the topic's automatic draft map from its revision, or from the whole
    ranking before a revision exists; returns it with what it reached."""
    candidates = draft_candidates(topic=topic)
    chosen = draft_select(candidates, target=target)
    with transaction.atomic():
        Topic.objects.select_for_update().get(pk=topic.pk)
        ConceptMap.objects.filter(topic=topic, kind=ConceptMap.Kind.AUTOMATIC).delete()
        concept_map = ConceptMap.objects.create(
            topic=topic, kind=ConceptMap.Kind.AUTOMATIC, name="automatic draft", target_concepts=target
        )
        concepts: dict[str, Concept] = {}

        def concept(label: str) -> Concept:
            key = stemmed_key(label)
            text = label_normalise(label)
            if key not in concepts:
                concepts[key] = Concept.objects.create(concept_map=concept_map, label=text, merged_from=[text])
            elif text not in concepts[key].merged_from:
                concepts[key].merged_from.append(text)
                concepts[key].save(update_fields=["merged_from"])
            return concepts[key]

        for index in chosen:
            candidate = candidates[index]
            Relation.objects.create(
                concept_map=concept_map,
                source=concept(candidate.subject),
                target=concept(candidate.object),
                label=label_normalise(candidate.relation) or "related to",
                proposition_id=candidate.revised_id,
            )
    return DraftResult(
        concept_map=concept_map,
        concepts=len(concepts),
        relations=len(chosen),
        target=target,
        candidates=len(candidates),
    )


def draft_lines(*, campaign) -> list[str]:
    """An automatic draft per topic of the campaign, each said with the checker's verdict."""
    lines = []
    for topic in campaign.topics.order_by("key"):
        result = map_draft(topic=topic)
        check = map_check(map_propositions(result.concept_map))
        verdict = "passes the checker" if check.passes else "fails the checker"
        lines.append(f"  {topic.key}: {result.message} ({check.concepts} concepts, {verdict})")
    return lines
