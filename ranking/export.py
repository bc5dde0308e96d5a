"""Exports: the ranking per topic, the raw labels behind it, and concept-map-ready triples.

Ordering: propositions that went through the comparison rounds by TrueSkill μ (then σ
ascending), followed by the rest by Likert mean. Every number can be recomputed from the
raw labels export (Likert labels and comparison votes with worker, assignment, time and
exclusion flag).
"""

import csv
import json
from collections.abc import Iterable, Iterator

from annotation.models import Proposition, Topic
from config.spreadsheets import TextSink, spreadsheet_record
from crowd.models import Assignment, Comparison, LikertLabel, confirmed
from crowd.qc.worker_quality import excluded_worker_ids
from ranking.models import PropositionScore

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
    "excluded",
)


def _sort_key(score: PropositionScore | None, proposition: Proposition):
    if score is not None and score.in_comparisons and score.mu is not None:
        return (0, -score.mu, score.sigma or 0.0, proposition.pk)
    likert = score.likert_mean if score is not None and score.likert_mean is not None else float("-inf")
    return (1, -likert, 0.0, proposition.pk)


def ranking_rows(*, topic: Topic, top: int | None = None) -> list[dict]:
    """The ranked propositions of a topic (traps left out), best first."""
    propositions = list(
        Proposition.objects.filter(topic=topic, trap_kind=Proposition.TrapKind.NONE).select_related("score")
    )
    # A missing reverse one-to-one raises an AttributeError subclass, so getattr gives None.
    scored = [(getattr(p, "score", None), p) for p in propositions]
    scored.sort(key=lambda pair: _sort_key(*pair))
    rows = []
    for rank, (score, proposition) in enumerate(scored, start=1):
        mu = score.mu if score is not None and score.in_comparisons else None
        sigma = score.sigma if score is not None and score.in_comparisons else None
        rows.append(
            {
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
            }
        )
        if top is not None and rank >= top:
            break
    return rows


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def raw_label_rows(*, topic: Topic) -> Iterator[dict]:
    """Every Likert label and comparison vote of the topic that its channel confirmed
    (`crowd.models.confirmed`); rejected ones are marked excluded, pending ones are left out."""
    excluded = excluded_worker_ids(topic.campaign_id)
    counted = confirmed("assignment__")
    likert = (
        LikertLabel.objects.filter(counted, proposition__topic=topic)
        .select_related("worker", "assignment")
        .order_by("assignment__submitted_at", "assignment_id", "id")
    )
    for label in likert.iterator(chunk_size=2000):
        yield {
            "kind": "likert",
            "topic": topic.key,
            "proposition_id": label.proposition_id,
            "worker": label.worker.external_id,
            "assignment": label.assignment.assignment_id,
            "submitted_at": label.assignment.submitted_at.isoformat(),
            "score": label.score,
            "excluded": label.worker_id in excluded or label.assignment.status == Assignment.Status.REJECTED,
        }
    votes = (
        Comparison.objects.filter(counted, winner__topic=topic)
        .select_related("worker", "assignment")
        .order_by("assignment__submitted_at", "assignment_id", "id")
    )
    for vote in votes.iterator(chunk_size=2000):
        yield {
            "kind": "comparison",
            "topic": topic.key,
            "winner_id": vote.winner_id,
            "loser_id": vote.loser_id,
            "worker": vote.worker.external_id,
            "assignment": vote.assignment.assignment_id,
            "submitted_at": vote.assignment.submitted_at.isoformat(),
            "untouched": vote.assignment.untouched,
            "excluded": vote.worker_id in excluded or vote.assignment.status == Assignment.Status.REJECTED,
        }


def concept_map_lines(*, topic: Topic, top: int = 50) -> list[str]:
    """`subject<TAB>relation<TAB>object` for the top propositions, tabs inside fields folded."""

    def clean(text: str) -> str:
        return " ".join(text.split())

    return [
        f"{clean(row['subject'])}\t{clean(row['relation'])}\t{clean(row['object'])}"
        for row in ranking_rows(topic=topic, top=top)
    ]


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
