"""The worker-quality report of a campaign or one of its topics: the stored worker figures
beside the crowd-level agreement statistics, each next to what Falke & Gurevych (2017)
reported, the bootstrap stability curve (van Halteren & Teufel 2004) and, when the same
topic was run twice, the reliability between the runs.

Everything is computed from the counted labels (see crowd.qc.worker_quality); "without the
excluded" drops the workers aggregation drops. Undefined statistics are None.
"""

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from django.db.models import F, QuerySet
from django.utils.safestring import SafeString

from annotation.models import Campaign, Proposition, Topic
from crowd.models import WorkerQuality
from crowd.qc.svg import histogram_svg, line_svg
from crowd.qc.worker_quality import LOO_FLOOR, TRAP_FAIL_AT, CountedLabels, counted_labels, excluded_worker_ids
from crowd.quality import (
    RunReliability,
    StabilityPoint,
    bootstrap_stability,
    krippendorff_alpha,
    majority_agreement,
    meta_worker_agreement,
    run_reliability,
    trap_report,
)
from ranking.likert import likert_means

PAPER_TRAP_MEANS = {Proposition.TrapKind.OBVIOUS: 1.08, Proposition.TrapKind.SUBTLE: 1.14}
PAPER_LIKERT_AGREEMENT = "0.80–0.81"
PAPER_MAJORITY_AGREEMENT = "0.73–0.78"
PAPER_RUN_RELIABILITY = "0.73–0.82"
STABILITY_DRAWS = 100
STABILITY_MAX_ITEMS = 5_000  # a random subset estimates the same curve, in a page's time
STABILITY_SEED = 2004  # a fixed seed: the page shows the same curve on every load
CSV_HEADER = [
    "worker",
    "labels",
    "items",
    "loo_r",
    "traps_seen",
    "traps_failed",
    "votes",
    "comparison_agreement",
    "untouched_orderings",
    "computed_status",
    "override_status",
    "override_reason",
    "status",
    "computed_at",
]


@dataclass(frozen=True)
class Statistic:
    """A crowd-level statistic on every counted label, and without the excluded workers."""

    all_workers: float | None
    without_excluded: float | None


@dataclass(frozen=True)
class TrapMean:
    kind: str
    mean: float | None
    labels: int
    paper: float


@dataclass(frozen=True)
class RunComparison:
    other: Campaign
    reliability: RunReliability


@dataclass(frozen=True)
class QualityReport:
    campaign: Campaign
    topic: Topic | None
    workers: list[WorkerQuality]
    labels: int
    excluded_labels: int
    votes: int
    trap_means: list[TrapMean]
    likert_agreement: Statistic
    majority_agreement: Statistic
    alpha: Statistic
    stability: list[StabilityPoint]
    loo_cutoff: float | None
    comparable: list[Campaign]
    run: RunComparison | None

    def loo_histogram(self) -> SafeString:
        return histogram_svg(
            [worker.loo_r for worker in self.workers],
            bins=20,
            value_range=(-1.0, 1.0),
            cutoff=self.loo_cutoff,
            cutoff_label="excluded up to",
            title="Leave-one-out correlation per worker",
            x_label="Pearson r with the mean of the other workers",
            y_label="workers",
        )

    def stability_chart(self) -> SafeString:
        return line_svg(
            {"mean Spearman ρ ± SD": [(point.size, point.mean, point.sd) for point in self.stability]},
            title="Bootstrap stability of the ranking by Likert mean",
            x_label="labels per proposition",
            y_label="Spearman ρ between two samples",
            y_range=(-0.1, 1.0),
        )


def campaign_quality_report(
    campaign: Campaign, topic: Topic | None = None, compare_with: Campaign | None = None
) -> QualityReport:
    """The report for the campaign, or for one topic of it; `compare_with` (one of
    `comparable_campaigns`) adds the reliability between the two runs."""
    data = counted_labels(campaign_id=campaign.pk, topic_id=topic.pk if topic else None)
    excluded = excluded_worker_ids(campaign.pk)
    kept = [label for label in data.ratings if label[0] not in excluded]
    kept_votes = [vote for vote in data.votes if vote[0] not in excluded]
    n = campaign.assignments_per_hit
    return QualityReport(
        campaign=campaign,
        topic=topic,
        workers=_workers(campaign, topic, data),
        labels=len(data.likert),
        excluded_labels=sum(label[0] in excluded for label in data.likert),
        votes=sum(data.votes_per_worker.values()),
        trap_means=_trap_means(data),
        likert_agreement=_statistic(lambda labels: meta_worker_agreement(labels, n), data.ratings, kept),
        majority_agreement=_statistic(majority_agreement, data.votes, kept_votes),
        alpha=_statistic(krippendorff_alpha, data.ratings, kept),
        stability=_stability(kept),
        loo_cutoff=_loo_cutoff(campaign),
        comparable=list(comparable_campaigns(campaign, topic)),
        run=_run_comparison(campaign, topic, compare_with, kept) if compare_with else None,
    )


def _defined(value: float) -> float | None:
    return None if math.isnan(value) else value


def _statistic(compute, everything: list, kept: list) -> Statistic:
    return Statistic(_defined(compute(everything)), _defined(compute(kept)))


def _stability(labels: list) -> list[StabilityPoint]:
    """The bootstrap curve on at most STABILITY_MAX_ITEMS propositions drawn at random:
    every item's ρ contribution is alike, so a subset estimates the same curve."""
    items = sorted({label[1] for label in labels})
    if len(items) > STABILITY_MAX_ITEMS:
        chosen = set(random.Random(STABILITY_SEED).sample(items, STABILITY_MAX_ITEMS))
        labels = [label for label in labels if label[1] in chosen]
    return bootstrap_stability(labels, draws=STABILITY_DRAWS, rng=np.random.default_rng(STABILITY_SEED))


def _workers(campaign: Campaign, topic: Topic | None, data: CountedLabels) -> list[WorkerQuality]:
    """The campaign's worker rows (for a topic: of the workers with labels or votes in it),
    lowest leave-one-out r first."""
    rows = WorkerQuality.objects.filter(campaign=campaign).select_related("worker")
    if topic is not None:
        rows = rows.filter(worker_id__in={label[0] for label in data.likert} | set(data.votes_per_worker))
    return list(rows.order_by(F("loo_r").asc(nulls_last=True), "worker__external_id"))


def _trap_means(data: CountedLabels) -> list[TrapMean]:
    kinds = trap_report(data.trap_labels, data.traps, fail_at=TRAP_FAIL_AT).kinds
    return [
        TrapMean(kind, _defined(kinds[kind].mean), kinds[kind].n, paper)
        if kind in kinds
        else TrapMean(kind, None, 0, paper)
        for kind, paper in PAPER_TRAP_MEANS.items()
    ]


def _loo_cutoff(campaign: Campaign) -> float | None:
    """The highest leave-one-out r among the workers quality control excluded for their
    correlation (below the floor, and not for failing traps); None when there are none."""
    cutoff = None
    for quality in WorkerQuality.objects.filter(
        campaign=campaign, computed_status=WorkerQuality.Status.EXCLUDED, loo_r__lt=LOO_FLOOR
    ).only("loo_r", "traps_seen", "traps_failed"):
        assert quality.loo_r is not None, "loo_r__lt excludes NULL"
        failed_traps = quality.traps_seen >= 2 and 2 * quality.traps_failed >= quality.traps_seen
        if not failed_traps and (cutoff is None or quality.loo_r > cutoff):
            cutoff = quality.loo_r
    return cutoff


def comparable_campaigns(campaign: Campaign, topic: Topic | None = None) -> QuerySet[Campaign]:
    """Other runs: the owner's other campaigns with a topic of the same key (any of the
    campaign's keys, or the topic's)."""
    keys = [topic.key] if topic else campaign.topics.values("key")
    return (
        Campaign.objects.filter(owner=campaign.owner, owner__isnull=False, topics__key__in=keys)
        .exclude(pk=campaign.pk)
        .distinct()
        .order_by("name")
    )


def _run_comparison(campaign: Campaign, topic: Topic | None, other: Campaign, kept: list) -> RunComparison:
    """Pearson and Spearman between the two runs' Likert means (traps and excluded workers
    left out) of the propositions both runs share: same topic key, same normalized text."""
    ours = _means_by_text(_propositions(campaign, topic), kept)
    other_topic = other.topics.filter(key=topic.key).first() if topic else None
    other_data = counted_labels(campaign_id=other.pk, topic_id=other_topic.pk if other_topic else None)
    other_excluded = excluded_worker_ids(other.pk)
    other_kept = [label for label in other_data.ratings if label[0] not in other_excluded]
    theirs = _means_by_text(_propositions(other, other_topic), other_kept)
    return RunComparison(other, run_reliability(ours, theirs))


def _propositions(campaign: Campaign, topic: Topic | None) -> dict[int, tuple[str, str]]:
    scope = {"topic": topic} if topic else {"topic__campaign": campaign}
    return {
        pk: (key, text)
        for pk, key, text in Proposition.objects.filter(trap_kind=Proposition.TrapKind.NONE, **scope).values_list(
            "pk", "topic__key", "normalized"
        )
    }


def _means_by_text(texts: dict[int, tuple[str, str]], labels: list) -> dict[tuple[str, str], float]:
    return {texts[item]: mean for item, (mean, _) in likert_means(labels).items() if item in texts}


def worker_quality_csv_rows(campaign: Campaign) -> Iterator[list]:
    """The header, then one row per worker of the campaign (by worker id)."""
    yield CSV_HEADER
    for quality in (
        WorkerQuality.objects.filter(campaign=campaign).select_related("worker").order_by("worker__external_id")
    ):
        yield [
            quality.worker.external_id,
            quality.labels,
            quality.items,
            _blank(quality.loo_r),
            quality.traps_seen,
            quality.traps_failed,
            quality.votes,
            _blank(quality.comparison_agreement),
            quality.untouched_orderings,
            quality.computed_status,
            quality.override_status,
            quality.override_reason,
            quality.status,
            quality.computed_at.isoformat() if quality.computed_at else "",
        ]


def _blank(value: float | None) -> str | float:
    return "" if value is None else round(value, 6)
