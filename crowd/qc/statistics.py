"""The crowd-level quality statistics of a campaign and of each of its topics, computed by the
QC job (crowd.qc.worker_quality.campaign_quality_refresh) and stored as QualityStatistics,
so the report pages and their CSV read figures instead of recomputing them per request.

Per scope (the campaign, and each topic): counted labels and votes, the labels of excluded
workers, trap means per kind (Falke & Gurevych 2017 saw 1.08 and 1.14), meta-worker Likert
agreement, comparison majority agreement and Krippendorff's α on every label and without
the excluded workers, the bootstrap stability curve (van Halteren & Teufel 2004) without
them, and the histogram of the workers' leave-one-out r. The campaign adds the r up to which
workers were excluded for their correlation, and the median seconds per HIT of each kind.

Incremental per topic: the costly figures (meta-worker agreement, α, the stability curve)
rest only on a scope's Likert labels and on which of their raters are excluded; a digest of
those inputs is stored beside them, and a scope whose digest did not change keeps them. In
the comparison rounds, when Likert labels no longer arrive, a pass recomputes them only
where an exclusion changed. The cheap figures are recomputed on every pass.
"""

import hashlib
import math
import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotation.models import Campaign
from crowd.models import QualityStatistics, WorkerQuality
from crowd.qc.counted import CountedLabels
from crowd.quality import (
    StabilityPoint,
    bootstrap_stability,
    krippendorff_alpha,
    majority_agreement,
    meta_worker_agreement,
    time_report,
    trap_report,
)

# Bump when a stored figure's definition changes: every scope's costly figures are recomputed.
STATISTICS_VERSION = "1"
# The stability curve on a random subset of the propositions: every item's contribution to ρ
# is alike, so a subset estimates the same mean curve (its SD grows as the subset shrinks), and
# 50 draws pin the mean to about ±0.005. On 2,000 items per topic, 100 draws and no subset
# cost 8× more: about a second per topic on every pass of the Likert round.
STABILITY_DRAWS = 50
STABILITY_MAX_ITEMS = 5_000  # the campaign's curve
STABILITY_TOPIC_MAX_ITEMS = 1_000  # a topic's curve
STABILITY_SEED = 2004  # a fixed seed: the same labels give the same curve
LOO_BINS = 20
LOO_RANGE = (-1.0, 1.0)
COSTLY = ("likert_agreement", "alpha", "stability")
CORRELATION_REASON = "leave-one-out"  # how crowd.quality.exclusion_reasons words rule 2

Label = tuple[int, int, int]


@dataclass
class Scope:
    """The counted labels of the campaign (topic None) or of one topic."""

    topic_id: int | None
    ratings: list[Label] = field(default_factory=list)
    trap_labels: list[Label] = field(default_factory=list)
    votes: list[tuple[int, int, int, int]] = field(default_factory=list)  # untouched orderings' left out
    votes_per_worker: Counter[int] = field(default_factory=Counter)  # untouched orderings' included

    @cached_property  # read once the scope is filled (_scopes)
    def workers(self) -> set[int]:
        raters = {label[0] for label in self.ratings} | {label[0] for label in self.trap_labels}
        return raters | set(self.votes_per_worker)


def statistics_refresh(
    *, campaign: Campaign, data: CountedLabels, workers: list[WorkerQuality], excluded: set[int]
) -> None:
    """Compute and store the statistics of the campaign and of each of its topics (a topic
    without counted labels gets empty figures, so the page can say when that was)."""
    topic_ids = list(campaign.topics.order_by("pk").values_list("pk", flat=True))
    stored = {
        row.topic_id: row
        for row in QualityStatistics.objects.filter(campaign=campaign).only("topic_id", "inputs_digest", "figures")
    }
    loo = {row.worker_id: row.loo_r for row in workers}
    now = timezone.now()
    rows = []
    for scope in _scopes(data, topic_ids):
        digest = _digest(scope, excluded, campaign.assignments_per_hit)
        previous = stored.get(scope.topic_id)
        kept = previous.figures if previous and previous.inputs_digest == digest else None
        figures = _figures(scope, data.traps, excluded, campaign.assignments_per_hit, kept)
        figures["loo_histogram"] = _histogram(loo[worker] for worker in scope.workers if worker in loo)
        if scope.topic_id is None:
            figures.update(_campaign_figures(data, workers))
        rows.append(
            QualityStatistics(
                campaign=campaign,
                topic_id=scope.topic_id,
                figures=figures,
                workers=sorted(scope.workers) if scope.topic_id is not None else [],
                inputs_digest=digest,
                computed_at=now,
            )
        )
    _statistics_write(campaign_id=campaign.pk, rows=rows)


def _scopes(data: CountedLabels, topic_ids: list[int]) -> list[Scope]:
    """The campaign's scope, then one per topic, split in one pass over the labels. A topic
    deleted since the labels were read is left out (`gone` takes its labels)."""
    topics = {topic: Scope(topic) for topic in topic_ids}
    gone = Scope(None)
    for label in data.ratings:
        topics.get(data.topic_of[label[1]], gone).ratings.append(label)
    for label in data.trap_labels:
        topics.get(data.topic_of[label[1]], gone).trap_labels.append(label)
    for vote in data.votes:
        topics.get(data.topic_of[vote[1]], gone).votes.append(vote)
    for (topic, worker), votes in data.topic_votes.items():
        topics.get(topic, gone).votes_per_worker[worker] = votes
    return [Scope(None, data.ratings, data.trap_labels, data.votes, data.votes_per_worker), *topics.values()]


def _digest(scope: Scope, excluded: set[int], n: int) -> str:
    """Of what the costly figures rest on: the scope's non-trap Likert labels (in any order)
    and which of their raters are excluded."""
    labels = np.array(scope.ratings, dtype=np.int64).reshape(-1, 3)
    labels = labels[np.lexsort(labels.T[::-1])]
    raters = {label[0] for label in scope.ratings}
    digest = hashlib.sha256(f"{STATISTICS_VERSION}|{n}|{sorted(excluded & raters)}|".encode())
    digest.update(labels.tobytes())
    return digest.hexdigest()


def _figures(scope: Scope, traps: dict[int, str], excluded: set[int], n: int, kept: dict | None) -> dict[str, object]:
    kept_ratings = [label for label in scope.ratings if label[0] not in excluded]
    kept_votes = [vote for vote in scope.votes if vote[0] not in excluded]
    likert = scope.ratings + scope.trap_labels
    kinds = trap_report(scope.trap_labels, traps).kinds
    figures: dict[str, object] = {
        "labels": len(likert),
        "excluded_labels": sum(label[0] in excluded for label in likert),
        "votes": sum(scope.votes_per_worker.values()),
        "workers": len(scope.workers),
        "trap_means": {kind: [_finite(stats.mean), stats.n] for kind, stats in kinds.items()},
        "majority_agreement": _both(majority_agreement, scope.votes, kept_votes),
    }
    if kept is not None:
        figures.update({key: kept[key] for key in COSTLY})
        return figures
    figures["likert_agreement"] = _both(lambda labels: meta_worker_agreement(labels, n), scope.ratings, kept_ratings)
    figures["alpha"] = _both(krippendorff_alpha, scope.ratings, kept_ratings)
    most = STABILITY_MAX_ITEMS if scope.topic_id is None else STABILITY_TOPIC_MAX_ITEMS
    figures["stability"] = [
        [point.size, _finite(point.mean), _finite(point.sd), point.items] for point in _stability(kept_ratings, most)
    ]
    return figures


def _campaign_figures(data: CountedLabels, workers: list[WorkerQuality]) -> dict[str, object]:
    """What only the campaign shows: the r up to which quality control excluded workers for
    their correlation, and the median seconds per HIT of each kind."""
    by_correlation = [
        row.loo_r for row in workers if row.computed_reason.startswith(CORRELATION_REASON) and row.loo_r is not None
    ]
    times = time_report(data.times)
    return {
        "loo_cutoff": max(by_correlation, default=None),
        "seconds_per_hit": {kind: [stats.median, stats.hits] for kind, stats in times.kinds.items()},
        "speeders": sum(row.speeder for row in workers),
    }


def _both(compute: Callable[[list], float], everything: list, kept: list) -> list[float | None]:
    """A statistic on every label and without the excluded workers' labels."""
    return [_finite(compute(everything)), _finite(compute(kept))]


def _stability(labels: list[Label], most: int) -> list[StabilityPoint]:
    """The bootstrap curve on at most `most` propositions drawn at random (seeded)."""
    items = sorted({label[1] for label in labels})
    if len(items) > most:
        chosen = set(random.Random(STABILITY_SEED).sample(items, most))
        labels = [label for label in labels if label[1] in chosen]
    return bootstrap_stability(labels, draws=STABILITY_DRAWS, rng=np.random.default_rng(STABILITY_SEED))


def _histogram(values: Iterable[float | None]) -> list[int]:
    data = np.array([value for value in values if value is not None and math.isfinite(value)], float)
    counts, _edges = np.histogram(data, bins=LOO_BINS, range=LOO_RANGE)
    return [int(count) for count in counts]


def _finite(value: float) -> float | None:
    """JSON has no NaN: an undefined statistic is stored as null."""
    return None if math.isnan(value) else float(value)


def _statistics_write(*, campaign_id: int, rows: list[QualityStatistics]) -> None:
    """Update the campaign's rows and create the missing ones, under a lock on the campaign
    row so that two refreshes never both create one."""
    fields = ["figures", "workers", "inputs_digest", "computed_at"]
    with transaction.atomic():
        Campaign.objects.select_for_update().filter(pk=campaign_id).first()
        existing = dict(QualityStatistics.objects.filter(campaign_id=campaign_id).values_list("topic_id", "pk"))
        updates, creates = [], []
        for row in rows:
            if row.topic_id in existing:
                row.pk = existing[row.topic_id]
                updates.append(row)
            else:
                creates.append(row)
        QualityStatistics.objects.bulk_update(updates, fields, batch_size=500)
        QualityStatistics.objects.bulk_create(creates, batch_size=500)
