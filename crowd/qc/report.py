"""The worker-quality report of a campaign or one of its topics: the stored worker figures
beside the crowd-level agreement statistics, each next to what Falke & Gurevych (2017)
reported, the bootstrap stability curve (van Halteren & Teufel 2004) and, when the same
topic was run twice, the reliability between the runs.

A report reads what the QC job stored (WorkerQuality, QualityStatistics; see
crowd.qc.statistics) and computes nothing on the labels, so a page costs the same few
queries at any number of topics, workers or labels; it says when the figures were computed.
The workers come a page at a time, filtered by worker id and status. "Without the
excluded" drops the workers aggregation drops. Undefined statistics are None.
"""

import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from django.core.paginator import Page, Paginator
from django.db.models import Avg, F, QuerySet
from django.utils.safestring import SafeString

from annotation.campaigns import campaigns_visible_to
from annotation.models import Campaign, Proposition, Topic
from crowd.models import LikertLabel, QualityStatistics, WorkerQuality, WorkerQualityQuerySet, counted
from crowd.qc.counted import likert_sums
from crowd.qc.likert_part import SPEEDER_FRACTION, SPEEDER_MIN_HITS, likert_part_summary
from crowd.qc.policy import AGREEMENT_FLOOR, LOO_FLOOR, MAX_UNTOUCHED_SHARE, TRAP_FAIL_AT
from crowd.qc.statistics import LOO_RANGE
from crowd.qc.svg import binned_histogram_svg, chart_sizes, line_svg
from crowd.quality import RunReliability, StabilityPoint, run_reliability

PAPER_TRAP_MEANS = {Proposition.TrapKind.OBVIOUS: 1.08, Proposition.TrapKind.SUBTLE: 1.14}
PAPER_LIKERT_AGREEMENT = "0.80–0.81"
PAPER_MAJORITY_AGREEMENT = "0.73–0.78"
PAPER_RUN_RELIABILITY = "0.73–0.82"
WORKERS_PER_PAGE = 50
# The worker table's status filter: value -> label (the rows each keeps: _workers_filtered).
WORKER_FILTERS = {
    "": "all workers",
    "excluded": "excluded",
    "included": "included",
    "overridden": "with an override",
    "speeder": "speeders",
    "untouched": "with untouched orderings",
}
CSV_HEADER = [
    "worker",
    "labels",
    "items",
    "loo_r",
    "traps_seen",
    "traps_failed",
    "obvious_traps_seen",
    "obvious_traps_failed",
    "subtle_traps_seen",
    "subtle_traps_failed",
    "votes",
    "comparison_agreement",
    "orderings",
    "untouched_orderings",
    "likert_seconds",
    "comparison_seconds",
    "speeder",
    "computed_status",
    "computed_reason",
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
class WorkerFilter:
    """Which page of the worker table: `search` in the worker id, `status` a WORKER_FILTERS key."""

    search: str = ""
    status: str = ""
    page: int | str = 1


@dataclass(frozen=True)
class Rules:
    """What quality control needs and does, as the page states it (crowd.quality.exclusion_reasons)."""

    min_items: int
    min_traps: int
    min_orderings: int
    max_label_share: float
    trap_fail_at: int = TRAP_FAIL_AT
    loo_floor: float = LOO_FLOOR
    agreement_floor: float = AGREEMENT_FLOOR
    max_untouched_share: float = MAX_UNTOUCHED_SHARE
    speeder_fraction: float = SPEEDER_FRACTION
    speeder_min_hits: int = SPEEDER_MIN_HITS


@dataclass(frozen=True)
class LikertKept:
    """Quality control kept its Likert figures while labels streamed in (crowd.qc.likert_part):
    from how many labels, when, and how many were counted when it last ran."""

    labels: int
    computed_at: datetime | None
    counted: int


def _likert_kept(campaign: Campaign, overall: dict) -> LikertKept | None:
    """From the campaign's statistics row: the part's own figures, and the labels counted when
    quality control last ran (stored by it: counting them here took 180 ms of the page's
    190 ms at 275,000 labels); a row stored before that figure was counted now."""
    stored = likert_part_summary(campaign.pk)
    if stored is None:
        return None
    labels, computed_at = stored
    counted = overall.get("likert_counted")
    if counted is None:
        counted = likert_sums(campaign_id=campaign.pk)[0]
    if counted <= labels:  # an event's run may store a part newer than the statistics' count
        return None
    return LikertKept(labels=labels, computed_at=computed_at, counted=counted)


@dataclass(frozen=True)
class QualityReport:
    campaign: Campaign
    topic: Topic | None
    computed_at: datetime | None  # None: quality control has not stored statistics yet
    likert_kept: "LikertKept | None"  # the Likert figures are as of an earlier run: labels came since
    workers: Page
    worker_filter: WorkerFilter
    labels: int
    excluded_labels: int
    votes: int
    trap_means: list[TrapMean]
    likert_agreement: Statistic
    majority_agreement: Statistic
    alpha: Statistic
    stability: list[StabilityPoint]
    loo_counts: list[int]
    loo_cutoff: float | None
    seconds_per_hit: dict[str, float]  # the campaign's median per kind of HIT
    rules: Rules
    comparable: list[Campaign]
    run: RunComparison | None

    def loo_histogram(self) -> SafeString:
        return chart_sizes(
            lambda box: binned_histogram_svg(
                self.loo_counts,
                value_range=LOO_RANGE,
                cutoff=self.loo_cutoff,
                cutoff_label="excluded up to",
                title="Leave-one-out correlation per worker",
                x_label="Pearson r with the other workers' mean",  # fits a NARROW box
                y_label="workers",
                box=box,
            )
        )

    def stability_chart(self) -> SafeString:
        return chart_sizes(
            lambda box: line_svg(
                {"mean Spearman ρ ± SD": [(point.size, point.mean, point.sd) for point in self.stability]},
                title="Bootstrap stability of the ranking by Likert mean",
                x_label="labels per proposition",
                y_label="Spearman ρ between two samples",
                y_range=(-0.1, 1.0),
                box=box,
            )
        )


def campaign_quality_report(
    campaign: Campaign,
    topic: Topic | None = None,
    compare_with: Campaign | None = None,
    workers: WorkerFilter | None = None,
    viewer=None,
) -> QualityReport:
    """The report for the campaign, or for one topic of it, from the stored statistics and
    one page of the worker table; `compare_with` (one of `comparable_campaigns`) adds the
    reliability between the two runs, whose choices are those `viewer` sees."""
    stored = (
        QualityStatistics.objects.filter(campaign=campaign, topic=topic)
        .only("figures", "workers", "computed_at")
        .first()
    )
    figures = stored.figures if stored else {}
    # The campaign-wide figures of a topic's page (cut-off, times) come from the campaign's row.
    overall = figures if topic is None else _campaign_figures(campaign)
    worker_filter = workers or WorkerFilter()
    return QualityReport(
        campaign=campaign,
        topic=topic,
        computed_at=stored.computed_at if stored else None,
        likert_kept=_likert_kept(campaign, overall) if stored else None,
        workers=_workers_page(campaign, stored.workers if stored and topic else None, worker_filter),
        worker_filter=worker_filter,
        labels=figures.get("labels", 0),
        excluded_labels=figures.get("excluded_labels", 0),
        votes=figures.get("votes", 0),
        trap_means=_trap_means(figures.get("trap_means", {})),
        likert_agreement=Statistic(*figures.get("likert_agreement", (None, None))),
        majority_agreement=Statistic(*figures.get("majority_agreement", (None, None))),
        alpha=Statistic(*figures.get("alpha", (None, None))),
        stability=[
            StabilityPoint(size, _nan(mean), _nan(sd), items) for size, mean, sd, items in figures.get("stability", [])
        ],
        loo_counts=figures.get("loo_histogram", []),
        loo_cutoff=overall.get("loo_cutoff"),
        seconds_per_hit={kind: median for kind, (median, _hits) in overall.get("seconds_per_hit", {}).items()},
        rules=Rules(
            min_items=campaign.qc_min_items,
            min_traps=campaign.qc_min_traps,
            min_orderings=campaign.qc_min_orderings,
            max_label_share=campaign.qc_max_label_share,
        ),
        comparable=list(comparable_campaigns(campaign, topic, viewer)),
        run=_run_comparison(campaign, topic, compare_with) if compare_with else None,
    )


def _campaign_figures(campaign: Campaign) -> dict:
    return (
        QualityStatistics.objects.filter(campaign=campaign, topic__isnull=True)
        .values_list("figures", flat=True)
        .first()
        or {}
    )


def _trap_means(stored: dict[str, list]) -> list[TrapMean]:
    """Each kind's stored [mean, labels] beside the paper's mean; a kind never labelled: none."""
    means = []
    for kind, paper in PAPER_TRAP_MEANS.items():
        mean, labels = stored.get(kind, (None, 0))
        means.append(TrapMean(kind, mean, labels, paper))
    return means


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


def _workers_page(campaign: Campaign, topic_workers: list[int] | None, chosen: WorkerFilter) -> Page:
    """One page of the campaign's worker rows (of a topic: of the workers with labels or
    votes in it), lowest leave-one-out r first: a count and a page, two queries."""
    rows = WorkerQuality.objects.filter(campaign=campaign).select_related("worker")
    if topic_workers is not None:
        rows = rows.filter(worker_id__in=topic_workers)
    if chosen.search.strip():
        rows = rows.filter(worker__external_id__icontains=chosen.search.strip())
    rows = _workers_filtered(rows, chosen.status)
    ordered = rows.order_by(F("loo_r").asc(nulls_last=True), "worker__external_id", "pk")
    return Paginator(ordered, WORKERS_PER_PAGE).get_page(chosen.page)


def _workers_filtered(rows: WorkerQualityQuerySet, status: str) -> WorkerQualityQuerySet:
    if status == "excluded":
        return rows.excluded()
    if status == "included":
        return rows.included()
    if status == "overridden":
        return rows.exclude(override_status="")
    if status == "speeder":
        return rows.filter(speeder=True)
    if status == "untouched":
        return rows.filter(untouched_orderings__gt=0)
    return rows


def comparable_campaigns(campaign: Campaign, topic: Topic | None = None, viewer=None) -> QuerySet[Campaign]:
    """Other runs: the owner's other campaigns with a topic of the same key (any of the
    campaign's keys, or the topic's); only those `viewer` sees, when given (a collaborator on
    this campaign does not see the owner's other campaigns unless they are shared too)."""
    keys = [topic.key] if topic else campaign.topics.values("key")
    runs = Campaign.objects.filter(owner=campaign.owner, owner__isnull=False, topics__key__in=keys)
    if viewer is not None:
        runs = runs.filter(pk__in=campaigns_visible_to(viewer))
    return runs.exclude(pk=campaign.pk).distinct().order_by("name")


def _run_comparison(campaign: Campaign, topic: Topic | None, other: Campaign) -> RunComparison:
    """Pearson and Spearman between the two runs' Likert means (traps and excluded workers
    left out) of the propositions both runs share: same topic key, same normalized text.
    The means are the database's (one grouped query per run), only when asked for."""
    key = topic.key if topic else None
    return RunComparison(other, run_reliability(_means_by_text(campaign, key), _means_by_text(other, key)))


def _means_by_text(campaign: Campaign, key: str | None) -> dict[tuple[str, str], float]:
    """{(topic key, normalized text): mean} over the campaign's counted labels on non-trap
    propositions (of the topic `key`, if given), excluded workers left out."""
    labels = LikertLabel.objects.filter(
        counted("assignment__"),
        proposition__topic__campaign=campaign,
        proposition__trap_kind=Proposition.TrapKind.NONE,
    ).exclude(worker_id__in=WorkerQuality.objects.excluded().filter(campaign=campaign).values("worker_id"))
    if key is not None:
        labels = labels.filter(proposition__topic__key=key)
    rows = labels.values_list("proposition__topic__key", "proposition__normalized").annotate(mean=Avg("score"))
    return {(topic_key, text): mean for topic_key, text, mean in rows}


def worker_quality_csv_rows(campaign: Campaign) -> Iterator[list]:
    """The header, then one row per worker of the campaign (by worker id)."""
    yield CSV_HEADER
    rows = WorkerQuality.objects.filter(campaign=campaign).select_related("worker").order_by("worker__external_id")
    for quality in rows.iterator(chunk_size=2000):
        yield [
            quality.worker.external_id,
            quality.labels,
            quality.items,
            _blank(quality.loo_r),
            quality.traps_seen,
            quality.traps_failed,
            quality.obvious_traps_seen,
            quality.obvious_traps_failed,
            quality.subtle_traps_seen,
            quality.subtle_traps_failed,
            quality.votes,
            _blank(quality.comparison_agreement),
            quality.orderings,
            quality.untouched_orderings,
            _blank(quality.likert_seconds),
            _blank(quality.comparison_seconds),
            int(quality.speeder),
            _status_word(quality.computed_status),
            quality.computed_reason,
            _status_word(quality.override_status),
            quality.override_reason,
            _status_word(quality.status),
            quality.computed_at.isoformat() if quality.computed_at else "",
        ]


def _status_word(status: str) -> str:
    """The page's word for a status ("included" for "ok"); "" (no decision) stays blank."""
    return str(WorkerQuality.Status(status).label).lower() if status else ""


def _blank(value: float | None) -> str | float:
    return "" if value is None else round(value, 6)
