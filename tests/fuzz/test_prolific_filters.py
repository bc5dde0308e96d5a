"""prolific_filters_check on arbitrary JSON and on near-valid filters: it returns the filters
or raises ApplicationError with problems to show; never another exception. What it accepts
is stored and read back unchanged."""

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from config.errors import ApplicationError
from crowd.channels.prolific.filter_settings import prolific_filters_set
from crowd.marketplaces.prolific.filters import campaign_prolific_filters, prolific_filters_check
from tests.factories import CampaignFactory
from tests.fuzz.examples import FUZZ, isolated

pytestmark = pytest.mark.django_db

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
FIELDS = st.sampled_from(["filter_id", "selected_values", "selected_range", "weightings", "lower", "upper", "other"])
NEAR_FILTERS = st.lists(
    st.dictionaries(
        FIELDS,
        JSON
        | st.lists(st.text(max_size=3), max_size=3)
        | st.dictionaries(st.sampled_from(["lower", "upper", "x"]), SCALARS, max_size=2),
        max_size=4,
    ),
    max_size=3,
)


def _check(value):
    try:
        return prolific_filters_check(value)
    except ApplicationError as error:
        assert error.code == "invalid_filters" and error.message.startswith(("Prolific filters", "The Prolific"))
        return None


@FUZZ
@given(JSON)
def test_arbitrary_json_is_accepted_or_refused_with_a_message(value):
    _check(value)


@FUZZ
@given(NEAR_FILTERS)
@example(
    [
        {"filter_id": "approval_rate", "selected_range": {"lower": 95.5}},
        {"filter_id": "handedness", "selected_values": ["0", "1"], "weightings": {"0": 1, "1": 3}},
    ]
)
def test_what_is_accepted_is_stored_and_read_back_unchanged(value):
    accepted = _check(value)
    if accepted is None:
        return
    with isolated():
        campaign = CampaignFactory()
        prolific_filters_set(campaign=campaign, filters=accepted)
        campaign.refresh_from_db()
        assert campaign_prolific_filters(campaign) == json.loads(json.dumps(accepted))
