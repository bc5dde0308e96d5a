"""Exports: the ranking per topic, the raw labels behind it, and its top 50 propositions as triples.

Ordering: propositions that went through the comparison rounds by TrueSkill μ (then σ
ascending), followed by the rest by Likert mean. Every number can be recomputed from the
raw labels export (Likert labels and comparison votes with worker, assignment, time and
exclusion flag).
"""

import csv
import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, NamedTuple, TypedDict

from django.db.models import Case, Count, F, Q, QuerySet, Value, When, Window
from django.db.models.expressions import OrderBy
from django.db.models.functions import Coalesce, Rank, RowNumber

from annotation.models import Campaign, Proposition, Topic
from annotation.suitability.selectors import propositions_for_likert
from config.spreadsheets import TextSink, spreadsheet_record
from crowd.models import Assignment, Comparison, LikertLabel, confirmed
from crowd.qc.worker_quality import excluded_worker_ids
from crowd.sessions.consent import answer_consent_versions, campaign_answer_consent_versions
from ranking.models import PropositionScore

if TYPE_CHECKING:  # for mypy's Django plugin only: the annotations of `ranked_with_ties`
    from django_stubs_ext import WithAnnotations

FORMATS = ("csv", "tsv", "jsonl")
RANKING_COLUMNS = (
    "topic",
    "rank",
    "id",
    "external_id",
    "subject",
    "relation",
    "object",
    "likert_mean",
    "likert_n",
    "mu",
    "sigma",
    "conservative",
    "comparisons",
    "in_comparisons",
    "tie_rank",
    "tie_size",
)
LIKERT_COLUMNS = ("kind", "topic", "proposition_id", "worker", "assignment", "submitted_at", "score", "excluded")
COMPARISON_COLUMNS = (
    "kind",
    "topic",
    "winner_id",
    "loser_id",
    "worker",
    "assignment",
    "submitted_at",
    "untouched",
    "shown_order",
    "excluded",
)
# Of every answer, whatever its kind: after both kinds' columns, so each keeps its place.
ANSWER_COLUMNS = ("consent_version",)
LABEL_COLUMNS = tuple(dict.fromkeys(LIKERT_COLUMNS + COMPARISON_COLUMNS + ANSWER_COLUMNS))  # both kinds in one file
# The top propositions as triples, `subject<TAB>relation<TAB>object`, one per line, no header:
# the input of concept-map construction, not a concept map (76-96 concepts, not connected), so
# named for what it is. A `.cmap` is only ever a built map that passes the checker (maps app).
TOP_PROPOSITIONS_FORMAT = "top50"
TOP_PROPOSITIONS_NAME = "top-50-propositions.tsv"
TOP_PROPOSITIONS_CONTENT_TYPE = "text/tab-separated-values; charset=utf-8"


def ranking_order() -> list[OrderBy | str]:
    """The one definition of the ranking's order, over propositions with their scores joined.

    Compared propositions (in the comparison rounds, with a μ) come first by μ descending,
    then σ ascending; the rest follow by Likert mean descending, unrated last; ties by id."""
    return [*ranking_key(), "pk"]


def ranking_key() -> list[OrderBy]:
    """`ranking_order` without its last resort, the id: propositions equal on all of it are
    tied (same μ and σ, or, outside the comparisons, the same Likert mean or none)."""
    compared = Q(score__in_comparisons=True, score__mu__isnull=False)
    return [
        Case(When(compared, then=Value(0)), default=Value(1)).asc(),
        Case(When(compared, then=F("score__mu"))).desc(nulls_last=True),
        Case(When(compared, then=Coalesce(F("score__sigma"), Value(0.0)))).asc(),
        Case(When(~compared, then=F("score__likert_mean"))).desc(nulls_last=True),
    ]


def ranked_propositions(*, topic: Topic) -> QuerySet[Proposition]:
    """The topic's propositions (traps left out), best first (`ranking_order`), with their
    scores joined: for the exports, the page and the stored ranks."""
    return (
        propositions_for_likert(Proposition.objects.filter(topic=topic, trap_kind=Proposition.TrapKind.NONE))
        .select_related("score")
        .order_by(*ranking_order())
    )


class Tie(NamedTuple):
    """Where a proposition stands among those equal to it on `ranking_key`."""

    rank: int  # the rank the tied propositions share: the best of theirs (1, 2, 2, 4)
    size: int  # how many share it; 1 when the proposition is tied with none


class Place(TypedDict):
    position: int
    tie_rank: int
    tie_size: int


def ranked_with_ties(*, topic: Topic) -> "QuerySet[WithAnnotations[Proposition, Place]]":
    """`ranked_propositions` numbered over the whole topic by the database: `position` (its
    rank, 1, 2, 3, ...), `tie_rank` and `tie_size` (`Tie`). Keep a part by slicing: SQL
    numbers the rows before LIMIT and OFFSET take theirs (a filter would apply before)."""
    return _with_ties(ranked_propositions(topic=topic), within=[])


def campaign_ranked_with_ties(*, campaign: Campaign) -> "QuerySet[WithAnnotations[Proposition, Place]]":
    """`ranked_with_ties` of every topic of the campaign in one query: numbered within each
    topic, topics by key, each best first."""
    propositions = propositions_for_likert(
        Proposition.objects.filter(topic__campaign=campaign, trap_kind=Proposition.TrapKind.NONE)
    )
    propositions = propositions.select_related("score").order_by("topic__key", *ranking_order())
    return _with_ties(propositions, within=[F("topic_id")])


def _with_ties(
    propositions: QuerySet[Proposition], *, within: list[F]
) -> "QuerySet[WithAnnotations[Proposition, Place]]":
    key = ranking_key()
    return propositions.annotate(
        position=Window(RowNumber(), partition_by=within or None, order_by=ranking_order()),
        tie_rank=Window(Rank(), partition_by=within or None, order_by=key),
        tie_size=Window(Count("pk"), partition_by=[*within, *(order.expression for order in key)]),
    )


def ranking_ties(*, topic: Topic, first: int, last: int) -> dict[int, Tie]:
    """The ties of the propositions ranked `first` to `last`, by proposition id: one query."""
    rows = ranked_with_ties(topic=topic)[max(0, first - 1) : max(0, last)]
    return {pk: Tie(rank, size) for pk, rank, size in rows.values_list("pk", "tie_rank", "tie_size")}


def ranking_row(*, topic: Topic, rank: int, proposition: Proposition, tie: Tie | None = None) -> dict:
    """One line of the ranking: the proposition at `rank` with its stored scores, and its
    `tie` (None: tied with none)."""
    # A missing reverse one-to-one raises an AttributeError subclass, so getattr gives None.
    score: PropositionScore | None = getattr(proposition, "score", None)
    mu = score.mu if score is not None and score.in_comparisons else None
    sigma = score.sigma if score is not None and score.in_comparisons else None
    return {
        "topic": topic.key,
        "rank": rank,
        "id": proposition.pk,
        "external_id": proposition.external_id,
        "subject": proposition.subject,
        "relation": proposition.relation,
        "object": proposition.object,
        "likert_mean": _round(score.likert_mean if score else None),
        "likert_n": score.likert_n if score else 0,
        "mu": _round(mu),
        "sigma": _round(sigma),
        "conservative": _round(mu - 3 * sigma if mu is not None and sigma is not None else None),
        "comparisons": score.comparisons if score else 0,
        "in_comparisons": bool(score and score.in_comparisons),
        "tie_rank": tie.rank if tie else rank,
        "tie_size": tie.size if tie else 1,
    }


def ranking_rows(*, topic: Topic, top: int | None = None) -> list[dict]:
    """The ranked propositions of a topic (traps left out), best first, with their ties
    (counted over the whole topic, so a tie that the `top` cut splits says so)."""
    propositions = ranked_with_ties(topic=topic)
    if top is not None:
        propositions = propositions[:top]
    return ranked_rows(topic=topic, propositions=propositions)


def ranked_rows(*, topic: Topic, propositions: "Iterable[WithAnnotations[Proposition, Place]]") -> list[dict]:
    """The ranking's rows of `propositions`, a part of `ranked_with_ties` (a page of it)."""
    return [
        ranking_row(topic=topic, rank=p.position, proposition=p, tie=Tie(p.tie_rank, p.tie_size)) for p in propositions
    ]


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def raw_label_rows(*, topic: Topic) -> Iterator[dict]:
    """Every Likert label and comparison vote of the topic that its channel confirmed
    (`crowd.models.confirmed`); rejected ones are marked excluded, pending ones are left out.
    Read as plain values, a few thousand rows at a time: a topic's labels are the bulk of
    the campaign's download, and a model instance per label, worker and assignment would
    cost most of its time. Both are reached through the topic's tasks (batch → task →
    assignment → label, each by index), as the pipeline reads them: an answer labels only its
    task's propositions, and asked by the proposition's topic the planner joins every label of
    the campaign. `consent_version` is the version of the consent text the answer was given
    under (crowd.sessions.consent.answer_consent_versions), empty without one."""
    labels = LabelRows(
        kept=Q(assignment__task__batch__topic=topic),
        keys={topic.pk: topic.key},
        excluded=excluded_worker_ids(topic.campaign_id),
        consents=answer_consent_versions(topic=topic),
    )
    for _, row in labels.likert():
        yield row
    for _, row in labels.votes():
        yield row


# Rows fetched at a time from a campaign-wide stream (the all-topics zip): a hundred, so the
# memory the zip takes stays about one topic's (tests/ranking/test_bundle.py), not that of a
# chunk spanning several small topics; a FETCH per hundred rows costs little beside them.
CAMPAIGN_CHUNK = 100


def campaign_label_rows(*, campaign: Campaign, topics: Iterable[Topic]) -> "LabelRows":
    """`raw_label_rows` of every topic of the campaign in two queries (Likert labels, votes),
    each ordered by topic key first: `LabelRows.likert()` and `.votes()` give (topic id, row)."""
    return LabelRows(
        kept=Q(assignment__task__batch__topic__campaign=campaign),
        keys={topic.pk: topic.key for topic in topics},
        excluded=excluded_worker_ids(campaign.pk),
        consents=campaign_answer_consent_versions(campaign=campaign),
        by_topic=True,
        chunk_size=CAMPAIGN_CHUNK,
    )


class LabelRows:
    """The export's label rows of the answers `kept` selects, streamed a few thousand at a time."""

    ANSWER = ("assignment__task__batch__topic_id", "worker_id", "worker__external_id", "assignment__assignment_id")
    ORDER = ("assignment__submitted_at", "assignment_id", "id")

    def __init__(
        self,
        *,
        kept: Q,
        keys: dict[int, str],
        excluded: set[int],
        consents: dict[tuple[str, int], str],
        by_topic: bool = False,
        chunk_size: int = 5000,
    ):
        self.kept = confirmed("assignment__") & kept
        self.chunk_size = chunk_size
        self.keys, self.excluded, self.consents = keys, excluded, consents
        self.order = ("assignment__task__batch__topic__key", *self.ORDER) if by_topic else self.ORDER

    def likert(self) -> Iterator[tuple[int, dict]]:
        rows = (
            LikertLabel.objects.filter(self.kept)
            .order_by(*self.order)
            .values_list(
                *self.ANSWER,
                "assignment__submitted_at",
                "assignment__status",
                "proposition_id",
                "score",
                "assignment__shown_order",
            )
        )
        for (
            topic_id,
            worker_id,
            worker,
            assignment,
            submitted_at,
            status,
            proposition_id,
            score,
            shown,
        ) in rows.iterator(chunk_size=self.chunk_size):
            yield (
                topic_id,
                {
                    "kind": "likert",
                    "topic": self.keys[topic_id],
                    "proposition_id": proposition_id,
                    "worker": worker,
                    "assignment": assignment,
                    "submitted_at": submitted_at.isoformat(),
                    "score": score,
                    # The order the worker was shown the task's statements in (their own shuffle), top first.
                    "shown_order": " ".join(map(str, shown)),
                    **self._marks(worker_id, assignment, status),
                },
            )

    def votes(self) -> Iterator[tuple[int, dict]]:
        rows = (
            Comparison.objects.filter(self.kept)
            .order_by(*self.order)
            .values_list(
                *self.ANSWER,
                "assignment__submitted_at",
                "assignment__status",
                "winner_id",
                "loser_id",
                "assignment__untouched",
                "assignment__shown_order",
            )
        )
        for (
            topic_id,
            worker_id,
            worker,
            assignment,
            submitted_at,
            status,
            winner_id,
            loser_id,
            untouched,
            shown,
        ) in rows.iterator(chunk_size=self.chunk_size):
            yield (
                topic_id,
                {
                    "kind": "comparison",
                    "topic": self.keys[topic_id],
                    "winner_id": winner_id,
                    "loser_id": loser_id,
                    "worker": worker,
                    "assignment": assignment,
                    "submitted_at": submitted_at.isoformat(),
                    "untouched": untouched,
                    # The worker's starting order (their own shuffle), top first: ids separated by spaces.
                    "shown_order": " ".join(map(str, shown)),
                    **self._marks(worker_id, assignment, status),
                },
            )

    def _marks(self, worker_id: int, assignment: str, status: str) -> dict:
        return {
            "excluded": worker_id in self.excluded or status == Assignment.Status.REJECTED,
            "consent_version": self.consents.get((assignment, worker_id), ""),
        }


def top_proposition_lines(*, topic: Topic, top: int = 50) -> list[str]:
    """The top propositions' lines: `subject<TAB>relation<TAB>object`, white
    space inside a field (tabs, line breaks) folded into single spaces."""
    return top_proposition_lines_of(ranking_rows(topic=topic, top=top))


def top_proposition_lines_of(rows: Iterable[dict]) -> list[str]:
    """`top_proposition_lines` of ranking rows already read (the top ones)."""

    def clean(text: str) -> str:
        return " ".join(text.split())

    return [f"{clean(row['subject'])}\t{clean(row['relation'])}\t{clean(row['object'])}" for row in rows]


def write_top_propositions(*, topic: Topic, stream: TextSink, top: int = 50) -> int:
    """Write the topic's top propositions (`top_proposition_lines`, each ending in LF); returns the lines written."""
    lines = top_proposition_lines(topic=topic, top=top)
    stream.write("".join(line + "\n" for line in lines))
    return len(lines)


def write_rows(rows: Iterable[dict], fmt: str, stream: TextSink, columns: tuple[str, ...] = RANKING_COLUMNS) -> int:
    """Write rows as CSV, TSV (header first) or JSON Lines; returns the number written.

    CSV is for spreadsheets, so its text cells are neutralised (`config.spreadsheets`); TSV and
    JSON Lines are machine formats and keep the exact text."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
    count = 0
    if fmt == "jsonl":
        for row in rows:
            stream.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
        return count
    if fmt == "csv":
        # Excel's dialect: rows end in CRLF, so a CR or LF inside a cell is quoted, never a new row.
        writer = csv.DictWriter(stream, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow(spreadsheet_record(_blanks(row)))
            count += 1
        return count
    # csv quotes a field holding a tab, a quote or a newline, but not a bare CR when rows end in
    # "\n": a row with one is quoted whole, so the CR stays inside its field.
    plain, quoted = (
        csv.DictWriter(
            stream, fieldnames=columns, delimiter="\t", extrasaction="ignore", lineterminator="\n", quoting=quoting
        )
        for quoting in (csv.QUOTE_MINIMAL, csv.QUOTE_ALL)
    )
    plain.writeheader()
    for row in rows:
        cells = _blanks(row)
        holds_cr = any(isinstance(value, str) and "\r" in value for value in cells.values())
        (quoted if holds_cr else plain).writerow(cells)
        count += 1
    return count


def _blanks(row: dict) -> dict:
    return {key: "" if value is None else value for key, value in row.items()}
