"""Expert labels from a file (TSV or CSV with a header), for `manage.py suitability label`.

Columns: `proposition` (the id) or `external_id`, `suitable` (1/0, yes/no, true/false), and
optionally `reason` (for unsuitable ones) and `note`. One file is one transaction: a problem
on any line (named as file:line, field) writes nothing."""

import csv
from collections.abc import Iterable

from django.db import transaction

from annotation.models import Proposition
from annotation.suitability.models import SuitabilityStudy
from annotation.suitability.studies import label_record
from config.errors import ApplicationError

TRUE = {"1", "yes", "true", "y", "suitable"}
FALSE = {"0", "no", "false", "n", "unsuitable"}


class LabelsFileError(ApplicationError):
    code = "labels_file"


@transaction.atomic
def labels_import(*, study_id: int, expert, lines: Iterable[str], filename: str) -> int:
    """Record every label of the file; the number recorded."""
    study = SuitabilityStudy.objects.select_for_update().select_related("campaign").get(pk=study_id)
    text = list(lines)
    dialect = "excel-tab" if text and "\t" in text[0] else "excel"
    reader = csv.DictReader(text, dialect=dialect)
    fields = set(reader.fieldnames or [])
    if "suitable" not in fields or not fields & {"proposition", "external_id"}:
        raise LabelsFileError(
            f"{filename}:1: the header needs 'suitable' and 'proposition' or 'external_id'; it has {sorted(fields)}."
        )
    by_external = dict(
        Proposition.objects.filter(topic__campaign=study.campaign)
        .exclude(external_id="")
        .values_list("external_id", "pk")
    )
    count = 0
    for line, row in enumerate(reader, start=2):
        where = f"{filename}:{line}"
        pid = _proposition(row, by_external, where)
        value = (row.get("suitable") or "").strip().lower()
        if value not in TRUE | FALSE:
            raise LabelsFileError(f"{where}: field 'suitable' must be 1/0, yes/no or true/false, not {value!r}.")
        try:
            label_record(
                study_id=study.pk,
                proposition_id=pid,
                expert=expert,
                suitable=value in TRUE,
                reason=(row.get("reason") or "").strip(),
                note=(row.get("note") or "").strip(),
            )
        except ApplicationError as error:
            field = error.details.get("field", "") if isinstance(error.details, dict) else ""
            raise LabelsFileError(
                f"{where}: field {field!r}: {error.message}" if field else f"{where}: {error.message}"
            ) from error
        count += 1
    return count


def _proposition(row: dict, by_external: dict[str, int], where: str) -> int:
    raw = (row.get("proposition") or "").strip()
    if raw:
        if not raw.isdigit():
            raise LabelsFileError(f"{where}: field 'proposition' must be a proposition id, not {raw!r}.")
        return int(raw)
    external = (row.get("external_id") or "").strip()
    if external not in by_external:
        raise LabelsFileError(f"{where}: field 'external_id': no proposition of the campaign has the id {external!r}.")
    return by_external[external]
