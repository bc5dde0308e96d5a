"""Studies: validation, creation, updates and the status lifecycle of the local endpoint.

    UNPUBLISHED --PUBLISH--> ACTIVE --PAUSE--> PAUSED --START--> ACTIVE
    ACTIVE | PAUSED | AWAITING REVIEW --STOP--> AWAITING REVIEW (work to review) | COMPLETED (final)

and, by themselves (`study_refresh`, after every submission change):

* every place taken and nobody still working: AWAITING REVIEW; every place approved: COMPLETED;
* a place freed (a return, a rejection) in a full study awaiting review: PAUSED, as
  Prolific pauses it, until the researcher starts or stops it;
* more places (PATCH) on a study that is awaiting review or completed, not stopped: ACTIVE.

Publishing is immediate here (Prolific passes through PUBLISHING); nothing is scheduled.
After publishing only `internal_name` and a larger `total_available_places` can be patched.
Required fields and value sets follow docs.prolific.com; the minimum reward (Prolific's
published £6.00 / $8.00 an hour, in the workspace currency, settings.PROLIFIC_CURRENCY) is
checked when a study is created or its reward or time changes. Every function here runs inside the caller's
transaction and locks the study it changes.
"""

from datetime import datetime
from decimal import Decimal
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Count, Q

from crowd.marketplaces.prolific.wire import MIN_HOURLY

from .errors import invalid, not_allowed_now, not_found
from .models import Researcher, Study, Submission

Status = Study.Status
PROLIFIC_ID_OPTIONS = ("question", "url_parameters", "not_required")
CODE_TYPES = (
    "COMPLETED",
    "FAILED_ATTENTION_CHECK",
    "FOLLOW_UP_STUDY",
    "GIVE_BONUS",
    "INCOMPATIBLE_DEVICE",
    "NO_CONSENT",
    "OTHER",
    "FIXED_SCREENOUT",
)
CODE_ACTIONS = ("MANUALLY_REVIEW", "AUTOMATICALLY_APPROVE")  # the subset the local endpoint carries out
DEVICES = ("desktop", "tablet", "mobile")
PARTICIPANT_PLACEHOLDER = "{{%PROLIFIC_PID%}}"
MAX_NAME_LENGTH = 255  # our column sizes; Prolific's own limits are not documented
MAX_CODE_LENGTH = 64
EDITABLE_AFTER_PUBLISHING = ("internal_name", "total_available_places")
FIELDS = (
    "name",
    "internal_name",
    "description",
    "external_study_url",
    "prolific_id_option",
    "completion_codes",
    "total_available_places",
    "estimated_completion_time",
    "maximum_allowed_time",
    "reward",
    "device_compatibility",
    "peripheral_requirements",
    "filters",
)
REQUIRED = (
    "name",
    "description",
    "external_study_url",
    "prolific_id_option",
    "completion_codes",
    "total_available_places",
    "estimated_completion_time",
    "reward",
)


def study_for(*, researcher: Researcher, study_id: str, lock: bool = False) -> Study:
    studies = Study.objects.select_for_update() if lock else Study.objects
    try:
        return studies.get(researcher=researcher, study_id=study_id)
    except Study.DoesNotExist:
        raise not_found(f"Study {study_id}") from None


def study_create(*, researcher: Researcher, data: dict, now: datetime) -> Study:
    if "access_details" in data:
        raise invalid({"access_details": ["Taskflow studies are not supported by the local endpoint."]})
    missing = {name: ["This field is required."] for name in REQUIRED if data.get(name) in (None, "", [])}
    if missing:
        raise invalid(missing)
    fields = _fields_check({name: data[name] for name in FIELDS if name in data})
    fields.setdefault("device_compatibility", list(DEVICES))
    study = Study(researcher=researcher, date_created=now, **fields)
    _consistency_check(study)
    study.save()
    return study


def study_update(*, study: Study, data: dict) -> Study:
    """PATCH: any field of a draft; of a published study only its internal name and more places."""
    unknown = set(data) - set(FIELDS)
    if unknown:
        raise invalid({name: ["Unknown or read-only field."] for name in sorted(unknown)})
    if study.status != Status.UNPUBLISHED:
        frozen = set(data) - set(EDITABLE_AFTER_PUBLISHING)
        if frozen:
            raise invalid({name: ["Cannot be changed once the study is published."] for name in sorted(frozen)})
    fields = _fields_check(data)
    places = fields.get("total_available_places")
    if places is not None and study.status != Status.UNPUBLISHED:
        if places < study.total_available_places:
            raise invalid(
                {
                    "total_available_places": [
                        f"Places can only be increased once published (now {study.total_available_places})."
                    ]
                }
            )
        if study.stopped and places != study.total_available_places:
            raise not_allowed_now(f"Study {study.study_id} was stopped; stopping is final.")
        if places > study.total_available_places and study.status in (Status.AWAITING_REVIEW, Status.COMPLETED):
            study.status = Status.ACTIVE
    for name, value in fields.items():
        setattr(study, name, value)
    _consistency_check(study)
    study.save()
    return study


def study_transition(*, study: Study, action: str, now: datetime) -> Study:
    allowed = {
        "PUBLISH": (Status.UNPUBLISHED,),
        "PAUSE": (Status.ACTIVE,),
        "START": (Status.PAUSED,),
        "STOP": (Status.ACTIVE, Status.PAUSED, Status.AWAITING_REVIEW),
    }
    if action not in allowed:
        raise invalid({"action": [f"One of {', '.join(allowed)}."]})
    if study.status not in allowed[action] or study.stopped:
        raise not_allowed_now(
            f"A study in status {study.status} cannot {action.lower()}{' (it was stopped)' if study.stopped else ''}."
        )
    if action == "PUBLISH":
        study.status, study.published_at = Status.ACTIVE, now
    elif action == "PAUSE":
        study.status = Status.PAUSED
    elif action == "START":
        study.status = Status.ACTIVE
    else:
        study.stopped = True
    study.save(update_fields=["status", "published_at", "stopped"])
    study_refresh(study=study)
    return study


def study_refresh(*, study: Study) -> None:
    """Derive the status of a published study (locked by the caller) from its submissions."""
    if study.status in (Status.UNPUBLISHED, Status.PUBLISHING, Status.SCHEDULED):
        return
    counts = places(study)
    working, waiting, approved = counts["working"], counts["waiting"], counts["approved"]
    status = study.status
    if study.stopped:
        status = Status.AWAITING_REVIEW if working or waiting else Status.COMPLETED
    elif counts["taken"] >= study.total_available_places:
        if not working:
            status = Status.COMPLETED if approved >= study.total_available_places else Status.AWAITING_REVIEW
    elif status in (Status.AWAITING_REVIEW, Status.COMPLETED):
        status = Status.PAUSED
    if status != study.status:
        study.status = status
        study.save(update_fields=["status"])


def places(study: Study) -> dict:
    S = Submission.Status
    return study.submissions.aggregate(
        taken=Count("pk", filter=Q(status__in=Submission.HOLDING)),
        working=Count("pk", filter=Q(status__in=(S.RESERVED, S.ACTIVE))),
        waiting=Count("pk", filter=Q(status=S.AWAITING_REVIEW)),
        approved=Count("pk", filter=Q(status__in=Submission.PAID)),
        all=Count("pk"),
    )


def _fields_check(fields: dict) -> dict:
    """The fields with their values checked; 400 listing every bad one."""
    errors: dict[str, list[str]] = {}

    def bad(name: str, message: str) -> None:
        errors.setdefault(name, []).append(message)

    for name in ("name", "internal_name", "description", "external_study_url", "prolific_id_option"):
        if name in fields and not isinstance(fields[name], str):
            bad(name, "A string.")
    for name in ("total_available_places", "estimated_completion_time", "reward", "maximum_allowed_time"):
        value = fields.get(name)
        if name in fields and not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
            bad(name, "A whole number of at least 1.")
    if isinstance(fields.get("name"), str) and not fields["name"].strip():
        bad("name", "This field may not be blank.")
    for name in ("name", "internal_name"):
        if isinstance(fields.get(name), str) and len(fields[name]) > MAX_NAME_LENGTH:
            bad(name, f"At most {MAX_NAME_LENGTH} characters.")
    url = fields.get("external_study_url")
    if isinstance(url, str) and urlsplit(url).scheme not in ("http", "https"):
        bad("external_study_url", "An http(s) URL.")
    if "prolific_id_option" in fields and fields["prolific_id_option"] not in PROLIFIC_ID_OPTIONS:
        bad("prolific_id_option", f"One of {', '.join(PROLIFIC_ID_OPTIONS)}.")
    if "completion_codes" in fields:
        for message in _codes_problems(fields["completion_codes"]):
            bad("completion_codes", message)
    devices = fields.get("device_compatibility")
    if "device_compatibility" in fields and (
        not isinstance(devices, list) or not devices or not set(devices) <= set(DEVICES)
    ):
        bad("device_compatibility", f"A non-empty list of {', '.join(DEVICES)}.")
    for name in ("filters", "peripheral_requirements"):
        if name in fields and not isinstance(fields[name], list):
            bad(name, "A list.")
    filters = fields.get("filters")
    if isinstance(filters, list) and not all(
        isinstance(f, dict) and isinstance(f.get("filter_id"), str) for f in filters
    ):
        bad("filters", 'Each filter is an object with a "filter_id".')
    if errors:
        raise invalid(errors)
    return fields


def _codes_problems(codes) -> list[str]:
    if not isinstance(codes, list) or not codes:
        return ["Specify at least one completion code."]
    problems, seen = [], set()
    for entry in codes:
        code = entry.get("code") if isinstance(entry, dict) else None
        if not isinstance(code, str) or not code.isalnum() or len(code) > MAX_CODE_LENGTH:
            problems.append(f"A code is up to {MAX_CODE_LENGTH} letters and digits: {entry!r}.")
            continue
        if code in seen:
            problems.append(f"Each code must be unique within a study: {code}.")
        seen.add(code)
        if entry.get("code_type") not in CODE_TYPES:
            problems.append(f"code_type of {code}: one of {', '.join(CODE_TYPES)}.")
        actions = entry.get("actions", [])
        names = [a.get("action") for a in actions if isinstance(a, dict)] if isinstance(actions, list) else None
        if names is None or len(names) != len(actions) or not set(names) <= set(CODE_ACTIONS):
            problems.append(f"actions of {code}: objects with an action among {', '.join(CODE_ACTIONS)}.")
        elif set(CODE_ACTIONS) <= set(names):
            problems.append(f"actions of {code}: AUTOMATICALLY_APPROVE and MANUALLY_REVIEW exclude each other.")
    return problems


def _consistency_check(study: Study) -> None:
    errors = {}
    if study.prolific_id_option == "url_parameters" and PARTICIPANT_PLACEHOLDER not in study.external_study_url:
        errors["external_study_url"] = [f"With url_parameters the URL must carry {PARTICIPANT_PLACEHOLDER}."]
    if study.maximum_allowed_time is not None and study.maximum_allowed_time < study.estimated_completion_time:
        errors["maximum_allowed_time"] = ["Cannot be shorter than the estimated completion time."]
    per_hour = Decimal(study.reward) * 60 / study.estimated_completion_time
    minimum = MIN_HOURLY[settings.PROLIFIC_CURRENCY] * 100
    if per_hour < minimum:
        errors["reward"] = [f"The reward per hour ({per_hour / 100:.2f}) is below the minimum of {minimum / 100:.2f}."]
    if errors:
        raise invalid(errors)
