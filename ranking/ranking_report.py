"""What the ranking page of a topic shows: one page of the ranked propositions (ranks are
global), how settled the ranking is (Spearman with the previous TrueSkill refit against the
comparisons used), and the uncertainty of the top 50 (μ ± σ), as server-side SVG drawn for
a desktop's figure and a phone's (crowd.qc.svg.chart_sizes). It reads
stored scores only, in a fixed number of queries however many propositions the topic has;
the downloads (ranking.export) hold every row."""

import math
from dataclasses import dataclass

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.utils.safestring import SafeString

from annotation.models import Proposition, Topic
from annotation.text import proposition_text
from crowd.qc.svg import WIDE, Box, chart_sizes, interval_svg, line_svg
from ranking.export import ranked_propositions, ranking_row, ranking_ties
from ranking.models import RankingSnapshot
from ranking.pipeline import TOP_FOR_CONCEPT_MAPS
from ranking.stopping import Stopping, near_equal_flags, topic_stopping

PAGE_SIZE = 100  # propositions per page


@dataclass(frozen=True)
class RankingReport:
    topic: Topic
    page: Page  # of the ranked propositions, best first
    rows: list[dict]  # the page's ranking.export rows (global ranks), plus `text`
    latest: RankingSnapshot | None
    convergence_chart: SafeString
    top_chart: SafeString
    stopping: Stopping  # why the comparison rounds stopped, or where they stand


def topic_ranking_report(topic: Topic, *, page: str | int | None = None) -> RankingReport:
    """The report with page `page` of the ranking (the first when missing or not a number,
    the last when past the end)."""
    ranked = ranked_propositions(topic=topic)
    shown = Paginator(ranked.values_list("pk", flat=True), PAGE_SIZE).get_page(page)
    rows = _rows(topic, ranked, list(shown.object_list), first_rank=shown.start_index())
    # The first page holds the top of the chart (PAGE_SIZE ≥ TOP_FOR_CONCEPT_MAPS); others read it.
    top = (
        rows
        if shown.number == 1
        else _rows(topic, ranked, list(ranked.values_list("pk", flat=True)[:TOP_FOR_CONCEPT_MAPS]))
    )
    snapshots = list(topic.snapshots.defer("ranking").order_by("number"))
    return RankingReport(
        topic=topic,
        page=shown,
        rows=rows,
        latest=snapshots[-1] if snapshots else None,
        convergence_chart=chart_sizes(
            lambda box: convergence_svg(snapshots, stop=topic.campaign.stop_spearman, box=box)
        ),
        top_chart=chart_sizes(lambda box: top_intervals_svg(top[:TOP_FOR_CONCEPT_MAPS], box=box)),
        stopping=topic_stopping(topic),
    )


def _rows(topic: Topic, ranked: QuerySet[Proposition], ids: list[int], *, first_rank: int = 1) -> list[dict]:
    """The ranking rows of `ids`, ranked from `first_rank`. The order was found on ids alone:
    a deep page of a large topic sorts narrow rows, then reads only its own propositions."""
    found = ranked.in_bulk(ids)
    ties = ranking_ties(topic=topic, first=first_rank, last=first_rank + len(ids) - 1)
    rows = (
        ranking_row(topic=topic, rank=first_rank + offset, proposition=found[pk], tie=ties.get(pk))
        for offset, pk in enumerate(ids)
    )
    listed = [{**row, "text": proposition_text(row["subject"], row["relation"], row["object"])} for row in rows]
    likert_ranks = _likert_ranks(topic, ids)
    for row, near in zip(listed, near_equal_flags(listed), strict=True):
        row["near_above"] = near  # μ within a tenth of σ of the row above: near-equal (ranking.stopping)
        row["likert_rank"] = likert_ranks.get(row["id"])
    return listed


def _likert_ranks(topic: Topic, ids: list[int]) -> dict[int, int]:
    """The Likert-only order: each of `ids`' rank by Likert mean among the topic's rated
    propositions (traps left out), ties by id, as the ranking orders the uncompared ones."""
    rated = (
        Proposition.objects.filter(topic=topic, trap_kind=Proposition.TrapKind.NONE, score__likert_mean__isnull=False)
        .order_by("-score__likert_mean", "pk")
        .values_list("pk", flat=True)
    )
    wanted = set(ids)
    return {pk: rank for rank, pk in enumerate(rated.iterator(chunk_size=10_000), start=1) if pk in wanted}


def convergence_svg(snapshots: list[RankingSnapshot], *, stop: float, box: Box = WIDE) -> SafeString:
    """Spearman ρ of each refit with the previous one, from 0 comparisons, up to ρ = 1. The
    first refit has no previous one: alone, it is said, not drawn."""
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
        empty="one refit so far: convergence needs two" if len(snapshots) == 1 else "no data yet",
        box=box,
    )


def top_intervals_svg(rows: list[dict], *, box: Box = WIDE) -> SafeString:
    """TrueSkill μ ± σ by rank, for the rows that went through the comparison rounds."""
    intervals = [
        (row["rank"], row["mu"], row["sigma"], f"#{row['rank']} {row['text']}")
        for row in rows
        if row["mu"] is not None and row["sigma"] is not None
    ]
    title = f"TrueSkill μ ± σ of the top {TOP_FOR_CONCEPT_MAPS}"
    ranks = (0, max((rank for rank, *_rest in intervals), default=1) + 1)
    return interval_svg(intervals, title=title, x_label="rank", y_label="μ ± σ", x_range=ranks, box=box)
