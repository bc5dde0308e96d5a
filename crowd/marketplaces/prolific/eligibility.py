"""The Prolific eligibility filters a researcher sets most, as fields of a form, and back.

A study's filters are a list in Prolific's own shape (filters.py checks it); four of them
have fields on the Channel page, and everything else stays in that shape as "custom" filters.
`eligibility_filters` builds the list from the fields; `eligibility_split` reads a stored
list back into the fields and the rest, so a list the form did not write survives a save
unchanged.

Filter ids and choice ids are Prolific's (GET /api/v1/filters/ lists them all): the choice
ids of countries and languages are positions in Prolific's own lists, not ISO codes. The
fields offer the countries and first languages most studies ask for, by name; their ids are
read from Prolific's list (`choices_from_catalogue`, fetched by filters.eligibility_choices),
and the built-in ids below are used only when that list cannot be read, and said so. Any other
country or language goes into the custom filters, with its id from Prolific's list.
"""

from dataclasses import dataclass, field
from typing import Any

APPROVAL_RATE = "approval_rate"  # the share of a participant's submissions approved, in %
PREVIOUS_SUBMISSIONS = "approval_numbers"  # how many submissions they had approved
COUNTRY = "current-country-of-residence"
FIRST_LANGUAGE = "first-language"

COUNTRIES: tuple[tuple[str, str], ...] = (
    ("0", "United Kingdom"),
    ("1", "United States"),
    ("2", "Ireland"),
    ("3", "Germany"),
    ("4", "France"),
    ("5", "Spain"),
    ("19", "Australia"),
    ("45", "Canada"),
)
FIRST_LANGUAGES: tuple[tuple[str, str], ...] = (
    ("18", "English"),
    ("27", "German"),
    ("24", "French"),
    ("59", "Spanish"),
    ("17", "Dutch"),
    ("35", "Italian"),
)


@dataclass(frozen=True)
class Choices:
    """The choices the country and language fields offer, as (id, label) pairs, and where their
    ids come from: `source` is "Prolific" when read from Prolific's list; else `problem` says
    why the built-in ids are shown."""

    countries: tuple[tuple[str, str], ...] = COUNTRIES
    first_languages: tuple[tuple[str, str], ...] = FIRST_LANGUAGES
    source: str = ""
    problem: str = ""


def choices_from_catalogue(catalogue: dict[str, dict[str, str]]) -> Choices:
    """The short lists' countries and languages with the ids of `catalogue` (filter id → choice
    id → label, as Prolific's GET /api/v1/filters/ gives them), found by label. A filter the
    catalogue lacks keeps the built-in ids, and `problem` names it."""
    missing = [filter_id for filter_id in (COUNTRY, FIRST_LANGUAGE) if not catalogue.get(filter_id)]

    def offered(filter_id: str, built_in: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        return built_in if filter_id in missing else _by_label(catalogue[filter_id], built_in)

    return Choices(
        countries=offered(COUNTRY, COUNTRIES),
        first_languages=offered(FIRST_LANGUAGE, FIRST_LANGUAGES),
        source="Prolific" if len(missing) < 2 else "",
        problem=f"Prolific's list of filters has no {' or '.join(missing)}: the built-in ids are shown."
        if missing
        else "",
    )


def _by_label(choices: dict[str, str], wanted: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    ids = {label.strip().casefold(): choice_id for choice_id, label in choices.items()}
    return tuple((ids[label.casefold()], label) for _, label in wanted if label.casefold() in ids)


@dataclass
class Eligibility:
    """The form's fields: None and empty lists mean "no filter"."""

    approval_rate_min: int | None = None
    previous_submissions_min: int | None = None
    countries: list[str] = field(default_factory=list)
    first_languages: list[str] = field(default_factory=list)


def eligibility_filters(eligibility: Eligibility, custom: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The filters of `eligibility`, then the `custom` ones, in Prolific's shape."""
    filters: list[dict[str, Any]] = []
    if eligibility.approval_rate_min is not None:
        filters.append({"filter_id": APPROVAL_RATE, "selected_range": {"lower": eligibility.approval_rate_min}})
    if eligibility.previous_submissions_min is not None:
        filters.append(
            {"filter_id": PREVIOUS_SUBMISSIONS, "selected_range": {"lower": eligibility.previous_submissions_min}}
        )
    if eligibility.countries:
        filters.append({"filter_id": COUNTRY, "selected_values": list(eligibility.countries)})
    if eligibility.first_languages:
        filters.append({"filter_id": FIRST_LANGUAGE, "selected_values": list(eligibility.first_languages)})
    return filters + custom


def eligibility_split(
    filters: list[dict[str, Any]], choices: Choices = Choices()
) -> tuple[Eligibility, list[dict[str, Any]]]:
    """The fields a stored list fills, and the filters left for the custom ones: any filter the
    fields cannot show exactly (an upper bound, a weighting, a choice not in the fields'
    `choices`, a second filter of one id) stays custom."""
    eligibility, custom = Eligibility(), []
    taken: set[str] = set()
    for item in filters:
        filter_id = item.get("filter_id")
        if filter_id in taken or not _fits(item, choices):
            custom.append(item)
            continue
        taken.add(str(filter_id))
        if filter_id == APPROVAL_RATE:
            eligibility.approval_rate_min = item["selected_range"]["lower"]
        elif filter_id == PREVIOUS_SUBMISSIONS:
            eligibility.previous_submissions_min = item["selected_range"]["lower"]
        elif filter_id == COUNTRY:
            eligibility.countries = list(item["selected_values"])
        else:
            eligibility.first_languages = list(item["selected_values"])
    return eligibility, custom


def _fits(item: dict[str, Any], choices: Choices) -> bool:
    filter_id = item.get("filter_id")
    if filter_id in (APPROVAL_RATE, PREVIOUS_SUBMISSIONS):
        bounds = item.get("selected_range")
        lower = bounds.get("lower") if isinstance(bounds, dict) else None
        return (
            set(item) == {"filter_id", "selected_range"}
            and isinstance(bounds, dict)
            and set(bounds) == {"lower"}
            and isinstance(lower, int)
            and not isinstance(lower, bool)
        )
    offered = {COUNTRY: choices.countries, FIRST_LANGUAGE: choices.first_languages}.get(str(filter_id))
    values = item.get("selected_values")
    return (
        offered is not None
        and set(item) == {"filter_id", "selected_values"}
        and isinstance(values, list)
        and bool(values)
        and set(values) <= {value for value, _ in offered}
    )
