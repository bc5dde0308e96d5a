"""The decisions as a spreadsheet-safe CSV (config.spreadsheets): one row per decided
proposition, removed ones included, with who verified it. Every figure of the filter's
summary can be recomputed from it (tests/annotation/suitability/test_export.py)."""

from collections.abc import Iterator

from annotation.models import Campaign
from annotation.suitability.models import SuitabilityDecision, SuitabilityLabel
from config.spreadsheets import SpreadsheetWriter, TextSink

COLUMNS = (
    "proposition_id",
    "topic",
    "external_id",
    "subject",
    "relation",
    "object",
    "confidence",
    "predicted_suitable",
    "margin",
    "held_out",
    "expert_label",
    "rule",
    "verified_label",
    "verified_by",
    "verified_at",
    "final_suitable",
    "source",
    "removed",
    "applied_at",
    "expert_notes",
)


def _flag(value: bool | None) -> int | str:
    return "" if value is None else int(value)


def decision_rows(campaign: Campaign) -> Iterator[list[object]]:
    decisions = (
        SuitabilityDecision.objects.filter(proposition__topic__campaign=campaign)
        .select_related("proposition__topic", "verified_by")
        .order_by("proposition__topic__key", "proposition_id")
    )
    notes: dict[int, list[str]] = {}
    labels = SuitabilityLabel.objects.filter(study__campaign=campaign).exclude(note="").order_by("proposition_id", "id")
    for pid, note in labels.values_list("proposition_id", "note"):
        notes.setdefault(pid, []).append(note)
    for d in decisions.iterator(chunk_size=2000):
        p = d.proposition
        yield [
            p.pk,
            p.topic.key,
            p.external_id,
            p.subject,
            p.relation,
            p.object,
            "" if p.confidence is None else p.confidence,
            int(d.predicted_suitable),
            d.margin,
            int(d.held_out),
            _flag(d.expert_label),
            d.rule,
            _flag(d.verified_label),
            d.verified_by.get_username() if d.verified_by else "",
            d.verified_at.isoformat() if d.verified_at else "",
            int(d.final_suitable),
            d.source,
            int(d.removed),
            d.applied_at.isoformat() if d.applied_at else "",
            " | ".join(notes.get(p.pk, [])),
        ]


def decisions_csv_write(*, campaign: Campaign, stream: TextSink) -> None:
    writer = SpreadsheetWriter(stream)
    writer.writerow(COLUMNS)
    writer.writerows(decision_rows(campaign))
