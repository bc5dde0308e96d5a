"""JSON shapes of Prolific's objects and list pages, as the local endpoint sends them.

Field names follow docs.prolific.com (the study object, the submission object, list
submissions, transition a submission). A list answers
`{"results": [...], "_links": {"self", "next", "previous", "last": {"href", "title"}},
"meta": {"count": N}}`: `results` is documented, `_links` and `meta` are our reading of
Prolific's answers. Pages are chosen with `page` (from 1) and `page_size` (default 20,
at most 200) and follow the primary key, so rows added between two calls never shift a page.
"""

import math
from datetime import datetime

from django.db.models import QuerySet
from django.http import HttpRequest

from .errors import invalid
from .models import Study, Submission

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 200


def when(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value else None


def study_json(study: Study, *, places_taken: int, submissions: int) -> dict:
    return {
        "id": study.study_id,
        "name": study.name,
        "internal_name": study.internal_name,
        "description": study.description,
        "external_study_url": study.external_study_url,
        "prolific_id_option": study.prolific_id_option,
        "completion_codes": study.completion_codes,
        "total_available_places": study.total_available_places,
        "places_taken": places_taken,
        "number_of_submissions": submissions,
        "estimated_completion_time": study.estimated_completion_time,
        "maximum_allowed_time": study.maximum_allowed_time,
        "reward": study.reward,
        "device_compatibility": study.device_compatibility,
        "peripheral_requirements": study.peripheral_requirements,
        "filters": study.filters,
        "status": study.status,
        "study_type": "SINGLE",
        "date_created": when(study.date_created),
        "published_at": when(study.published_at),
    }


def study_short_json(study: Study, *, places_taken: int) -> dict:
    """A list entry: fewer fields than a retrieved study."""
    return {
        "id": study.study_id,
        "name": study.name,
        "internal_name": study.internal_name,
        "status": study.status,
        "study_type": "SINGLE",
        "total_available_places": study.total_available_places,
        "places_taken": places_taken,
        "reward": study.reward,
        "date_created": when(study.date_created),
        "published_at": when(study.published_at),
    }


def submission_short_json(submission: Submission) -> dict:
    return {
        "id": submission.submission_id,
        "participant_id": submission.participant_id,
        "status": submission.status,
        "started_at": when(submission.started_at),
        "completed_at": when(submission.completed_at),
        "has_siblings": False,
        "study_code": submission.study_code or None,
        "return_requested": None,
        "study_id": submission.study.study_id,
    }


def submission_json(submission: Submission, *, bonus_payments: list[int]) -> dict:
    return {
        "id": submission.submission_id,
        "study_id": submission.study.study_id,
        "participant": submission.participant_id,
        "status": submission.status,
        "started_at": when(submission.started_at),
        "completed_at": when(submission.completed_at),
        "entered_code": submission.study_code or None,
        "is_complete": submission.completed_at is not None,
        "bonus_payments": bonus_payments,
        "return_requested": None,
    }


def transition_json(submission: Submission) -> dict:
    """What POST submissions/{id}/transition/ answers."""
    return {
        "id": submission.submission_id,
        "started_at": when(submission.started_at),
        "status": submission.status,
        "study_id": submission.study.study_id,
        "completed_at": when(submission.completed_at),
        "entered_code": submission.study_code or None,
        "participant": submission.participant_id,
    }


def page(request: HttpRequest, queryset: QuerySet) -> tuple[list, dict]:
    """One page of `queryset` and the `_links` / `meta` members of the answer."""
    number = _positive(request.GET.get("page", "1"), "page")
    size = min(_positive(request.GET.get("page_size", str(DEFAULT_PAGE_SIZE)), "page_size"), MAX_PAGE_SIZE)
    count = queryset.count()
    last = max(1, math.ceil(count / size))
    items = list(queryset.order_by("pk")[(number - 1) * size : number * size])

    def link(target: int | None, title: str) -> dict:
        if target is None:
            return {"href": None, "title": title}
        query = request.GET.copy()
        query["page"] = str(target)
        return {"href": request.build_absolute_uri(f"{request.path}?{query.urlencode()}"), "title": title}

    links = {
        "self": link(number, "Current page"),
        "next": link(number + 1 if number < last else None, "Next page"),
        "previous": link(number - 1 if number > 1 else None, "Previous page"),
        "last": link(last, "Last page"),
    }
    return items, {"_links": links, "meta": {"count": count}}


def _positive(value: str, name: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise invalid({name: ["A whole number of at least 1."]})
    return number
