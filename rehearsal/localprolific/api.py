"""The researcher API of the local endpoint, under /localprolific/api/v1/ — the subset
crowd/prolific.py uses, with Prolific's paths, JSON shapes, statuses and error codes:

    GET   studies/                       list (paginated)                   studies.list
    POST  studies/                       create a draft -> 201              studies.create
    GET   studies/{id}/                  retrieve                           studies.get
    PATCH studies/{id}/                  update                             studies.update
    POST  studies/{id}/transition/       {"action": PUBLISH|PAUSE|START|STOP} studies.transition
    GET   studies/{id}/submissions/      list (paginated)                   studies.submissions
    GET   submissions/?study={id}        list (paginated)                   submissions.list
    GET   submissions/{id}/              retrieve                           submissions.get
    POST  submissions/{id}/transition/   {"action": APPROVE|REJECT, ...}    submissions.transition
    POST  submissions/bulk-approve/      {"submission_ids": [...]} -> 200   submissions.bulk_approve
    POST  submissions/bonus-payments/    set up a bulk bonus -> 201         bonuses.create
    POST  bulk-bonus-payments/{id}/pay/  pay it -> 202, empty               bonuses.pay
    GET   filters/                       the select filters and their choices filters.list

The filters list is a stand-in: it carries Salience's built-in country and language ids
(crowd.marketplaces.prolific.eligibility), which real Prolific's list replaces in production.

Order of work: the operation (405 for another method); injected faults (faults.py); the
token (`Authorization: Token <token>`, 401 unless it is settings.PROLIFIC_API_TOKEN); the
JSON body; then the handler in one transaction, so a refused call writes nothing. A
`lost_response` fault lets the call take effect and then answers 504.
"""

import hashlib
import hmac
import json
import logging
from functools import wraps

from django.conf import settings
from django.db import transaction
from django.http import HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from crowd.marketplaces.prolific import eligibility

from . import bonuses, faults, study_lifecycle, submissions, wire
from .errors import INTERNAL, LOST_RESPONSE, SERVICE_FAULT, UNAUTHORIZED, ApiError, invalid, throttled
from .models import BonusPayment, Fault, Researcher, Study, Submission

logger = logging.getLogger(__name__)

OPERATIONS = (
    "studies.list",
    "studies.create",
    "studies.get",
    "studies.update",
    "studies.transition",
    "studies.submissions",
    "submissions.list",
    "submissions.get",
    "submissions.transition",
    "submissions.bulk_approve",
    "bonuses.create",
    "bonuses.pay",
    "filters.list",
)


def endpoint(**operations: str):
    """A researcher API view: `operations` maps HTTP methods to operation names."""

    def decorate(handler):
        @csrf_exempt
        @wraps(handler)
        def view(request, **kwargs):
            operation = operations.get(request.method)
            if operation is None:
                return _answer_error(ApiError(405, "Method not allowed", f"{request.method} is not allowed here."))
            try:
                outcome = faults.take(operation)
                if outcome.latency_ms:
                    faults.sleep(outcome.latency_ms)
                if outcome.error == Fault.Kind.THROTTLE:
                    raise throttled(outcome.retry_after)
                if outcome.error == Fault.Kind.SERVICE_FAULT:
                    raise SERVICE_FAULT
                researcher = researcher_for(request.headers.get("Authorization", ""))
                body = _body(request) if request.method in ("POST", "PATCH") else {}
                with transaction.atomic():
                    status, payload = handler(request, researcher=researcher, body=body, now=timezone.now(), **kwargs)
                if outcome.error == Fault.Kind.LOST_RESPONSE:
                    raise LOST_RESPONSE
            except ApiError as exc:
                return _answer_error(exc)
            except Exception:
                logger.exception("localprolific: %s failed", operation)
                return _answer_error(INTERNAL)
            if payload is None:
                return HttpResponse(status=status)
            return JsonResponse(payload, status=status, safe=False)

        return view

    return decorate


def researcher_for(authorization: str) -> Researcher:
    scheme, _, token = authorization.partition(" ")
    expected = settings.PROLIFIC_API_TOKEN
    if scheme != "Token" or not token or not expected or not hmac.compare_digest(token.strip(), expected):
        raise UNAUTHORIZED
    digest = hashlib.sha256(expected.encode()).hexdigest()
    return Researcher.objects.get_or_create(token_digest=digest)[0]


@endpoint(GET="studies.list", POST="studies.create")
def studies_collection(request, *, researcher, body, now):
    if request.method == "POST":
        study = study_lifecycle.study_create(researcher=researcher, data=body, now=now)
        return 201, _study(study)
    items, members = wire.page(request, Study.objects.filter(researcher=researcher))
    results = [wire.study_short_json(s, places_taken=study_lifecycle.places(s)["taken"]) for s in items]
    return 200, {"results": results, **members}


@endpoint(GET="studies.get", PATCH="studies.update")
def study_detail(request, *, researcher, body, now, study_id):
    study = study_lifecycle.study_for(researcher=researcher, study_id=study_id, lock=request.method == "PATCH")
    if request.method == "PATCH":
        study = study_lifecycle.study_update(study=study, data=body)
    return 200, _study(study)


@endpoint(POST="studies.transition")
def study_transition(request, *, researcher, body, now, study_id):
    study = study_lifecycle.study_for(researcher=researcher, study_id=study_id, lock=True)
    return 200, _study(study_lifecycle.study_transition(study=study, action=body.get("action"), now=now))


@endpoint(GET="studies.submissions")
def study_submissions(request, *, researcher, body, now, study_id):
    study = study_lifecycle.study_for(researcher=researcher, study_id=study_id)
    return 200, _submission_page(request, Submission.objects.filter(study=study))


@endpoint(GET="submissions.list")
def submissions_collection(request, *, researcher, body, now):
    rows = Submission.objects.filter(study__researcher=researcher)
    if request.GET.get("study"):
        rows = rows.filter(study__study_id=request.GET["study"])
    return 200, _submission_page(request, rows)


@endpoint(GET="submissions.get")
def submission_detail(request, *, researcher, body, now, submission_id):
    submission = submissions.submission_for(researcher=researcher, submission_id=submission_id)
    paid = list(BonusPayment.objects.filter(submission=submission).order_by("pk").values_list("amount", flat=True))
    return 200, wire.submission_json(submission, bonus_payments=paid)


@endpoint(POST="submissions.transition")
def submission_transition(request, *, researcher, body, now, submission_id):
    submission = submissions.submission_transition(
        researcher=researcher, submission_id=submission_id, data=body, now=now
    )
    return 200, wire.transition_json(submission)


@endpoint(POST="submissions.bulk_approve")
def submissions_bulk_approve(request, *, researcher, body, now):
    """Prolific answers a sentence, not the submissions (api-reference/submissions/bulk-approve-submissions)."""
    submissions.submissions_bulk_approve(researcher=researcher, data=body, now=now)
    return 200, "The request to bulk approve has been made successfully."


@endpoint(POST="bonuses.create")
def bonus_create(request, *, researcher, body, now):
    return 201, bonuses.bulk_bonus_json(bonuses.bulk_bonus_create(researcher=researcher, data=body, now=now))


@endpoint(POST="bonuses.pay")
def bonus_pay(request, *, researcher, body, now, bonus_id):
    bonuses.bulk_bonus_pay(researcher=researcher, bonus_id=bonus_id, now=now)
    return 202, None


@endpoint(GET="filters.list")
def filters_list(request, *, researcher, body, now):
    """Prolific's shape (docs.prolific.com, api-reference/filters/get-filters): select filters
    with their choices, choice id to label."""
    selects = (
        (eligibility.COUNTRY, "Current Country of Residence", eligibility.COUNTRIES),
        (eligibility.FIRST_LANGUAGE, "First language", eligibility.FIRST_LANGUAGES),
    )
    results = [
        {"filter_id": filter_id, "title": title, "type": "select", "data_type": "ChoiceID", "choices": dict(choices)}
        for filter_id, title, choices in selects
    ]
    results += [
        {"filter_id": filter_id, "title": title, "type": "range", "data_type": "integer"}
        for filter_id, title in (
            (eligibility.APPROVAL_RATE, "Approval Rate"),
            (eligibility.PREVIOUS_SUBMISSIONS, "Approvals"),
        )
    ]
    return 200, {"results": results}


def _study(study: Study) -> dict:
    counts = study_lifecycle.places(study)
    return wire.study_json(study, places_taken=counts["taken"], submissions=counts["all"])


def _submission_page(request, rows) -> dict:
    items, members = wire.page(request, rows.select_related("study"))
    return {"results": [wire.submission_short_json(s) for s in items], **members}


def _body(request) -> dict:
    if not request.body.strip():
        return {}
    try:
        value = json.loads(request.body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise invalid(f"JSON parse error - {exc}") from exc
    if not isinstance(value, dict):
        raise invalid("The body must be a JSON object.")
    return value


def _answer_error(exc: ApiError) -> JsonResponse:
    response = JsonResponse(exc.body(), status=exc.http_status)
    for name, value in exc.headers.items():
        response[name] = value
    return response
