"""The small interface every crowd marketplace offers the rest of the app.

Publishing, sync and review speak only this interface; `crowd/mturk.py` implements it for
MTurk and for the local MTurk-compatible endpoint (the same wire protocol at another
address). A further channel (Prolific, participant links) adds an implementation and a line
in `MARKETPLACES`, without touching annotation/ or ranking/.

Vocabulary: a *work type* is what MTurk calls a HIT type (reward, title, timing,
requirements); a *HIT* is one published task; an *assignment* is one worker's submission.
Every method makes one remote call (or one paginated listing) and raises the errors below;
none touches the database.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Protocol

from annotation.models import Campaign
from config.errors import ApplicationError

# ---- Errors ------------------------------------------------------------------------------


class MarketplaceError(ApplicationError):
    """The marketplace refused a call; `marketplace_code` is its own code (a TurkErrorCode)."""

    code = "marketplace_error"

    def __init__(self, message: str, *, marketplace_code: str = "", code: str | None = None):
        super().__init__(message, code=code)
        self.marketplace_code = marketplace_code


class MarketplaceUnavailable(MarketplaceError):
    """Transient: throttled, a service fault or no connection. Retry later with backoff."""

    code = "marketplace_unavailable"


class InvalidState(MarketplaceError):
    """The HIT or assignment is not in a state that allows the call (already approved, ...)."""

    code = "marketplace_invalid_state"


class NotFoundAtMarketplace(MarketplaceError):
    code = "marketplace_not_found"


class DuplicateRequest(MarketplaceError):
    """A request token was used before: the earlier request took effect."""

    code = "marketplace_duplicate_request"


# ---- What goes in and what comes back ----------------------------------------------------


@dataclass(frozen=True)
class Requirement:
    """A worker qualification: `(type_id, comparator, integers | locales)`, MTurk's vocabulary."""

    type_id: str
    comparator: str
    integers: tuple[int, ...] = ()
    countries: tuple[str, ...] = ()


@dataclass(frozen=True)
class WorkType:
    title: str
    description: str
    keywords: str
    reward: Decimal
    assignment_duration_seconds: int
    auto_approval_delay_seconds: int
    requirements: tuple[Requirement, ...] = ()


@dataclass(frozen=True)
class RemoteHIT:
    hit_id: str
    hit_type_id: str
    status: str  # Assignable | Unassignable | Reviewable | Reviewing | Disposed
    max_assignments: int
    reward: Decimal
    expiration: datetime
    pending: int = 0
    available: int = 0
    completed: int = 0
    annotation: str = ""


@dataclass(frozen=True)
class RemoteAssignment:
    assignment_id: str
    worker_id: str
    hit_id: str
    status: str  # Submitted | Approved | Rejected
    answer_xml: str = ""
    accepted_at: datetime | None = None
    submitted_at: datetime | None = None
    auto_approval_at: datetime | None = None
    deadline: datetime | None = None
    feedback: str = ""


@dataclass(frozen=True)
class Publication:
    """What publishing one task needs besides its work type."""

    url: str  # the worker-facing HIT page
    max_assignments: int
    lifetime_seconds: int
    token: str  # idempotency key: the same token never creates a second HIT
    annotation: str = ""  # visible only to the requester


ASSIGNMENT_STATUSES = ("Submitted", "Approved", "Rejected")


class Marketplace(Protocol):
    environment: str

    def work_type_create(self, work_type: WorkType) -> str:
        """The id of a work type with exactly these properties (created or reused)."""

    def hit_publish(self, *, work_type_id: str, publication: Publication) -> RemoteHIT:
        """Publish one HIT. Idempotent on `publication.token`: a repeat returns the first HIT."""

    def hit_get(self, hit_id: str) -> RemoteHIT: ...

    def assignments_list(self, hit_id: str) -> list[RemoteAssignment]:
        """Every submitted, approved or rejected assignment of the HIT (all pages)."""

    def assignment_get(self, assignment_id: str) -> RemoteAssignment: ...

    def assignment_approve(self, assignment_id: str, *, feedback: str = "") -> None: ...

    def assignment_reject(self, assignment_id: str, *, feedback: str) -> None:
        """Reject; `feedback` is shown to the worker."""

    def worker_block(self, worker_id: str, *, reason: str) -> None: ...

    def worker_unblock(self, worker_id: str, *, reason: str) -> None:
        """Lift a block; succeeds whether or not the worker was blocked."""

    def bonus_send(self, *, worker_id: str, assignment_id: str, amount: Decimal, reason: str, token: str) -> None:
        """Pay a bonus once per `token`; a repeated token raises DuplicateRequest."""

    def batch_open(self, *, batch) -> None:
        """After every task of `batch` has its HIT: whatever the marketplace needs for the
        batch as a whole (a Prolific study). Idempotent; nothing to do on MTurk."""

    def hit_expire(self, hit_id: str) -> None:
        """Stop offering the HIT now; accepted assignments can still be submitted."""

    def hit_delete(self, hit_id: str) -> None: ...

    def balance(self) -> Decimal: ...


# ---- Registry ----------------------------------------------------------------------------


def _mturk(environment: str) -> Marketplace:
    from crowd.mturk import MTurkMarketplace

    return MTurkMarketplace(environment=environment)


def _prolific(environment: str) -> Marketplace:
    from crowd.channels import SessionMarketplace

    return SessionMarketplace(channel=Campaign.Channel.PROLIFIC, environment=environment)


def _links(environment: str) -> Marketplace:
    from crowd.channels import SessionMarketplace

    return SessionMarketplace(channel=Campaign.Channel.LINKS, environment=environment)


MARKETPLACES: dict[str, Callable[[str], Marketplace]] = {
    Campaign.Channel.MTURK: _mturk,
    Campaign.Channel.PROLIFIC: _prolific,
    Campaign.Channel.LINKS: _links,
}


def marketplace_for(*, channel: str, environment: str) -> Marketplace:
    factory = MARKETPLACES.get(channel)
    if factory is None:
        raise ApplicationError(
            f"The {Campaign.Channel(channel).label} channel cannot publish HITs yet.", code="channel_unsupported"
        )
    return factory(environment)


def get_marketplace(campaign: Campaign, *, environment: str | None = None) -> Marketplace:
    """The campaign's marketplace, in `environment` (a HIT's own) or else the campaign's."""
    return marketplace_for(channel=campaign.channel, environment=environment or campaign.mturk_environment)
