"""What the ranking page of a topic shows: the ranked propositions, how settled the ranking
is (Spearman with the previous TrueSkill refit against the comparisons used), and the
uncertainty of the top 50 (μ ± σ), as server-side SVG."""

import math
from dataclasses import dataclass

from django.utils.safestring import SafeString

from annotation.models import Topic
from annotation.text import proposition_text
from crowd.qc.svg import interval_svg, line_svg
from ranking.export import ranking_rows
from ranking.models import RankingSnapshot
from ranking.pipeline import TOP_FOR_CONCEPT_MAPS


@dataclass(frozen=True)
class RankingReport:
    topic: Topic
    rows: list[dict]  # ranking.export rows, plus `text`
    latest: RankingSnapshot | None
    convergence_chart: SafeString
    top_chart: SafeString


def topic_ranking_report(topic: Topic) -> RankingReport:
    rows = [
        {**row, "text": proposition_text(row["subject"], row["relation"], row["object"])}
        for row in ranking_rows(topic=topic)
    ]
    snapshots = list(topic.snapshots.order_by("number"))
    return RankingReport(
        topic=topic,
        rows=rows,
        latest=snapshots[-1] if snapshots else None,
        convergence_chart=convergence_svg(snapshots, stop=topic.campaign.stop_spearman),
        top_chart=top_intervals_svg(rows[:TOP_FOR_CONCEPT_MAPS]),
    )


def convergence_svg(snapshots: list[RankingSnapshot], *, stop: float) -> SafeString:
    """Spearman ρ of each refit with the previous one, from 0 comparisons, up to ρ = 1."""
    points = [
        (snapshot.comparisons_used, snapshot.spearman_previous)
        for snapshot in snapshots
        if snapshot.spearman_previous is not None
    ]
    lowest = min([stop, *(spearman for _used, spearman in points)])
    return line_svg(
        {"Spearman with the previous refit": points},
        title="Convergence of the ranking",
        x_label="comparisons used",
        y_label="Spearman ρ with the previous refit",
        x_range=(0, max([1, *(used for used, _spearman in points)])),
        y_range=(max(-1.0, math.floor(lowest * 10) / 10 - 0.1), 1.0),
        references={f"stop at {stop:g}": stop},
    )


def top_intervals_svg(rows: list[dict]) -> SafeString:
    """TrueSkill μ ± σ by rank, for the rows that went through the comparison rounds."""
    intervals = [
        (row["rank"], row["mu"], row["sigma"], f"#{row['rank']} {row['text']}")
        for row in rows
        if row["mu"] is not None and row["sigma"] is not None
    ]
    title = f"TrueSkill μ ± σ of the top {TOP_FOR_CONCEPT_MAPS}"
    ranks = (0, max((rank for rank, *_rest in intervals), default=1) + 1)
    return interval_svg(intervals, title=title, x_label="rank", y_label="μ ± σ", x_range=ranks)
