"""The Channel page's countries and first languages carry Prolific's own choice ids, read from
its list of filters (GET /api/v1/filters/) through the real client over HTTP: on the local
endpoint here; a list that cannot be read shows the built-in ids and says so, once."""

import pytest
from django.test import Client

from crowd.marketplaces.prolific import eligibility
from crowd.marketplaces.prolific.filters import campaign_prolific_filters, eligibility_choices
from tests.factories import CampaignFactory
from tests.services import free_port

pytestmark = pytest.mark.django_db(transaction=True)

PAGE = {"channel": "prolific", "environment": "local", "tasks_per_session": 10}

# Prolific's documented shape (docs.prolific.com, api-reference/filters/get-filters), with ids
# that differ from the built-in ones: the fields must take these.


@pytest.fixture
def researcher(owner):
    """The owner signed in (this package's `client` is the Prolific client)."""
    browser = Client()
    browser.force_login(owner)
    return browser


CATALOGUE = {
    eligibility.COUNTRY: {"7": "Germany", "0": "United Kingdom", "1": "United States", "99": "Atlantis"},
    eligibility.FIRST_LANGUAGE: {"3": "English", "12": "German "},
}


def test_the_client_reads_the_country_and_language_choices_from_the_list_of_filters(client):
    catalogue = client.filter_choices((eligibility.COUNTRY, eligibility.FIRST_LANGUAGE, "no-such-filter"))

    assert catalogue == {
        eligibility.COUNTRY: dict(eligibility.COUNTRIES),
        eligibility.FIRST_LANGUAGE: dict(eligibility.FIRST_LANGUAGES),
    }


def test_the_short_lists_take_the_catalogues_ids_by_name_and_drop_what_it_lacks():
    choices = eligibility.choices_from_catalogue(CATALOGUE)

    assert choices.source == "Prolific" and not choices.problem
    assert choices.countries == (("0", "United Kingdom"), ("1", "United States"), ("7", "Germany"))
    assert choices.first_languages == (("3", "English"), ("12", "German"))
    stored = [{"filter_id": eligibility.FIRST_LANGUAGE, "selected_values": ["3"]}]
    assert eligibility.eligibility_split(stored, choices) == (eligibility.Eligibility(first_languages=["3"]), [])
    assert eligibility.eligibility_split(stored)[1] == stored  # not an id of the built-in list: custom

    partial = eligibility.choices_from_catalogue({eligibility.COUNTRY: CATALOGUE[eligibility.COUNTRY]})
    assert partial.first_languages == eligibility.FIRST_LANGUAGES and "no first-language" in partial.problem


def test_the_channel_page_offers_prolifics_ids_and_stores_what_is_ticked(local_prolific, researcher, owner):
    campaign = CampaignFactory(owner=owner, slug="loans")

    page = researcher.get("/campaigns/loans/channel/").content.decode()
    saved = researcher.post("/campaigns/loans/channel/set/", {**PAGE, "countries": ["1"], "first_languages": ["18"]})

    assert "with the ids from the list of filters of the local Prolific endpoint (a stand-in)." in page
    assert 'value="18" id="id_first_languages_0"' in page and "could not be read" not in page
    assert saved.status_code == 302
    campaign.refresh_from_db()
    assert campaign_prolific_filters(campaign) == [
        {"filter_id": eligibility.COUNTRY, "selected_values": ["1"]},
        {"filter_id": eligibility.FIRST_LANGUAGE, "selected_values": ["18"]},
    ]


def test_an_unreadable_list_shows_the_built_in_ids_says_why_and_is_tried_once(settings, researcher, owner):
    CampaignFactory(owner=owner, slug="loans")
    settings.PROLIFIC_API_URL = f"http://127.0.0.1:{free_port()}/api/v1/"

    first = researcher.get("/campaigns/loans/channel/").content.decode()
    settings.PROLIFIC_API_TOKEN = ""  # a second read would now fail differently: it is not made
    second = researcher.get("/campaigns/loans/channel/").content.decode()

    for page in (first, second):
        assert "list of countries and languages could not be read (Prolific list filters: connection failed" in page
        assert "not checked against Prolific&#x27;s" in page
        assert 'value="18" id="id_first_languages_0"' in page
    assert "no Prolific API token" not in eligibility_choices().problem.lower()  # kept, not read again
