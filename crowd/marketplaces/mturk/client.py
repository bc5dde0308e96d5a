"""MTurk through boto3 — the only module that imports boto3 or botocore.

One client per environment: `local` (our MTurk-compatible endpoint, settings
MTURK_LOCAL_ENDPOINT_URL, dummy credentials), `sandbox` and `production` (AWS credentials
from the usual boto3 sources: environment, AWS_PROFILE, instance role). Region us-east-1,
botocore standard retries with backoff for throttling and 5xx (reference §1.5); what still
fails comes out as one of the marketplace errors, `MarketplaceUnavailable` when retrying
later can help. A production client exists only when settings.MTURK_ENVIRONMENT says
production, so no code path can spend real money on a development or sandbox deployment.
"""

import functools
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from xml.sax.saxutils import escape

import boto3
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    HTTPClientError,
    NoCredentialsError,
)
from botocore.exceptions import (
    ConnectionError as BotoConnectionError,
)
from django.conf import settings

from annotation.models import Batch, Campaign
from config.errors import ApplicationError
from crowd.marketplaces.base import (
    ASSIGNMENT_STATUSES,
    CENT,
    DuplicateRequest,
    InvalidState,
    MarketplaceError,
    MarketplaceUnavailable,
    NotFoundAtMarketplace,
    Publication,
    RemoteAssignment,
    RemoteHIT,
    Requirement,
    WorkType,
)

Environment = Campaign.Environment
REGION = "us-east-1"
ENDPOINTS: dict[str, str] = {
    Environment.SANDBOX: "https://mturk-requester-sandbox.us-east-1.amazonaws.com",
    Environment.PRODUCTION: "https://mturk-requester.us-east-1.amazonaws.com",
}
# botocore's `max_attempts` counts retries after the first try (reference §1.5); mephisto uses 10.
MAX_ATTEMPTS = 10
# A read a page waits for (the dashboard's balance): one retry and short timeouts, so an
# unreachable or throttling endpoint makes the figure "unavailable" in seconds, not minutes.
QUICK_ATTEMPTS = 1
QUICK_TIMEOUTS = (3, 5)  # connect, read, seconds
PATIENT_TIMEOUTS = (10, 60)
# A fixed User-Agent: by default botocore rebuilds its own (SDK, OS, Python, feature and
# config metadata, each component sanitised) for every request, about a tenth of a call's
# client CPU (benchmarks/README.md, "The loop's CPU"); `Config(user_agent=...)` is botocore's
# own switch for one given string, sent as is.
USER_AGENT = f"Salience Boto3/{boto3.__version__}"  # boto3 adds Botocore/<version>
# The local endpoint identifies the requester by access key and does not check signatures.
LOCAL_ACCESS_KEY = "SALIENCELOCAL"
LOCAL_SECRET_KEY = "salience-local-secret"
PAGE_SIZE = 100
# ListReviewableHITs: HITs with every slot in, or expired with nothing in flight (reference §6).
REVIEWABLE = "Reviewable"

EXTERNAL_QUESTION_NS = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd"
)
# Hides the HIT from workers who do not qualify, instead of showing one they cannot accept.
ACTIONS_GUARDED = "DiscoverPreviewAndAccept"

HIT_ALREADY_EXISTS = "AWS.MechanicalTurk.HitAlreadyExists"
TRANSIENT_CODES = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "SlowDown",
        "ServiceFault",
    }
)
INVALID_STATE_CODES = frozenset({"AWS.MechanicalTurk.InvalidAssignmentState", "AWS.MechanicalTurk.InvalidHITState"})
NOT_FOUND_CODES = frozenset({"AWS.MechanicalTurk.HITDoesNotExist", "AWS.MechanicalTurk.AssignmentDoesNotExist"})
# The code of a repeated SendBonus token is unverified for real MTurk; the local endpoint uses this one.
DUPLICATE_CODES = frozenset({"AWS.MechanicalTurk.DuplicateRequest"})
# A HIT id inside an error message: upper-case letters and digits, not only digits
# (the message also ends with an epoch-millisecond stamp).
_ENTITY_ID = re.compile(r"\b(?=[A-Z0-9]*[A-Z])[A-Z0-9]{20,64}\b")


# ---- Clients -----------------------------------------------------------------------------


def endpoint_url(environment: str) -> str:
    if environment == Environment.LOCAL:
        local_url: str = settings.MTURK_LOCAL_ENDPOINT_URL
        return local_url
    if environment in ENDPOINTS:
        return ENDPOINTS[environment]
    raise ApplicationError(f"Unknown MTurk environment {environment!r}.", code="unknown_environment")


def client_create(environment: str, *, quick: bool = False) -> Any:
    """The boto3 MTurk client of `environment` (cached per endpoint and retry setting);
    `quick` for reads a person waits for (QUICK_ATTEMPTS, QUICK_TIMEOUTS)."""
    if environment == Environment.PRODUCTION and settings.MTURK_ENVIRONMENT != Environment.PRODUCTION:
        raise ApplicationError(
            "This deployment is not configured for MTurk production: set MTURK_ENVIRONMENT=production.",
            code="production_disabled",
        )
    if quick:
        return _client(environment, endpoint_url(environment), QUICK_ATTEMPTS, QUICK_TIMEOUTS)
    return _client(environment, endpoint_url(environment), MAX_ATTEMPTS, PATIENT_TIMEOUTS)


@functools.cache
def _client(environment: str, url: str, max_attempts: int, timeouts: tuple[int, int]) -> Any:
    credentials = {}
    if environment == Environment.LOCAL:
        credentials = {"aws_access_key_id": LOCAL_ACCESS_KEY, "aws_secret_access_key": LOCAL_SECRET_KEY}
    return boto3.client(
        "mturk",
        region_name=REGION,
        endpoint_url=url,
        config=Config(
            retries={"mode": "standard", "max_attempts": max_attempts},
            connect_timeout=timeouts[0],
            read_timeout=timeouts[1],
            user_agent=USER_AGENT,
        ),
        **credentials,
    )


# ---- Wire formats ------------------------------------------------------------------------


def external_question(url: str) -> str:
    """ExternalQuestion XML (reference §3.2); FrameHeight 0 lets the frame fit the window."""
    return (
        f'<ExternalQuestion xmlns="{EXTERNAL_QUESTION_NS}">'
        f"<ExternalURL>{escape(url)}</ExternalURL><FrameHeight>0</FrameHeight></ExternalQuestion>"
    )


def amount_text(amount: Decimal) -> str:
    """A CurrencyAmount: dollars with exactly two decimals, never a float."""
    if amount != amount.quantize(CENT):
        raise ValueError(f"{amount} has more than two decimal places")
    return f"{amount.quantize(CENT)}"


def requirement_wire(requirement: Requirement) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "QualificationTypeId": requirement.type_id,
        "Comparator": requirement.comparator,
        "ActionsGuarded": ACTIONS_GUARDED,
    }
    if requirement.integers:
        wire["IntegerValues"] = list(requirement.integers)
    if requirement.countries:
        wire["LocaleValues"] = [{"Country": country} for country in requirement.countries]
    return wire


def _utc(value: datetime | None) -> datetime | None:
    return value.astimezone(UTC) if value is not None else None


def _hit_from(data: dict[str, Any]) -> RemoteHIT:
    return RemoteHIT(
        hit_id=data["HITId"],
        hit_type_id=data.get("HITTypeId", ""),
        status=data.get("HITStatus", ""),
        max_assignments=data.get("MaxAssignments", 1),
        reward=Decimal(data.get("Reward", "0")),
        expiration=_utc(data["Expiration"]),
        pending=data.get("NumberOfAssignmentsPending", 0),
        available=data.get("NumberOfAssignmentsAvailable", 0),
        completed=data.get("NumberOfAssignmentsCompleted", 0),
        annotation=data.get("RequesterAnnotation", ""),
    )


def _assignment_from(data: dict[str, Any]) -> RemoteAssignment:
    return RemoteAssignment(
        assignment_id=data["AssignmentId"],
        worker_id=data["WorkerId"],
        hit_id=data["HITId"],
        status=data["AssignmentStatus"],
        answer_xml=data.get("Answer", ""),
        accepted_at=_utc(data.get("AcceptTime")),
        submitted_at=_utc(data.get("SubmitTime")),
        auto_approval_at=_utc(data.get("AutoApprovalTime")),
        deadline=_utc(data.get("Deadline")),
        feedback=data.get("RequesterFeedback", ""),
    )


def _error(exc: ClientError, operation: str) -> MarketplaceError:
    """Our error for a failed call: transient ones are MarketplaceUnavailable."""
    code = exc.response.get("Error", {}).get("Code", "")
    turk_code = exc.response.get("TurkErrorCode", "") or code
    message = exc.response.get("Error", {}).get("Message", "") or str(exc)
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
    text = f"MTurk {operation}: {message}"
    if code in TRANSIENT_CODES or status >= 500:
        return MarketplaceUnavailable(text, marketplace_code=turk_code)
    if turk_code in INVALID_STATE_CODES:
        return InvalidState(text, marketplace_code=turk_code)
    if turk_code in NOT_FOUND_CODES:
        return NotFoundAtMarketplace(text, marketplace_code=turk_code)
    if turk_code in DUPLICATE_CODES:
        return DuplicateRequest(text, marketplace_code=turk_code)
    if turk_code == "AWS.AccountNotLinked":
        text += " (link this AWS account to your MTurk requester account for this environment)"
    return MarketplaceError(text, marketplace_code=turk_code)


# ---- The marketplace ---------------------------------------------------------------------


class MTurkMarketplace:
    """crowd.marketplaces.base.Marketplace for MTurk and the local endpoint; one method per operation."""

    def __init__(self, *, environment: str):
        self.environment = environment
        self.client = client_create(environment)

    def _call(self, operation: str, *, client: Any = None, **params: Any) -> dict[str, Any]:
        try:
            response: dict[str, Any] = getattr(client or self.client, operation)(**params)
            return response
        except ClientError as exc:
            raise _error(exc, operation) from exc
        except (BotoConnectionError, HTTPClientError) as exc:
            raise MarketplaceUnavailable(f"MTurk {operation}: {exc}") from exc
        except NoCredentialsError as exc:
            raise MarketplaceError(
                f"No AWS credentials for MTurk {self.environment}: set AWS_PROFILE or AWS_ACCESS_KEY_ID.",
                code="credentials_missing",
            ) from exc

    def _pages(self, operation: str, key: str, **params: Any) -> Iterator[dict[str, Any]]:
        pages = self.client.get_paginator(operation).paginate(**params, PaginationConfig={"PageSize": PAGE_SIZE})
        try:
            for page in pages:
                yield from page[key]
        except ClientError as exc:
            raise _error(exc, operation) from exc
        except (BotoConnectionError, HTTPClientError) as exc:
            raise MarketplaceUnavailable(f"MTurk {operation}: {exc}") from exc

    def work_type_create(self, work_type: WorkType) -> str:
        params: dict[str, Any] = {
            "Title": work_type.title,
            "Description": work_type.description,
            "Reward": amount_text(work_type.reward),
            "AssignmentDurationInSeconds": work_type.assignment_duration_seconds,
            "AutoApprovalDelayInSeconds": work_type.auto_approval_delay_seconds,
            "Keywords": work_type.keywords,
        }
        if work_type.requirements:
            params["QualificationRequirements"] = [requirement_wire(r) for r in work_type.requirements]
        work_type_id: str = self._call("create_hit_type", **params)["HITTypeId"]
        return work_type_id

    def hit_publish(self, *, work_type_id: str, publication: Publication) -> RemoteHIT:
        params = {
            "HITTypeId": work_type_id,
            "MaxAssignments": publication.max_assignments,
            "LifetimeInSeconds": publication.lifetime_seconds,
            "Question": external_question(publication.url),
            "UniqueRequestToken": publication.token,
        }
        if publication.annotation:
            params["RequesterAnnotation"] = publication.annotation[:255]
        try:
            return _hit_from(self._call("create_hit_with_hit_type", **params)["HIT"])
        except MarketplaceError as error:
            if error.marketplace_code != HIT_ALREADY_EXISTS:
                raise
            return self._hit_recover(message=error.message, url=publication.url)

    def _hit_recover(self, *, message: str, url: str) -> RemoteHIT:
        """The HIT an earlier call created with the same token: named in the message, or found by URL."""
        wanted = f"<ExternalURL>{escape(url)}</ExternalURL>"
        for candidate in _ENTITY_ID.findall(message):
            try:
                data = self._call("get_hit", HITId=candidate)["HIT"]
            except NotFoundAtMarketplace:
                continue
            if wanted in data.get("Question", ""):
                return _hit_from(data)
        for data in self._pages("list_hits", "HITs"):
            if wanted in data.get("Question", ""):
                return _hit_from(data)
        raise MarketplaceError(
            f"MTurk says a HIT for {url} exists already, but it cannot be found: {message}",
            marketplace_code=HIT_ALREADY_EXISTS,
        )

    def hit_get(self, hit_id: str) -> RemoteHIT:
        return _hit_from(self._call("get_hit", HITId=hit_id)["HIT"])

    def assignments_list(self, hit_id: str) -> list[RemoteAssignment]:
        pages = self._pages(
            "list_assignments_for_hit", "Assignments", HITId=hit_id, AssignmentStatuses=list(ASSIGNMENT_STATUSES)
        )
        return [_assignment_from(data) for data in pages]

    def assignments_by_hit(self, hit_ids: Sequence[str]) -> dict[str, list[RemoteAssignment] | MarketplaceError]:
        """One ListAssignmentsForHIT per HIT: MTurk lists assignments of one HIT at a time."""
        listed: dict[str, list[RemoteAssignment] | MarketplaceError] = {}
        for hit_id in hit_ids:
            try:
                listed[hit_id] = self.assignments_list(hit_id)
            except MarketplaceUnavailable:
                raise
            except MarketplaceError as refused:
                listed[hit_id] = refused
        return listed

    def hits_reviewable(self) -> list[RemoteHIT]:
        pages = self._pages("list_reviewable_hits", "HITs", Status=REVIEWABLE)
        return [_hit_from(data) for data in pages]

    def assignment_get(self, assignment_id: str) -> RemoteAssignment:
        return _assignment_from(self._call("get_assignment", AssignmentId=assignment_id)["Assignment"])

    def assignment_approve(self, assignment_id: str, *, feedback: str = "") -> None:
        params = {"AssignmentId": assignment_id}
        if feedback:
            params["RequesterFeedback"] = feedback
        self._call("approve_assignment", **params)

    def assignments_approve_all(self, assignment_ids: Sequence[str]) -> None:
        """MTurk approves one assignment per ApproveAssignment."""
        return None

    def assignment_reject(self, assignment_id: str, *, feedback: str) -> None:
        self._call("reject_assignment", AssignmentId=assignment_id, RequesterFeedback=feedback)

    def worker_block(self, worker_id: str, *, reason: str) -> None:
        self._call("create_worker_block", WorkerId=worker_id, Reason=reason)

    def worker_unblock(self, worker_id: str, *, reason: str) -> None:
        self._call("delete_worker_block", WorkerId=worker_id, Reason=reason)

    def bonus_send(self, *, worker_id: str, assignment_id: str, amount: Decimal, reason: str, token: str) -> None:
        self._call(
            "send_bonus",
            WorkerId=worker_id,
            AssignmentId=assignment_id,
            BonusAmount=amount_text(amount),
            Reason=reason,
            UniqueRequestToken=token,
        )

    def batch_open(self, *, batch: Batch) -> None:
        """Nothing: on MTurk the batch is just its HITs."""

    def reachable_check(self) -> None:
        """GetAccountBalance with the quick client: one try, short timeouts. It needs the
        credentials too, so a missing or unlinked account is said before anything is committed."""
        self._call("get_account_balance", client=client_create(self.environment, quick=True))

    def hit_expire(self, hit_id: str) -> None:
        self._call("update_expiration_for_hit", HITId=hit_id, ExpireAt=datetime.now(UTC))

    def hit_delete(self, hit_id: str) -> None:
        self._call("delete_hit", HITId=hit_id)

    def balance(self) -> Decimal:
        """Read with the quick client: a page shows it."""
        quick = client_create(self.environment, quick=True)
        return Decimal(self._call("get_account_balance", client=quick)["AvailableBalance"])
