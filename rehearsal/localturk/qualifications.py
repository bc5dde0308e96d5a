"""Qualification requirements against simulated workers (reference §4).

A simulated worker holds MTurk's system qualifications with passing values — US locale,
100 % approved, 1000 approved HITs, adult content accepted — and nothing else (no Masters,
no custom qualification). `worker_qualifications_set` overrides values for one worker; a
value of None removes the qualification. Locale values are `{"Country": "US"}` dicts,
the others integers.
"""

from django.db import transaction

from .models import WorkerProfile

PERCENT_APPROVED = "000000000000000000L0"
NUMBER_HITS_APPROVED = "00000000000000000040"
ADULT = "00000000000000000060"
LOCALE = "00000000000000000071"
MASTERS = ("2ARFPLSP75KLA8M8DH1HTEQVJT3SY6", "2F1QJWKUDD8XADTFD2Q0G6UTO95ALH")

DEFAULTS = {PERCENT_APPROVED: 100, NUMBER_HITS_APPROVED: 1000, ADULT: 1, LOCALE: {"Country": "US"}}

# Which requirements guard which worker action: every requirement guards Accept.
_GUARDS = {
    "Discover": ("DiscoverPreviewAndAccept",),
    "Preview": ("PreviewAndAccept", "DiscoverPreviewAndAccept"),
    "Accept": ("Accept", "PreviewAndAccept", "DiscoverPreviewAndAccept"),
}


def worker_qualifications(worker_id: str) -> dict:
    """The qualification values a worker holds: the defaults, then the worker's overrides."""
    values = dict(DEFAULTS)
    profile = WorkerProfile.objects.filter(worker_id=worker_id).first()
    if profile:
        values.update(profile.qualifications)
    return {type_id: value for type_id, value in values.items() if value is not None}


def worker_qualifications_set(*, worker_id: str, qualifications: dict) -> WorkerProfile:
    """Override qualification values of one simulated worker (merged into earlier overrides).

    ValueError for a value that is not an integer, a locale or None.
    """
    for type_id, value in qualifications.items():
        if not (value is None or _is_integer(value) or _is_locale(value)):
            raise ValueError(f"{type_id}: a value is an integer, a locale like {{'Country': 'US'}}, or null.")
    with transaction.atomic():
        profile, _ = WorkerProfile.objects.select_for_update().get_or_create(worker_id=worker_id)
        profile.qualifications = {**profile.qualifications, **qualifications}
        profile.save(update_fields=["qualifications"])
    return profile


def requirements_unmet(requirements: list[dict], values: dict, *, action: str) -> list[dict]:
    """The requirements guarding `action` (Discover, Preview, Accept) that `values` fail."""
    guarded = _GUARDS[action]
    unmet = []
    for requirement in requirements:
        guards = requirement.get("ActionsGuarded")
        if guards is None:
            guards = "PreviewAndAccept" if requirement.get("RequiredToPreview") else "Accept"
        if guards in guarded and not requirement_met(requirement, values.get(requirement["QualificationTypeId"])):
            unmet.append(requirement)
    return unmet


def requirement_met(requirement: dict, value) -> bool:
    """One requirement against the worker's value for its qualification (None: not held)."""
    comparator = requirement["Comparator"]
    if comparator == "Exists":
        return value is not None
    if comparator == "DoesNotExist":
        return value is None
    if value is None:
        return False
    if "LocaleValues" in requirement:
        matches = any(_locale_matches(value, locale) for locale in requirement["LocaleValues"])
        return matches if comparator in ("EqualTo", "In") else not matches
    wanted = requirement.get("IntegerValues", [])
    if comparator == "In":
        return value in wanted
    if comparator == "NotIn":
        return value not in wanted
    target = wanted[0]
    return {
        "LessThan": value < target,
        "LessThanOrEqualTo": value <= target,
        "GreaterThan": value > target,
        "GreaterThanOrEqualTo": value >= target,
        "EqualTo": value == target,
        "NotEqualTo": value != target,
    }[comparator]


def _is_integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_locale(value) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("Country"), str)
        and set(value) <= {"Country", "Subdivision"}
        and all(isinstance(part, str) for part in value.values())
    )


def _locale_matches(value: dict, locale: dict) -> bool:
    if value.get("Country") != locale["Country"]:
        return False
    return "Subdivision" not in locale or value.get("Subdivision") == locale["Subdivision"]
