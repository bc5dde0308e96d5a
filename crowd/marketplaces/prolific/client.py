"""Prolific's researcher API over HTTP — the only module that talks to Prolific (its wire
shapes are in wire.py).

One client per base URL and token (settings PROLIFIC_API_URL, PROLIFIC_API_TOKEN): in the
`local` environment our Prolific-compatible endpoint (rehearsal/localprolific/), in `production`
https://api.prolific.com/api/v1/. What fails comes out as one of the marketplace errors of
crowd/marketplaces/base.py: `MarketplaceUnavailable` (429, 5xx, no connection, after this client's
own retries with exponential backoff and jitter, honouring Retry-After), `NotFoundAtMarketplace`
(404), `InvalidState` (a transition the object's status does not allow), `MarketplaceError`
with Prolific's own text otherwise. The token goes in a header and nowhere else: never in a
message, a log line or a repr.

Idempotency, call by call:
* `study_create` looks for a study with the spec's `internal_name` first, and again after
  every failed attempt, so a re-run (or a retry after a lost answer) never creates a second
  study. Two processes creating the same study at the same moment can still make two:
  callers serialise per study (the session layer holds a row lock).
* Submission transitions are idempotent at Prolific; study transitions and the places
  update are retried, and a repeat that Prolific refuses is recognised by reading the
  object back (publishing an active study returns it).
* Bonuses: setting up a bulk bonus only records it, so that step is retried; paying is NOT
  idempotent at Prolific (a repeat pays twice), so the pay call is retried only when the
  request was certainly not processed (429, connection refused). Otherwise it raises
  `BonusOutcomeUnknown` naming the bulk bonus id: check the submissions' `bonus_payments`
  before paying again. A caller that calls `bonus_pay` twice pays twice.

Verified in Prolific's documentation (docs.prolific.com, read 2026):
* `Authorization: Token <token>`; errors 400, 401, 404, 405, 422, 429; retry 429 with
  exponential back-off (/documentation/get-started/api-fundamentals,
  /documentation/core-concepts/managing-high-loads).
* POST studies/ creates a draft (UNPUBLISHED); POST studies/{id}/transition/ with
  {"action": "PUBLISH"} publishes (/api-reference/studies/create-study, the study object,
  /documentation/core-concepts/reviewing-submissions-and-rewards). Study statuses UNPUBLISHED,
  PUBLISHING, SCHEDULED, ACTIVE, PAUSED, AWAITING REVIEW, COMPLETED. Field names name,
  internal_name, description, external_study_url with {{%PROLIFIC_PID%}}, {{%STUDY_ID%}},
  {{%SESSION_ID%}}, prolific_id_option (question | url_parameters | not_required),
  completion_codes [{code, code_type (COMPLETED, ...), actions}], total_available_places,
  estimated_completion_time (minutes), reward (cents), device_compatibility, filters.
  GET studies/ answers {"results": [...]}; PATCH studies/{id}/ updates a study.
* GET submissions/{id}/ retrieves one submission (id = the SESSION_ID passed to the study URL)
  with study_id, participant and status (/api-reference/submissions/get-submission).
* GET submissions/?study=ID with page and page_size (default 20); submission fields id,
  participant_id, status, started_at, completed_at, study_code; the session id is the
  submission id. Statuses RESERVED, ACTIVE, TIMED-OUT, AWAITING REVIEW, APPROVED, RETURNED,
  REJECTED, SCREENED OUT (/api-reference/submissions/submission-object, get-submissions).
* POST submissions/bulk-approve/ {"submission_ids": [...]} approves many at once (Prolific
  recommends submission ids over the study-and-participants variant, at most 1,000 a call);
  it answers that the approval is in progress (/api-reference/submissions/bulk-approve-submissions).
  The high-load guide asks for bulk endpoints for payment operations, which contend for the
  workspace's wallet (/documentation/core-concepts/managing-high-loads).
* Submission statuses also include PARTIALLY APPROVED, reached only through a completion code
  set up for it (/api-reference/submissions/transition-submission; studies/count-study-
  submissions-by-status). Salience creates no such code; one set by hand is read as decided.
* POST submissions/{id}/transition/ {"action": "APPROVE" | "REJECT", "message",
  "rejection_category"}: message and category required to reject, the message at least 100
  characters; the call is idempotent (/api-reference/submissions/transition-submission).
* Bonuses: POST submissions/bonus-payments/ {"study_id", "csv_bonuses": "<participant
  or submission id>,<amount in the study currency, e.g. 1.50>\\n..."} answers an id and
  amounts in cents; POST bulk-bonus-payments/{id}/pay/ pays asynchronously and is not
  idempotent (/api-reference/bonuses/create-bonus-payments, pay-bonus-payments).
* Completion redirect https://app.prolific.com/submissions/complete?cc=<code>.
* Platform fee 42.8 % corporate, 33.3 % academic or non-profit, on rewards and bonuses,
  VAT extra where applicable (prolific.com/pricing; researcher-help bonus payments).

Assumed (not found in the documentation; the local endpoint does the same):
* The rejection categories (TOO_QUICKLY, TOO_SLOWLY, FAILED_INSTRUCTIONS,
  INCOMP_LONGITUDINAL, FAILED_CHECK, LOW_EFFORT, MALINGERING, NO_CODE, BAD_CODE, NO_DATA,
  UNSUPP_DEVICE, OTHER) — taken from an open-source Prolific client, not from the docs.
* Study transition actions STOP, PAUSE and START besides PUBLISH; after publishing, only
  `internal_name` and an increase of `total_available_places` may be patched.
* Lists take page and page_size everywhere and carry `_links.next.href` (null on the last
  page); a list without `_links` is read until a short or repeated page.
* The error body is {"error": {"status", "title", "detail"}}; any other body is quoted raw.
* A 429 means the request was not processed (so even a pay call may be repeated after one).
"""

import email.utils
import logging
import random
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from enum import Enum
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

import requests
from django.conf import settings

from config.errors import ApplicationError
from crowd.marketplaces.base import (
    InvalidState,
    MarketplaceError,
    MarketplaceUnavailable,
    NotFoundAtMarketplace,
    OutcomeUnknown,
)
from crowd.marketplaces.prolific.wire import (
    PUBLISHED,
    STOPPED,
    RemoteStudy,
    RemoteSubmission,
    StudySpec,
    SubmissionStatus,
    bonus_csv,
    rejection_check,
    study_body,
    study_from,
    submission_from,
)

logger = logging.getLogger(__name__)

PRODUCTION_API_HOST = "api.prolific.com"
PAGE_SIZE = 100
# Prolific recommends at most 1,000 submission ids per bulk approval (submissions/bulk-approve-submissions).
BULK_APPROVE_MAX = 1000
# Longer than this and the caller's own retry (a Celery task) should take over.
MAX_RETRY_AFTER_SECONDS = 30.0


# ---- Errors of the client ------------------------------------------------------------------


class Unauthorized(MarketplaceError):
    """Prolific refused the API token (401 or 403)."""

    code = "marketplace_unauthorized"


class BonusOutcomeUnknown(OutcomeUnknown):
    """The pay call may or may not have reached Prolific; paying again could pay twice."""

    def __init__(self, message: str, *, bonus_payment_id: str):
        super().__init__(message, marketplace_code="outcome_unknown")
        self.bonus_payment_id = bonus_payment_id


def prolific_client(*, environment: str | None = None, attempts: int = 4) -> "ProlificClient":
    """The client of this deployment (settings PROLIFIC_*). `environment` (a study's own) must
    be the deployment's: a study lives where it was created, and real Prolific is reached
    only from a production deployment. `attempts` is fewer where a person waits for the answer."""
    configured = settings.PROLIFIC_ENVIRONMENT
    if environment is not None and environment != configured:
        raise ApplicationError(
            f"This deployment talks to Prolific {configured}, not {environment} (Prolific has no sandbox; "
            "set PROLIFIC_ENVIRONMENT).",
            code="production_disabled" if environment == "production" else "environment_unavailable",
        )
    host = urlsplit(settings.PROLIFIC_API_URL).hostname or ""
    if host == PRODUCTION_API_HOST and settings.PROLIFIC_ENVIRONMENT != "production":
        raise ApplicationError(
            "This deployment is not configured for Prolific production: PROLIFIC_API_URL points at the real "
            "Prolific but PROLIFIC_ENVIRONMENT is not production.",
            code="production_disabled",
        )
    if not settings.PROLIFIC_API_TOKEN:
        raise ApplicationError(
            "No Prolific API token: set PROLIFIC_API_TOKEN to a token of the workspace (Prolific > API tokens).",
            code="credentials_missing",
        )
    return ProlificClient(base_url=settings.PROLIFIC_API_URL, token=settings.PROLIFIC_API_TOKEN, attempts=attempts)


# ---- Transport -----------------------------------------------------------------------------


class Retry(Enum):
    SAFE = "safe"  # every transient failure: the call is idempotent
    REFUSED_ONLY = "refused_only"  # only when the request was certainly not processed
    NEVER = "never"


class _Transient(Exception):
    """One failed exchange that retrying later may fix."""

    def __init__(self, message: str, *, processed_maybe: bool, retry_after: float | None = None, status: int = 0):
        super().__init__(message)
        self.message = message
        self.processed_maybe = processed_maybe
        self.retry_after = retry_after
        self.status = status

    def retriable(self, retry: Retry) -> bool:
        return retry is Retry.SAFE or (retry is Retry.REFUSED_ONLY and not self.processed_maybe)

    def error(self) -> MarketplaceUnavailable:
        return MarketplaceUnavailable(self.message, marketplace_code=f"http_{self.status}" if self.status else "")


def _wait(seconds: float) -> None:
    """Module level so tests can record the waits instead of sleeping."""
    time.sleep(seconds)


def _retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: a number, or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _error_text(response: requests.Response) -> tuple[str, str]:
    """Prolific's own words for a refusal, and its error code if it sent one."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:500].strip() or response.reason, ""
    error = body.get("error", body) if isinstance(body, dict) else body
    if not isinstance(error, dict):
        return str(error)[:500], ""
    parts = [str(error[key]) for key in ("title", "detail", "additional_information") if error.get(key)]
    code = str(error.get("error_code", ""))
    return ("; ".join(parts) or str(body))[:500], code


# ---- The client ----------------------------------------------------------------------------


class ProlificClient:
    """Prolific's researcher API; one method per operation, plain dataclasses out."""

    def __init__(
        self,
        *,
        base_url: str,
        token: str,
        timeout: float = 10.0,
        attempts: int = 4,
        backoff_seconds: float = 0.5,
        page_size: int = PAGE_SIZE,
    ):
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self.timeout = timeout
        self.attempts = max(1, attempts)
        self.backoff_seconds = backoff_seconds
        self.page_size = page_size
        self._session = requests.Session()
        self._session.headers.update(
            {"Authorization": f"Token {token}", "Accept": "application/json", "Content-Type": "application/json"}
        )

    def __repr__(self) -> str:
        return f"ProlificClient(base_url={self.base_url!r})"

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> "ProlificClient":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- transport

    def _attempt(
        self, method: str, path: str, *, operation: str, json: Any = None, params: dict[str, Any] | None = None
    ) -> Any:
        """One exchange: the decoded JSON answer (None for an empty one), or raise."""
        try:
            response = self._session.request(
                method, urljoin(self.base_url, path), json=json, params=params, timeout=self.timeout
            )
        except requests.ConnectTimeout as exc:
            raise _Transient(
                f"Prolific {operation}: cannot connect ({exc.__class__.__name__}).", processed_maybe=False
            ) from exc
        except requests.ConnectionError as exc:
            refused = "refused" in str(exc).lower()
            raise _Transient(
                f"Prolific {operation}: connection failed ({exc.__class__.__name__}).", processed_maybe=not refused
            ) from exc
        except requests.Timeout as exc:
            raise _Transient(
                f"Prolific {operation}: no answer within {self.timeout:g} s.", processed_maybe=True
            ) from exc
        except (requests.exceptions.ChunkedEncodingError, requests.exceptions.ContentDecodingError) as exc:
            raise _Transient(
                f"Prolific {operation}: the answer broke off ({exc.__class__.__name__}).", processed_maybe=True
            ) from exc
        except requests.RequestException as exc:
            raise MarketplaceError(
                f"Prolific {operation}: the request could not be made ({exc.__class__.__name__}); "
                "check PROLIFIC_API_URL.",
                marketplace_code="request_failed",
            ) from exc
        status = response.status_code
        if status == 429 or status >= 500:
            text, _ = _error_text(response)
            raise _Transient(
                f"Prolific {operation}: HTTP {status} ({text}).",
                processed_maybe=status != 429,
                retry_after=_retry_after(response.headers.get("Retry-After")),
                status=status,
            )
        if status >= 400:
            raise self._refusal(response, operation)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise MarketplaceError(
                f"Prolific {operation}: the answer is not JSON.", marketplace_code="bad_body"
            ) from exc

    def _refusal(self, response: requests.Response, operation: str) -> MarketplaceError:
        text, code = _error_text(response)
        status = response.status_code
        marketplace_code = code or f"http_{status}"
        if status in (401, 403):
            return Unauthorized(
                f"Prolific refused the API token for {operation} (HTTP {status}: {text}). Check PROLIFIC_API_TOKEN "
                "and that the token belongs to this workspace.",
                marketplace_code=marketplace_code,
            )
        if status == 404:
            return NotFoundAtMarketplace(
                f"Prolific {operation}: not found ({text}).", marketplace_code=marketplace_code
            )
        return MarketplaceError(f"Prolific {operation}: {text} (HTTP {status}).", marketplace_code=marketplace_code)

    def _pause(self, attempt: int, failure: _Transient, operation: str) -> None:
        """Wait before the next attempt: Retry-After if given, else exponential backoff with jitter."""
        if failure.retry_after is not None:
            if failure.retry_after > MAX_RETRY_AFTER_SECONDS:
                raise MarketplaceUnavailable(
                    f"{failure.message} Prolific asks to wait {failure.retry_after:.0f} s; try again later.",
                    marketplace_code=f"http_{failure.status}",
                ) from failure
            delay = failure.retry_after
        else:
            delay = self.backoff_seconds * 2 ** (attempt - 1) * random.uniform(0.5, 1.0)
        logger.warning(
            "prolific %s: %s retrying in %.2f s (attempt %d of %d)",
            operation,
            failure.message,
            delay,
            attempt + 1,
            self.attempts,
        )
        _wait(delay)

    def _send(
        self,
        method: str,
        path: str,
        *,
        operation: str,
        json: Any = None,
        params: dict[str, Any] | None = None,
        retry: Retry = Retry.SAFE,
    ) -> Any:
        for attempt in range(1, self.attempts + 1):
            try:
                return self._attempt(method, path, operation=operation, json=json, params=params)
            except _Transient as failure:
                if attempt == self.attempts or not failure.retriable(retry):
                    raise failure.error() from failure
                self._pause(attempt, failure, operation)
        raise AssertionError("unreachable")

    def _pages(self, path: str, *, operation: str, params: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """Every item of a paginated list, each once."""
        seen: set[str] = set()
        page = 1
        while True:
            data = (
                self._send(
                    "GET",
                    path,
                    operation=operation,
                    params={**(params or {}), "page": page, "page_size": self.page_size},
                )
                or {}
            )
            results = data.get("results", [])
            fresh = [item for item in results if item.get("id") not in seen]
            seen.update(item.get("id") for item in fresh)
            yield from fresh
            if "_links" in data:
                if not ((data["_links"] or {}).get("next") or {}).get("href"):
                    return
            elif len(results) < self.page_size or not fresh:
                return
            page += 1

    # -- filters

    def filter_choices(self, filter_ids: tuple[str, ...]) -> dict[str, dict[str, str]]:
        """The choices of select filters as Prolific lists them (GET /api/v1/filters/): for each
        of `filter_ids` that Prolific has, its choice ids (strings) to their labels."""
        found: dict[str, dict[str, str]] = {}
        path: str | None = "filters/"
        for _ in range(50):  # Prolific's list fits in one page; a runaway `next` chain stops here
            if path is None:
                break
            data = self._send("GET", path, operation="list filters") or {}
            for item in data.get("results") or []:
                choices = item.get("choices") if isinstance(item, dict) else None
                if item.get("filter_id") in filter_ids and isinstance(choices, dict):
                    found[item["filter_id"]] = {str(key): str(label) for key, label in choices.items()}
            path = ((data.get("_links") or {}).get("next") or {}).get("href") or None
        return found

    # -- studies

    def reachable_check(self) -> None:
        """The cheapest authenticated read, the first study of the workspace: raises
        MarketplaceUnavailable when Prolific does not answer, Unauthorized for a refused token."""
        self._send("GET", "studies/", operation="reach Prolific", params={"page": 1, "page_size": 1})

    def study_create(self, spec: StudySpec) -> RemoteStudy:
        """A draft study for `spec`; if a study named `spec.internal_name` exists, that one, as it
        is (a changed spec does not update it)."""
        body = study_body(spec)
        existing = self._study_named(spec.internal_name)
        if existing is not None:
            return existing
        for attempt in range(1, self.attempts + 1):
            try:
                return study_from(self._attempt("POST", "studies/", operation="create study", json=body))
            except _Transient as failure:
                if attempt == self.attempts:
                    raise failure.error() from failure
                self._pause(attempt, failure, "create study")
                existing = self._study_named(spec.internal_name)
                if existing is not None:
                    return existing
        raise AssertionError("unreachable")

    def _study_named(self, internal_name: str) -> RemoteStudy | None:
        matches = [
            item
            for item in self._pages("studies/", operation="list studies")
            if item.get("internal_name") == internal_name
        ]
        if not matches:
            return None
        if len(matches) > 1:
            logger.warning("prolific: %d studies are named %r; using the oldest", len(matches), internal_name)
        oldest = min(matches, key=lambda item: (item.get("date_created") or "", item["id"]))
        return self.study_get(oldest["id"])

    def study_get(self, study_id: str) -> RemoteStudy:
        return study_from(self._send("GET", f"studies/{quote(study_id)}/", operation="get study"))

    def studies_list(self) -> list[RemoteStudy]:
        """Every study of the workspace (all pages); list entries may lack some fields."""
        return [study_from(item) for item in self._pages("studies/", operation="list studies")]

    def study_publish(self, study_id: str) -> RemoteStudy:
        """Publish a draft; a study already published (or being published) is returned as it is."""
        return self._study_transition(study_id, action="PUBLISH", done=PUBLISHED)

    def study_stop(self, study_id: str) -> RemoteStudy:
        """Stop recruiting for good; the study goes to AWAITING REVIEW or COMPLETED."""
        return self._study_transition(study_id, action="STOP", done=STOPPED)

    def _study_transition(self, study_id: str, *, action: str, done: tuple[str, ...]) -> RemoteStudy:
        operation = f"{action.lower()} study"
        try:
            data = self._send(
                "POST", f"studies/{quote(study_id)}/transition/", operation=operation, json={"action": action}
            )
        except (NotFoundAtMarketplace, MarketplaceUnavailable, Unauthorized):
            raise
        except MarketplaceError as refused:
            study = self.study_get(study_id)
            if study.status in done:
                return study
            raise InvalidState(
                f"Prolific cannot {action.lower()} study {study_id} in status {study.status}: {refused.message}",
                marketplace_code=refused.marketplace_code,
            ) from refused
        return study_from(data) if data and "id" in data else self.study_get(study_id)

    def study_places_increase(self, study_id: str, total: int) -> RemoteStudy:
        """Raise `total_available_places` to `total` (Prolific never lowers it once published)."""
        try:
            data = self._send(
                "PATCH",
                f"studies/{quote(study_id)}/",
                operation="update study places",
                json={"total_available_places": total},
            )
        except (NotFoundAtMarketplace, MarketplaceUnavailable, Unauthorized):
            raise
        except MarketplaceError as refused:
            study = self.study_get(study_id)
            if study.total_available_places == total:
                return study
            if study.total_available_places > total:
                raise MarketplaceError(
                    f"Study {study_id} has {study.total_available_places} places; Prolific only increases them "
                    f"({refused.message})",
                    marketplace_code=refused.marketplace_code,
                ) from refused
            raise InvalidState(
                f"Prolific did not raise the places of study {study_id} ({study.status}) to {total}: {refused.message}",
                marketplace_code=refused.marketplace_code,
            ) from refused
        return study_from(data)

    # -- submissions

    def submissions_list(self, study_id: str) -> list[RemoteSubmission]:
        items = self._pages("submissions/", operation="list submissions", params={"study": study_id})
        return [submission_from(item, study_id=study_id) for item in items]

    def submission_get(self, submission_id: str) -> RemoteSubmission:
        """One submission (its id is the participant's SESSION_ID); `NotFoundAtMarketplace`
        when Prolific has none of that id in this workspace."""
        data = self._send("GET", f"submissions/{quote(submission_id)}/", operation="get submission")
        return submission_from(data, study_id="")

    def submission_approve(self, submission_id: str) -> RemoteSubmission:
        return self._submission_transition(submission_id, body={"action": "APPROVE"}, done=SubmissionStatus.APPROVED)

    def submission_reject(self, submission_id: str, *, message: str, category: str) -> RemoteSubmission:
        """Reject; `message` (at least 100 characters) is sent to the participant."""
        rejection_check(message=message, category=category)
        body = {"action": "REJECT", "message": message, "rejection_category": category}
        return self._submission_transition(submission_id, body=body, done=SubmissionStatus.REJECTED)

    def submissions_approve(self, submission_ids: list[str]) -> None:
        """Approve many submissions in one call (POST submissions/bulk-approve/ with
        `submission_ids`, the variant Prolific recommends, at most BULK_APPROVE_MAX a call).
        Prolific answers that the approval is in progress, not what it did: the caller reads
        the submissions back at its next sync. Approving an approved submission again is a
        no-op at Prolific, so a lost answer is retried."""
        ids = list(dict.fromkeys(submission_ids))
        for start in range(0, len(ids), BULK_APPROVE_MAX):
            self._send(
                "POST",
                "submissions/bulk-approve/",
                operation="bulk approve submissions",
                json={"submission_ids": ids[start : start + BULK_APPROVE_MAX]},
            )

    def _submission_transition(self, submission_id: str, *, body: dict[str, str], done: str) -> RemoteSubmission:
        operation = f"{body['action'].lower()} submission"
        try:
            data = self._send("POST", f"submissions/{quote(submission_id)}/transition/", operation=operation, json=body)
        except (NotFoundAtMarketplace, MarketplaceUnavailable, Unauthorized):
            raise
        except MarketplaceError as refused:
            current = self.submission_get(submission_id)
            if current.status == done:
                return current
            if current.status != SubmissionStatus.AWAITING_REVIEW:
                raise InvalidState(
                    f"Prolific cannot {body['action'].lower()} submission {submission_id} in status "
                    f"{current.status}: {refused.message}",
                    marketplace_code=refused.marketplace_code,
                ) from refused
            raise
        return submission_from(data, study_id="")

    # -- bonuses

    def bonus_pay(self, *, study_id: str, bonuses: list[tuple[str, Decimal]]) -> str:
        """Set up one bulk bonus (participant or submission id, amount in the study currency)
        and pay it; the bulk bonus id. Not idempotent: see the module docstring."""
        csv = bonus_csv(bonuses)
        data = self._send(
            "POST",
            "submissions/bonus-payments/",
            operation="set up bonuses",
            json={"study_id": study_id, "csv_bonuses": csv},
        )
        bonus_id: str = data["id"]
        try:
            self._send(
                "POST", f"bulk-bonus-payments/{quote(bonus_id)}/pay/", operation="pay bonuses", retry=Retry.REFUSED_ONLY
            )
        except MarketplaceUnavailable as failure:
            if isinstance(failure.__cause__, _Transient) and not failure.__cause__.processed_maybe:
                raise
            raise BonusOutcomeUnknown(
                f"Paying bulk bonus {bonus_id} of study {study_id} may or may not have happened ({failure.message}). "
                "Check the submissions' bonus payments before paying again.",
                bonus_payment_id=bonus_id,
            ) from failure
        return bonus_id

    # -- participants

    def completion_url(self, code: str) -> str:
        """Where our task page sends a participant who has finished."""
        url: str = settings.PROLIFIC_COMPLETION_URL.format(code=quote(code, safe=""))
        return url
