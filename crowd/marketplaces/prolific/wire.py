"""Prolific's wire shapes: what goes to its researcher API and what comes back, as plain
dataclasses, with the checks Prolific applies before it accepts a request. No I/O here;
crowd/marketplaces/prolific/client.py sends them. Field names and value sets are documented
in client.py's docstring.
"""

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from config.errors import ApplicationError
from crowd.marketplaces.base import CENT

PARTICIPANT_PLACEHOLDER = "{{%PROLIFIC_PID%}}"
STUDY_PLACEHOLDER = "{{%STUDY_ID%}}"
SESSION_PLACEHOLDER = "{{%SESSION_ID%}}"
DEVICES = ("desktop", "tablet", "mobile")
REJECTION_MESSAGE_MIN_LENGTH = 100
REJECTION_CATEGORIES = (
    "TOO_QUICKLY",
    "TOO_SLOWLY",
    "FAILED_INSTRUCTIONS",
    "INCOMP_LONGITUDINAL",
    "FAILED_CHECK",
    "LOW_EFFORT",
    "MALINGERING",
    "NO_CODE",
    "BAD_CODE",
    "NO_DATA",
    "UNSUPP_DEVICE",
    "OTHER",
)
# Prolific's minimum pay per hour in a workspace's currency (researcher-help, "Prolific's
# payment principles": £6.00 / $8.00), and how amounts in it are written.
MIN_HOURLY = {"GBP": Decimal("6.00"), "USD": Decimal("8.00")}
CURRENCY_SYMBOLS = {"GBP": "£", "USD": "$"}
_COMPLETION_CODE = re.compile(r"^[A-Za-z0-9]{1,64}$")


class StudyStatus:
    UNPUBLISHED = "UNPUBLISHED"
    PUBLISHING = "PUBLISHING"
    SCHEDULED = "SCHEDULED"
    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    AWAITING_REVIEW = "AWAITING REVIEW"
    COMPLETED = "COMPLETED"


class SubmissionStatus:
    RESERVED = "RESERVED"
    ACTIVE = "ACTIVE"
    TIMED_OUT = "TIMED-OUT"
    AWAITING_REVIEW = "AWAITING REVIEW"
    APPROVED = "APPROVED"
    # Paid a share of the reward, through a completion code set up for it (Salience sets none).
    PARTIALLY_APPROVED = "PARTIALLY APPROVED"
    RETURNED = "RETURNED"
    REJECTED = "REJECTED"
    SCREENED_OUT = "SCREENED OUT"


# A place Prolific holds for the participant right now (RESERVED: taken, not yet opened).
IN_PROGRESS = (SubmissionStatus.RESERVED, SubmissionStatus.ACTIVE)
# Decided and paid by Prolific (in full, or a share of the reward).
PAID = (SubmissionStatus.APPROVED, SubmissionStatus.PARTIALLY_APPROVED)
PUBLISHED = (StudyStatus.PUBLISHING, StudyStatus.SCHEDULED, StudyStatus.ACTIVE)
STOPPED = (StudyStatus.AWAITING_REVIEW, StudyStatus.COMPLETED)

# ---- Refused before sending ---------------------------------------------------------------


class RequestInvalid(ApplicationError):
    """Refused before sending: Prolific would refuse it too (a short rejection message, ...)."""

    code = "prolific_request_invalid"


# ---- What goes in and what comes back ----------------------------------------------------


@dataclass(frozen=True)
class StudySpec:
    """A draft study. `filters` are Prolific filter objects ({"filter_id": ..., ...})."""

    name: str
    internal_name: str
    description: str
    external_study_url: str
    total_available_places: int
    reward_cents: int
    estimated_completion_minutes: int
    maximum_allowed_minutes: int
    completion_code: str
    filters: tuple[dict[str, Any], ...] = ()
    device_compatibility: tuple[str, ...] = DEVICES


@dataclass(frozen=True)
class RemoteStudy:
    id: str
    internal_name: str
    status: str  # StudyStatus
    total_available_places: int
    places_taken: int
    reward_cents: int
    external_study_url: str
    completion_code: str


@dataclass(frozen=True)
class RemoteSubmission:
    id: str  # also the participant's SESSION_ID
    participant_id: str
    study_id: str
    status: str  # SubmissionStatus
    started_at: datetime | None
    completed_at: datetime | None
    study_code: str


def study_url(base_url: str) -> str:
    """`base_url` with Prolific's three placeholders appended as PROLIFIC_PID, STUDY_ID, SESSION_ID."""
    separator = "&" if "?" in base_url else "?"
    return (
        f"{base_url}{separator}PROLIFIC_PID={PARTICIPANT_PLACEHOLDER}&STUDY_ID={STUDY_PLACEHOLDER}"
        f"&SESSION_ID={SESSION_PLACEHOLDER}"
    )


# ---- Wire formats --------------------------------------------------------------------------


def rejection_check(*, message: str, category: str) -> None:
    """What Prolific requires of a rejection, checked before sending."""
    if len(message.strip()) < REJECTION_MESSAGE_MIN_LENGTH:
        raise RequestInvalid(
            f"Prolific needs a rejection message of at least {REJECTION_MESSAGE_MIN_LENGTH} characters that tells "
            f"the participant why; this one has {len(message.strip())}."
        )
    if category not in REJECTION_CATEGORIES:
        raise RequestInvalid(
            f"Unknown rejection category {category!r}; Prolific's are {', '.join(REJECTION_CATEGORIES)}."
        )


def bonus_csv(bonuses: list[tuple[str, Decimal]]) -> str:
    """Prolific's csv_bonuses: one `<id>,<amount>` line per participant, amounts like 1.50."""
    if not bonuses:
        raise RequestInvalid("No bonuses to pay.")
    ids = [participant for participant, _ in bonuses]
    repeated = sorted({p for p in ids if ids.count(p) > 1})
    if repeated:
        raise RequestInvalid(f"Pay each participant one bonus per call (sum them): {', '.join(repeated)}.")
    lines = []
    for participant, amount in bonuses:
        if not participant or "," in participant or "\n" in participant:
            raise RequestInvalid(f"Not a participant or submission id: {participant!r}.")
        if amount <= 0 or amount != amount.quantize(CENT):
            raise RequestInvalid(f"A bonus is a positive amount with at most two decimals, not {amount}.")
        lines.append(f"{participant},{amount.quantize(CENT)}\n")
    return "".join(lines)


def study_body(spec: StudySpec) -> dict[str, Any]:
    if PARTICIPANT_PLACEHOLDER not in spec.external_study_url:
        raise RequestInvalid(
            f"The study URL must carry {PARTICIPANT_PLACEHOLDER} so answers can be matched to participants; "
            "build it with crowd.marketplaces.prolific.wire.study_url()."
        )
    if not _COMPLETION_CODE.match(spec.completion_code):
        raise RequestInvalid(f"A completion code is letters and digits only, not {spec.completion_code!r}.")
    unknown = set(spec.device_compatibility) - set(DEVICES)
    if unknown or not spec.device_compatibility:
        raise RequestInvalid(f"Devices are some of {', '.join(DEVICES)}, not {sorted(unknown) or 'none'}.")
    if spec.maximum_allowed_minutes < spec.estimated_completion_minutes:
        raise RequestInvalid("The maximum allowed time cannot be shorter than the estimated completion time.")
    return {
        "name": spec.name,
        "internal_name": spec.internal_name,
        "description": spec.description,
        "external_study_url": spec.external_study_url,
        "prolific_id_option": "url_parameters",
        "completion_codes": [
            {"code": spec.completion_code, "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}
        ],
        "total_available_places": spec.total_available_places,
        "estimated_completion_time": spec.estimated_completion_minutes,
        "maximum_allowed_time": spec.maximum_allowed_minutes,
        "reward": spec.reward_cents,
        "device_compatibility": list(spec.device_compatibility),
        "filters": [dict(item) for item in spec.filters],
    }


def when(value: str | None) -> datetime | None:
    if not value:
        return None
    parsed = datetime.fromisoformat(value)
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def study_from(data: dict[str, Any]) -> RemoteStudy:
    codes = data.get("completion_codes") or []
    completed = [c.get("code", "") for c in codes if c.get("code_type") == "COMPLETED"] or [
        c.get("code", "") for c in codes
    ]
    return RemoteStudy(
        id=data["id"],
        internal_name=data.get("internal_name") or "",
        status=data.get("status", ""),
        total_available_places=int(data.get("total_available_places") or 0),
        places_taken=int(data.get("places_taken") or 0),
        reward_cents=int(data.get("reward") or 0),
        external_study_url=data.get("external_study_url") or "",
        completion_code=completed[0] if completed else "",
    )


def submission_from(data: dict[str, Any], *, study_id: str) -> RemoteSubmission:
    """A list entry, a retrieved submission or a transition answer: their field names differ."""
    return RemoteSubmission(
        id=data["id"],
        participant_id=data.get("participant_id") or data.get("participant") or "",
        study_id=data.get("study_id") or study_id,
        status=data.get("status", ""),
        started_at=when(data.get("started_at")),
        completed_at=when(data.get("completed_at")),
        study_code=data.get("study_code") or data.get("entered_code") or "",
    )
