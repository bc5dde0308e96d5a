"""Prolific's eligibility filters: checked before they are stored, read where studies are made."""

import dataclasses
import logging
import math
from typing import Any

from django.conf import settings
from django.core.cache import cache

from annotation.models import Campaign
from config.errors import ApplicationError
from crowd.marketplaces.prolific import eligibility
from crowd.marketplaces.prolific.client import prolific_client

logger = logging.getLogger(__name__)

CHOICES_KEPT_SECONDS = 24 * 3600  # Prolific's lists of countries and languages change rarely
CHOICES_RETRY_SECONDS = 300  # after a failed read, pages show the built-in ids this long


def prolific_filters_check(filters: object) -> list[dict[str, Any]]:
    """Prolific eligibility filters as its API takes them on a study (docs.prolific.com,
    api-reference/filters): a list of objects, each with a "filter_id" and either
    "selected_values" (choice ids, as strings) or "selected_range" ({"lower", "upper"}, either
    may be left out), and optional "weightings" for quotas. Returns them, or raises
    ApplicationError naming every problem by position and field."""
    if not isinstance(filters, list):
        raise ApplicationError("Prolific filters must be a JSON list of filter objects.", code="invalid_filters")
    problems = []
    for number, item in enumerate(filters, start=1):
        where = f"filter {number}"
        if not isinstance(item, dict):
            problems.append(f"{where}: an object is needed, not {type(item).__name__}")
            continue
        filter_id = item.get("filter_id")
        if not isinstance(filter_id, str) or not filter_id.strip():
            problems.append(f'{where}: "filter_id" is missing (a text such as "approval_rate")')
        else:
            where = f"filter {number} ({filter_id})"
        problems += [f"{where}: {problem}" for problem in _filter_problems(item)]
    if problems:
        raise ApplicationError(
            "The Prolific filters are not usable: " + "; ".join(problems) + ".",
            code="invalid_filters",
            details={"problems": problems},
        )
    return filters


def _filter_problems(item: dict[str, Any]) -> list[str]:
    unknown = set(item) - {"filter_id", "selected_values", "selected_range", "weightings"}
    problems = [f'unknown field "{name}"' for name in sorted(unknown)]
    values, bounds = item.get("selected_values"), item.get("selected_range")
    if (values is None) == (bounds is None):
        return problems + ['give either "selected_values" or "selected_range"']
    if values is not None:
        texts = isinstance(values, list) and values and all(isinstance(v, str) and v for v in values)
        if not texts:
            problems.append('"selected_values" must be a non-empty list of choice ids, as texts')
        weightings = item.get("weightings")
        if weightings is not None and not (
            isinstance(weightings, dict)
            and set(weightings) <= set(values if texts else ())
            and all(_number(w) and w > 0 for w in weightings.values())
        ):
            problems.append('"weightings" must map selected values to positive numbers')
        return problems
    if not isinstance(bounds, dict) or not bounds or set(bounds) - {"lower", "upper"}:
        return problems + ['"selected_range" must be an object with "lower", "upper" or both']
    numbers = {key: value for key, value in bounds.items() if _number(value)}
    if len(numbers) != len(bounds):
        problems.append('"selected_range" bounds must be numbers')
    elif "lower" in numbers and "upper" in numbers and numbers["lower"] > numbers["upper"]:
        problems.append(f'"selected_range" lower {numbers["lower"]} is above upper {numbers["upper"]}')
    if "weightings" in item:
        problems.append('"weightings" go with "selected_values" only')
    return problems


def _number(value: object) -> bool:
    """A JSON number the database can store: not a boolean, not NaN or infinite."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def campaign_prolific_filters(campaign: Campaign) -> list[dict[str, Any]]:
    """The eligibility filters every Prolific study of the campaign is created with."""
    filters: list[dict[str, Any]] = (campaign.channel_settings or {}).get("prolific", {}).get("filters", [])
    return filters


def eligibility_choices() -> eligibility.Choices:
    """The countries and first languages the Channel page offers, with Prolific's own choice
    ids: read from Prolific's GET /api/v1/filters/ (the local endpoint's stand-in in local
    runs), kept a day. When the list cannot be read, the built-in ids, with the reason, for a
    few minutes before the next try, so a page never waits on Prolific more than once."""
    key = f"prolific-eligibility-choices:{settings.PROLIFIC_API_URL}"
    kept = cache.get(key)
    if isinstance(kept, eligibility.Choices):
        return kept
    try:
        client = prolific_client(attempts=1)
        client.timeout = 5.0
        with client:
            catalogue = client.filter_choices((eligibility.COUNTRY, eligibility.FIRST_LANGUAGE))
    except ApplicationError as error:  # MarketplaceError is one
        logger.warning("prolific: the list of filters could not be read: %s", error.message)
        choices = eligibility.Choices(
            problem=f"Prolific's list of countries and languages could not be read ({error.message.rstrip('.')}): the ids shown are "
            "Salience's built-in ones, not checked against Prolific's; check them before publishing."
        )
        cache.set(key, choices, CHOICES_RETRY_SECONDS)
        return choices
    choices = eligibility.choices_from_catalogue(catalogue)
    if settings.PROLIFIC_ENVIRONMENT != "production" and choices.source:
        choices = dataclasses.replace(choices, source="the local Prolific endpoint (a stand-in)")
    cache.set(key, choices, CHOICES_KEPT_SECONDS if not choices.problem else CHOICES_RETRY_SECONDS)
    return choices
