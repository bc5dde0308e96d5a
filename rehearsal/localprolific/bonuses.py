"""Bulk bonuses: set up (POST submissions/bonus-payments/), then pay (POST
bulk-bonus-payments/{id}/pay/).

`csv_bonuses` holds one `<participant id or submission id>,<amount>` line per bonus, the
amount in the study currency with at most two decimals (1.50 is 1.50, not 150). Every id
must belong to a submission of the study, else 400 naming the wrong ids. The answer gives
`amount`, `fees`, `vat` and `total_amount` in cents; fees are
settings.PROLIFIC_SERVICE_FEE_RATE of each bonus, rounded half up to the cent, and no VAT.
Paying is not idempotent, as at Prolific: every pay call pays every bonus of the bulk
again (recorded as `BonusPayment` rows); Prolific pays asynchronously, the local endpoint at once.
"""

from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import TypedDict

from django.conf import settings
from django.db.models import Q

from .errors import invalid, not_found
from .models import BonusPayment, BulkBonus, Researcher, Submission
from .study_lifecycle import study_for

CENT = Decimal("0.01")


class BonusEntry(TypedDict):
    """One line of `BulkBonus.entries`; `amount` in cents."""

    participant_id: str
    submission_id: str
    amount: int


def bulk_bonus_create(*, researcher: Researcher, data: dict, now: datetime) -> BulkBonus:
    study_id, csv = data.get("study_id"), data.get("csv_bonuses")
    errors: dict[str, list[str]] = {}
    if not isinstance(study_id, str) or not study_id:
        errors["study_id"] = ["This field is required."]
    if not isinstance(csv, str) or not csv.strip():
        errors["csv_bonuses"] = ["This field is required."]
    if errors:
        raise invalid(errors)
    assert isinstance(study_id, str) and isinstance(csv, str), "checked above"
    study = study_for(researcher=researcher, study_id=study_id)
    entries: list[BonusEntry] = []
    problems: list[str] = []
    for number, line in enumerate(csv.splitlines(), start=1):
        if not line.strip():
            continue
        who, _, amount_text = line.partition(",")
        who = who.strip()
        amount = _amount(amount_text.strip())
        if amount is None:
            problems.append(f"Line {number}: {amount_text.strip()!r} is not an amount like 1.50.")
            continue
        submission = Submission.objects.filter(Q(participant_id=who) | Q(submission_id=who), study=study).first()
        if submission is None:
            problems.append(f"Line {number}: {who} has not taken part in study {study_id}.")
            continue
        entries.append(
            {
                "participant_id": submission.participant_id,
                "submission_id": submission.submission_id,
                "amount": int(amount / CENT),
            }
        )
    if problems:
        raise invalid({"csv_bonuses": problems})
    rate = settings.PROLIFIC_SERVICE_FEE_RATE
    total = sum(entry["amount"] for entry in entries)
    fees = sum(int((Decimal(entry["amount"]) * rate).quantize(Decimal(1), rounding=ROUND_HALF_UP)) for entry in entries)
    return BulkBonus.objects.create(
        researcher=researcher, study=study, entries=entries, amount=total, fees=fees, created_at=now
    )


def bulk_bonus_json(bulk: BulkBonus) -> dict:
    return {
        "id": bulk.bonus_id,
        "study": bulk.study.study_id,
        "amount": bulk.amount,
        "fees": bulk.fees,
        "vat": 0,
        "total_amount": bulk.amount + bulk.fees,
    }


def bulk_bonus_pay(*, researcher: Researcher, bonus_id: str, now: datetime) -> BulkBonus:
    try:
        bulk = BulkBonus.objects.select_for_update().get(researcher=researcher, bonus_id=bonus_id)
    except BulkBonus.DoesNotExist:
        raise not_found(f"Bulk bonus payment {bonus_id}") from None
    submissions = {s.submission_id: s for s in bulk.study.submissions.all()}
    BonusPayment.objects.bulk_create(
        BonusPayment(bulk=bulk, submission=submissions[entry["submission_id"]], amount=entry["amount"], paid_at=now)
        for entry in bulk.entries
    )
    bulk.pay_requests += 1
    bulk.save(update_fields=["pay_requests"])
    return bulk


def _amount(text: str) -> Decimal | None:
    try:
        amount = Decimal(text)
    except InvalidOperation:
        return None
    if not amount.is_finite() or amount <= 0 or amount != amount.quantize(CENT):
        return None
    return amount
