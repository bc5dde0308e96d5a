"""The small interface every crowd marketplace offers the rest of the app, and the policy
each channel answers for what is specific to it.

Publishing, sync and review speak only this interface; each channel's package
(crowd/marketplaces/<channel>/) implements it — `mturk` for MTurk and the local
MTurk-compatible endpoint (the same wire protocol at another address), `prolific` and
`links` for the session channels — and adds a `ChannelPolicy` (see `ChannelPolicy`): wording,
environments, fees and the unit of payment, switches and checks. The registry
(crowd/marketplaces/registry.py) maps a channel to both; adding a channel touches its
package and the registry only.

Vocabulary: a *work type* is what MTurk calls a HIT type (reward, title, timing,
requirements); a *HIT* is one published task; an *assignment* is one worker's submission.
Every method makes one remote call (or one paginated listing) and raises the errors below;
none touches the database.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from django.conf import settings

from config.errors import ApplicationError

if TYPE_CHECKING:
    from annotation.models import Batch, Campaign
    from crowd.models import WorkSession

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


class OutcomeUnknown(MarketplaceError):
    """The call may or may not have taken effect at the marketplace: neither a refusal nor a
    success, so nothing may be written off or sent again until someone looks."""

    code = "marketplace_outcome_unknown"


class InvalidRemoteAnswer(ApplicationError):
    """The channel's copy of an answer cannot be read as the HIT page's form fields."""

    code = "invalid_remote_answer"


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
    expiration: datetime | None
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

    def assignments_by_hit(self, hit_ids: Sequence[str]) -> dict[str, "list[RemoteAssignment] | MarketplaceError"]:
        """`assignments_list` of each HIT, in as few calls as the channel allows (MTurk: one
        listing per HIT; the session channels: one read for all). A HIT the channel refuses to
        list maps to the error (NotFoundAtMarketplace when unknown there); a transient failure
        (MarketplaceUnavailable) raises."""

    def hits_reviewable(self) -> list[RemoteHIT]:
        """HITs whose work is all in — every slot submitted, or expired with nothing in flight
        (MTurk's ListReviewableHITs, every page): where the channel may hold answers our pages
        never stored. None on the session channels, whose answers reach us first."""

    def assignment_get(self, assignment_id: str) -> RemoteAssignment: ...

    def assignment_approve(self, assignment_id: str, *, feedback: str = "") -> None: ...

    def assignments_approve_all(self, assignment_ids: Sequence[str]) -> dict[str, str] | None:
        """Approve them all at once where the channel can: each one's status there afterwards
        (Approved, or the decision it had already; one the channel does not know is left out).
        None where it cannot (MTurk has no bulk approval): the caller approves each with
        `assignment_approve`, a few at once (crowd.work.calls)."""

    def assignment_reject(self, assignment_id: str, *, feedback: str) -> None:
        """Reject; `feedback` is shown to the worker."""

    def worker_block(self, worker_id: str, *, reason: str) -> None: ...

    def worker_unblock(self, worker_id: str, *, reason: str) -> None:
        """Lift a block; succeeds whether or not the worker was blocked."""

    def bonus_send(self, *, worker_id: str, assignment_id: str, amount: Decimal, reason: str, token: str) -> None:
        """Pay a bonus once per `token`; a repeated token raises DuplicateRequest."""

    def batch_open(self, *, batch: "Batch") -> None:
        """After every task of `batch` has its HIT: whatever the marketplace needs for the
        batch as a whole (a Prolific study). Idempotent; nothing to do on MTurk."""

    def reachable_check(self) -> None:
        """One quick read, no retries, before publishing commits money: raises
        MarketplaceUnavailable within seconds when the marketplace does not answer (and
        MarketplaceError when it refuses the credentials). Nothing to do without a remote."""

    def hit_expire(self, hit_id: str) -> None:
        """Stop offering the HIT now; accepted assignments can still be submitted."""

    def hit_delete(self, hit_id: str) -> None: ...

    def balance(self) -> Decimal: ...


# ---- Money in a channel's own unit -------------------------------------------------------------

CENT = Decimal("0.01")


def fee(amount: Decimal, rate: Decimal, *, minimum: Decimal = Decimal("0.00")) -> Decimal:
    """`rate` of `amount`, rounded half-up to the cent, at least `minimum`."""
    return max(minimum, (amount * rate).quantize(CENT, rounding=ROUND_HALF_UP))


class PaymentUnit(StrEnum):
    """What a channel charges for: one worker's assignment of one HIT (MTurk), one
    participant's submission of a whole session (Prolific), or nothing (participant links)."""

    ASSIGNMENT = "assignment"
    SUBMISSION = "submission"
    NONE = "none"


@dataclass(frozen=True)
class Opening:
    """What opening a batch on a submission channel pays for: `places` submissions at
    `reward` each (a Prolific study's places at the session reward)."""

    places: int
    reward: Decimal


class ChannelPolicy:
    """Everything generic code asks a channel instead of testing `channel == ...`.

    A channel's package subclasses it (crowd/marketplaces/<channel>/policy.py); the registry
    hands out one instance per channel. Defaults describe a channel that pays nobody, has no
    remote environment and hands out single tasks.
    """

    channel: str = ""
    label: str = ""  # the channel's name on every page: "Amazon Mechanical Turk"
    short_name: str = ""  # in sentences: "MTurk"
    unit: PaymentUnit = PaymentUnit.NONE
    sessions: bool = False  # tasks are handed out in sessions of Campaign.tasks_per_session
    # (value, label) of the environments a campaign of this channel may use; the first is the default.
    environments: tuple[tuple[str, str], ...] = (("local", "This server"),)
    fees_wording: str = "no fees: nobody is paid through this channel"
    # The deployment setting that must say "production" before real money moves (None: no money).
    deployment_setting: str | None = None
    # Origins of the worker sites that show our HIT pages in an iframe (CSP frame-ancestors).
    frame_origins: tuple[str, ...] = ()
    # Origins the HIT page's answer form may end up at after posting to the channel (CSP
    # form-action applies to the redirects after a post too).
    form_targets: tuple[str, ...] = ()
    pays_bonuses: bool = False
    # One sentence on how the channel recruits and pays, for the page where a channel is chosen.
    summary: str = ""
    # Said wherever the channel is offered, when it is not open to everyone ("" when it is).
    status_note: str = ""
    # What one published task is called to researchers on this channel, singular and plural.
    task_noun: tuple[str, str] = ("task", "tasks")
    # What one worker's answer to a task is called to researchers ("Answers submitted").
    answer_noun: str = "answers"
    # A HIT page opened without an assignment (a preview): its banner and its disabled button.
    preview_wording: str = "This is the task as participants see it; answers cannot be sent from a preview."
    preview_action: str = "Preview only"
    # What the researcher does once work is published, for the message that says it is out.
    after_publish: str = ""
    # What the publish page's quote binds ("" when nothing beyond it can be committed).
    quote_wording: str = ""
    # Sections of the campaign's channel page that only this channel has ("studies", "links").
    page_sections: tuple[str, ...] = ()
    # The session page's answer to a session its channel has not confirmed.
    session_unconfirmed_wording: str = "This session cannot continue: open the task again from where you found it."
    # What a worker our task page turns away (banned, blocked, excluded) is asked to do.
    turned_away_wording: str = "You can close this page."

    # -- wording and environments

    def environment_label(self, environment: str) -> str:
        return dict(self.environments).get(environment, environment)

    def environment_choose(self, requested: str | None) -> str:
        """The environment a campaign switching to this channel gets for `requested`."""
        values = [value for value, _ in self.environments]
        return requested if requested in values else values[0]

    def environment_check(self, environment: str, *, campaign_slug: str) -> None:
        """Refuse an environment the channel does not have (before anything is written)."""
        values = [value for value, _ in self.environments]
        if environment not in values:
            raise ApplicationError(
                f"{self.label} has no {environment} environment: set the environment of campaign {campaign_slug} "
                f"to one of {', '.join(values)}.",
                code="environment_unavailable",
            )

    def sessions_wording(self, tasks_per_session: int) -> str:
        return f"Sessions have {tasks_per_session} tasks." if self.sessions else ""

    @property
    def offered_label(self) -> str:
        """The channel's name where a researcher chooses it, with its status note."""
        return f"{self.label} ({self.status_note})" if self.status_note else self.label

    def tasks_wording(self, count: int) -> str:
        """ "12 HITs", "1 task": a number of published tasks in the channel's words."""
        return f"{count} {self.task_noun[0] if count == 1 else self.task_noun[1]}"

    def unreachable_wording(self, environment: str) -> str:
        """What to start or check when the marketplace of `environment` does not answer."""
        return f"{self.label} does not answer: check the network and try again."

    # -- money

    currency_symbol: str = "$"  # MTurk pays in US dollars; a channel paying nobody shows 0.00 in them

    def money_wording(self, amount: Decimal | int | str | None) -> str:
        """An amount in the channel's currency, two decimals: "$1.20", "£0.60", "$10,000.00"."""
        return f"{self.currency_symbol}{Decimal(amount or 0).quantize(CENT, rounding=ROUND_HALF_UP):,}"

    def rewards_floor(self, *, campaign: "Campaign") -> Decimal | None:
        """The least task reward the channel accepts for the campaign's sessions (None: no floor)."""
        return None

    def assignment_cost(self, *, reward: Decimal, max_assignments: int) -> Decimal:
        """Reward plus fee for one approved assignment (channels paid per assignment)."""
        return Decimal("0.00")

    def submission_cost(self, *, reward: Decimal) -> Decimal:
        """Reward plus fee for one approved submission (channels paid per submission)."""
        return Decimal("0.00")

    def bonus_cost(self, amount: Decimal) -> Decimal:
        return Decimal("0.00")

    def opening(self, *, batch: "Batch") -> Opening | None:
        """Submissions opening `batch` pays for (submission channels); None otherwise."""
        return None

    def session_completion_url(self, session: "WorkSession") -> str | None:
        """Where a finished session goes to be paid (Prolific's completion URL with the study's
        code); None: the session page thanks the participant itself."""
        return None

    # -- switches and checks

    def production_setting(self) -> str | None:
        """The deployment's own environment setting for this channel (None: no money moves)."""
        return getattr(settings, self.deployment_setting) if self.deployment_setting else None

    def https_required(self, environment: str) -> bool:
        """Whether workers reach our pages from a remote site that accepts only HTTPS."""
        return False

    def publish_check(self, *, campaign: "Campaign", kind: str) -> None:
        """Channel rules a batch of `kind` must meet before anything is committed."""

    def requirements(self, *, campaign: "Campaign") -> tuple[Requirement, ...]:
        """Worker qualifications every HIT of the campaign carries."""
        return ()

    def approval_margin(self) -> timedelta:
        """Approve this long before the channel would approve by itself."""
        return timedelta(0)

    def concurrent_calls(self) -> int:
        """How many of the channel's per-item calls (publishing a HIT, approving an
        assignment) may be in flight at once across the deployment (crowd.work.calls). One
        for a channel whose per-item calls stay on this server."""
        return 1

    # -- the HIT page

    def answer_fields(self, answer: str) -> dict[str, list[str]]:
        """The channel's own copy of an answer (RemoteAssignment.answer_xml) as the fields the
        HIT page would have posted; raises InvalidRemoteAnswer. A channel whose listing holds
        only answers our page stored has no copy of its own: nothing to recover."""
        return {}

    def submit_host(self, environment: str) -> str | None:
        """Where the channel's worker site takes an answer when the page was opened without
        turkSubmitTo; None: nobody waits for the answer but us."""
        return None
