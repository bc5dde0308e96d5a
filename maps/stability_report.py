"""The stability numbers of a topic's maps page: the crowd's counted Likert scores
(ranking.export.raw_label_rows, excluded workers left out) resampled by maps.stability, with
the sources of the topic's final maps tracked."""

from collections import defaultdict
from collections.abc import Hashable

from annotation.models import Topic
from maps.models import ConceptMap, RevisedProposition
from maps.stability import StabilityPoint, bootstrap_stability
from ranking.export import raw_label_rows
from ranking.pipeline import TOP_FOR_CONCEPT_MAPS

KS = (1, 2, 3, 5)


def topic_stability(*, topic: Topic, runs: int = 50) -> list[StabilityPoint]:
    """Top-50 Jaccard and Spearman ρ between resamples of k workers per proposition, and the
    share of the final maps' source propositions that stay in the top 50; [] without labels."""
    scores: dict[Hashable, list[float]] = defaultdict(list)
    for row in raw_label_rows(topic=topic):
        if row["kind"] == "likert" and not row["excluded"]:
            scores[row["proposition_id"]].append(float(row["score"]))
    if not scores:
        return []
    finals = ConceptMap.objects.filter(topic=topic, status=ConceptMap.Status.FINAL)
    tracked = set(
        RevisedProposition.objects.filter(relations__concept_map__in=finals)
        .exclude(revised_from=None)
        .values_list("revised_from_id", flat=True)
    )
    most = max(len(values) for values in scores.values())
    ks = sorted({k for k in KS if k <= most} | {most})
    return bootstrap_stability(scores, ks=ks, top=TOP_FOR_CONCEPT_MAPS, runs=runs, tracked=tracked)
