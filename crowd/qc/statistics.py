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
where an exclusion changed. The cheap figures are recomputed on every pass: those of the
Likert labels (labels, who rated, trap means and the labels' digest: `ScopeLikert`) come
with the job's Likert part (crowd.qc.likert_part), so a pass whose labels did not change and
whose exclusions did not move among the raters reads no Likert label at all.
"""

import hashlib
import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotation.models import Batch, Campaign
from crowd.models import QualityStatistics, WorkerQuality
from crowd.qc.counted import CountedLikert, CountedVotes
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
STATISTICS_VERSION = "2"
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


@dataclass(frozen=True)
class ScopeLikert:
    """What a scope's figures take from its Likert labels, but for the costly figures."""

    labels: int  # non-trap and trap labels
    raters: dict[int, int]  # worker -> labels, traps included
    rating_raters: list[int]  # the workers with non-trap labels, sorted
    ratings_digest: str  # of the non-trap labels, in any order
    trap_means: dict[str, list]  # trap kind -> [mean or None, labels]


@dataclass
class VoteScope:
    """The counted votes of the campaign (topic None) or of one topic."""

    votes: list[tuple[int, int, int, int]] = field(default_factory=list)  # untouched orderings' left out
    votes_per_worker: Counter[int] = field(default_factory=Counter)  # untouched orderings' included


class LikertScopes(Protocol):
    """What the statistics take from the job's Likert part (crowd.qc.likert_part.LikertPart)."""

    @property
    def scopes(self) -> dict[int | None, ScopeLikert]: ...  # the campaign (None) and each labelled topic

    @property
    def unlabelled(self) -> ScopeLikert: ...  # a topic without labels

    @property
    def seconds_per_hit(self) -> tuple[float, int] | None: ...  # (median, HITs) of the Likert HITs


def likert_scopes(likert: CountedLikert) -> tuple[dict[int | None, ScopeLikert], ScopeLikert]:
    """The campaign's (None) and each labelled topic's ScopeLikert, and that of a topic
    without labels."""
    ratings: dict[int, list[Label]] = defaultdict(list)
    trap_labels: dict[int, list[Label]] = defaultdict(list)
    for label in likert.ratings:
        ratings[likert.topic_of[label[1]]].append(label)
    for label in likert.trap_labels:
        trap_labels[likert.topic_of[label[1]]].append(label)
    scopes: dict[int | None, ScopeLikert] = {None: _scope_likert(likert.ratings, likert.trap_labels, likert.traps)}
    for topic in sorted(set(ratings) | set(trap_labels)):
        scopes[topic] = _scope_likert(ratings[topic], trap_labels[topic], likert.traps)
    return scopes, _scope_likert([], [], likert.traps)


def _scope_likert(ratings: list[Label], trap_labels: list[Label], traps: dict[int, str]) -> ScopeLikert:
    raters = Counter(label[0] for label in ratings) + Counter(label[0] for label in trap_labels)
    labels = np.array(ratings, dtype=np.int64).reshape(-1, 3)
    labels = labels[np.lexsort(labels.T[::-1])]
    return ScopeLikert(
        labels=len(ratings) + len(trap_labels),
        raters=dict(raters),
        rating_raters=sorted({label[0] for label in ratings}),
        ratings_digest=hashlib.sha256(labels.tobytes()).hexdigest(),
        trap_means={
            kind: [_finite(stats.mean), stats.n] for kind, stats in trap_report(trap_labels, traps).kinds.items()
        },
    )


def statistics_refresh(
    *,
    campaign: Campaign,
    likert: LikertScopes,
    votes: CountedVotes,
    labels: Callable[[], CountedLikert],
    workers: list[WorkerQuality],
    excluded: set[int],
    recompute: bool = False,
    likert_counted: int | None = None,
) -> None:
    """Compute and store the statistics of the campaign and of each of its topics (a topic
    without counted labels gets empty figures, so the page can say when that was).
    `labels()` reads the counted Likert labels: called only if a scope's costly figures
    must be recomputed (every scope's with `recompute`). `likert_counted`, the counted Likert
    labels when the job ran, goes on the campaign's row: the report compares it with those the
    Likert part was computed from without counting the labels on every page."""
    topic_ids = list(campaign.topics.order_by("pk").values_list("pk", flat=True))
    stored = {
        row.topic_id: row
        for row in QualityStatistics.objects.filter(campaign=campaign).only("topic_id", "inputs_digest", "figures")
    }
    loo = {row.worker_id: row.loo_r for row in workers}
    vote_scopes = _vote_scopes(votes, topic_ids)
    ratings: dict[int | None, list[Label]] = {}
    now = timezone.now()
    rows = []
    for topic in [None, *topic_ids]:
        scope = likert.scopes.get(topic, likert.unlabelled)
        digest = _digest(scope, excluded, campaign.assignments_per_hit)
        previous = stored.get(topic)
        if previous and previous.inputs_digest == digest and not recompute:
            costly = {key: previous.figures[key] for key in COSTLY}
        else:
            ratings = ratings or _rating_scopes(labels(), topic_ids)
            costly = _costly(topic, ratings.get(topic, []), excluded, campaign.assignments_per_hit)
        voting = vote_scopes[topic]
        scope_workers = set(scope.raters) | set(voting.votes_per_worker)
        figures = _figures(scope, voting, excluded, len(scope_workers)) | costly
        figures["loo_histogram"] = _histogram(loo[worker] for worker in scope_workers if worker in loo)
        if topic is None:
            figures.update(_campaign_figures(likert.seconds_per_hit, votes, workers))
            if likert_counted is not None:
                figures["likert_counted"] = likert_counted
        rows.append(
            QualityStatistics(
                campaign=campaign,
                topic_id=topic,
                figures=figures,
                workers=sorted(scope_workers) if topic is not None else [],
                inputs_digest=digest,
                computed_at=now,
            )
        )
    _statistics_write(campaign_id=campaign.pk, rows=rows)


def _vote_scopes(votes: CountedVotes, topic_ids: list[int]) -> dict[int | None, VoteScope]:
    """The campaign's votes, then each topic's, split in one pass. A topic deleted since the
    votes were read is left out (`gone` takes its votes)."""
    topics: dict[int | None, VoteScope] = {topic: VoteScope() for topic in topic_ids}
    gone = VoteScope()
    for vote in votes.votes:
        topics.get(votes.topic_of[vote[1]], gone).votes.append(vote)
    for (topic, worker), count in votes.topic_votes.items():
        topics.get(topic, gone).votes_per_worker[worker] = count
    return {None: VoteScope(votes.votes, votes.votes_per_worker), **topics}


def _rating_scopes(likert: CountedLikert, topic_ids: list[int]) -> dict[int | None, list[Label]]:
    """The campaign's non-trap labels, then each topic's."""
    topics: dict[int | None, list[Label]] = {topic: [] for topic in topic_ids}
    gone: list[Label] = []
    for label in likert.ratings:
        topics.get(likert.topic_of[label[1]], gone).append(label)
    return {None: likert.ratings, **topics}


def _digest(scope: ScopeLikert, excluded: set[int], n: int) -> str:
    """Of what the costly figures rest on: the scope's non-trap Likert labels (their digest,
    in any order) and which of their raters are excluded."""
    raters = excluded.intersection(scope.rating_raters)
    return hashlib.sha256(f"{STATISTICS_VERSION}|{n}|{sorted(raters)}|{scope.ratings_digest}".encode()).hexdigest()


def _figures(scope: ScopeLikert, voting: VoteScope, excluded: set[int], workers: int) -> dict[str, object]:
    kept_votes = [vote for vote in voting.votes if vote[0] not in excluded]
    return {
        "labels": scope.labels,
        "excluded_labels": sum(count for worker, count in scope.raters.items() if worker in excluded),
        "votes": sum(voting.votes_per_worker.values()),
        "workers": workers,
        "trap_means": scope.trap_means,
        "majority_agreement": _both(majority_agreement, voting.votes, kept_votes),
    }


def _costly(topic: int | None, ratings: list[Label], excluded: set[int], n: int) -> dict[str, object]:
    kept_ratings = [label for label in ratings if label[0] not in excluded]
    most = STABILITY_MAX_ITEMS if topic is None else STABILITY_TOPIC_MAX_ITEMS
    return {
        "likert_agreement": _both(lambda labels: meta_worker_agreement(labels, n), ratings, kept_ratings),
        "alpha": _both(krippendorff_alpha, ratings, kept_ratings),
        "stability": [
            [point.size, _finite(point.mean), _finite(point.sd), point.items]
            for point in _stability(kept_ratings, most)
        ],
    }


def _campaign_figures(
    likert_seconds: tuple[float, int] | None, votes: CountedVotes, workers: list[WorkerQuality]
) -> dict[str, object]:
    """What only the campaign shows: the r up to which quality control excluded workers for
    their correlation, and the median seconds per HIT of each kind (a kind's median rests on
    that kind's HITs alone: the Likert one comes with the Likert part)."""
    by_correlation = [
        row.loo_r for row in workers if row.computed_reason.startswith(CORRELATION_REASON) and row.loo_r is not None
    ]
    seconds = {kind: [stats.median, stats.hits] for kind, stats in time_report(votes.times).kinds.items()}
    if likert_seconds is not None:
        seconds[Batch.Kind.LIKERT] = list(likert_seconds)
    return {
        "loo_cutoff": max(by_correlation, default=None),
        "seconds_per_hit": seconds,
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
