"""The Channel page's Prolific eligibility form (dashboard.channel_forms.ChannelForm, crowd.marketplaces.
prolific.eligibility) and its participants table's consent column, over HTTP: fields in, the
stored list in Prolific's shape out, custom filters kept as they were, per-field errors, hostile
text escaped, another researcher's campaign a 404 and a viewer's post a 403."""

import json
from datetime import UTC, datetime

import pytest

from annotation.members import member_set
from crowd.channels.links import links
from crowd.marketplaces.prolific import eligibility
from crowd.marketplaces.prolific.filters import campaign_prolific_filters
from crowd.sessions import holds
from tests.crowd.sessions.conftest import links_batch
from tests.services import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _prolific_unreachable(settings):
    """The page reads Prolific's list of filters (tests/crowd/channels/prolific/test_eligibility_choices.py):
    here from a port nobody listens on, so the fields show the built-in ids."""
    settings.PROLIFIC_API_URL = f"http://127.0.0.1:{free_port()}/api/v1/"


PAGE = {"channel": "prolific", "environment": "local", "tasks_per_session": 10}
AGE = {"filter_id": "age", "selected_range": {"lower": 18, "upper": 30}}
HOSTILE = '</textarea><script>alert("x")</script>'


def save(client, **fields):
    return client.post("/campaigns/loans/channel/set/", {**PAGE, **fields})


def test_the_fields_and_the_custom_json_are_stored_as_one_list_in_prolifics_shape(owner_client, campaign):
    saved = save(
        owner_client,
        approval_rate_min="98",
        previous_submissions_min="0",
        countries=["0", "1"],
        first_languages=["18"],
        prolific_filters=json.dumps([AGE]),
    )

    assert saved.status_code == 302
    campaign.refresh_from_db()
    assert campaign_prolific_filters(campaign) == [
        {"filter_id": "approval_rate", "selected_range": {"lower": 98}},
        {"filter_id": "approval_numbers", "selected_range": {"lower": 0}},
        {"filter_id": "current-country-of-residence", "selected_values": ["0", "1"]},
        {"filter_id": "first-language", "selected_values": ["18"]},
        AGE,
    ]
    page = owner_client.get("/campaigns/loans/channel/").content.decode()
    assert 'name="approval_rate_min" value="98"' in page and 'name="previous_submissions_min" value="0"' in page
    assert 'value="1" id="id_countries_1" checked' in page and 'value="18" id="id_first_languages_0" checked' in page
    assert "&quot;filter_id&quot;: &quot;age&quot;" in page  # only the rest in the custom field


def test_saving_the_page_unchanged_keeps_a_list_the_fields_cannot_show(owner_client, campaign):
    stored = [
        {"filter_id": "approval_rate", "selected_range": {"lower": 95, "upper": 100}},  # an upper bound
        {"filter_id": "current-country-of-residence", "selected_values": ["0", "7"]},  # 7: not in the short list
        {"filter_id": "first-language", "selected_values": ["18"], "weightings": {"18": 1}},
        {"filter_id": "approval_numbers", "selected_range": {"lower": 50}},
    ]
    campaign.channel_settings = {"prolific": {"filters": stored}}
    campaign.save(update_fields=["channel_settings"])
    fields, custom = eligibility.eligibility_split(stored)
    assert fields == eligibility.Eligibility(previous_submissions_min=50) and custom == stored[:3]

    save(owner_client, previous_submissions_min="50", prolific_filters=json.dumps(custom))

    campaign.refresh_from_db()
    assert campaign_prolific_filters(campaign) == [stored[3], *stored[:3]]  # the same filters; fields first


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"approval_rate_min": "101"}, "Ensure this value is less than or equal to 100."),
        ({"approval_rate_min": "ninety"}, "Enter a whole number."),
        ({"previous_submissions_min": "-1"}, "Ensure this value is greater than or equal to 0."),
        ({"countries": ["999"]}, "Select a valid choice. 999 is not one of the available choices."),
        ({"first_languages": [HOSTILE]}, "is not one of the available choices"),
        ({"prolific_filters": "[{]"}, "Not JSON: Expecting property name"),
        ({"prolific_filters": '[{"filter_id": "age"}]'}, "give either &quot;selected_values&quot;"),
        (
            {"approval_rate_min": "90", "prolific_filters": '[{"filter_id": "approval_rate", "selected_range": {}}]'},
            "&quot;selected_range&quot; must be an object",
        ),
        (
            {
                "approval_rate_min": "90",
                "countries": ["0"],
                "prolific_filters": json.dumps(
                    [
                        {"filter_id": "approval_rate", "selected_range": {"lower": 1}},
                        {"filter_id": "current-country-of-residence", "selected_values": ["7"]},
                    ]
                ),
            },
            "approval_rate, current-country-of-residence are set by the fields above too",
        ),
    ],
)
def test_a_bad_field_is_refused_with_its_own_error_and_nothing_saved(owner_client, campaign, fields, message):
    refused = save(owner_client, **fields)

    page = refused.content.decode()
    assert refused.status_code == 400 and message in page
    assert "<script>alert" not in page
    campaign.refresh_from_db()
    assert campaign.channel == "mturk" and "prolific" not in campaign.channel_settings


def test_hostile_custom_json_is_stored_as_data_and_shown_escaped(owner_client, campaign):
    hostile = [{"filter_id": HOSTILE, "selected_values": [HOSTILE]}]

    assert save(owner_client, prolific_filters=json.dumps(hostile)).status_code == 302

    page = owner_client.get("/campaigns/loans/channel/").content.decode()
    campaign.refresh_from_db()
    assert campaign_prolific_filters(campaign) == hostile
    assert HOSTILE not in page and "&lt;/textarea&gt;&lt;script&gt;" in page


def test_another_researcher_gets_a_404_and_a_viewer_a_403(client, django_user_model, owner, campaign):
    mallory = django_user_model.objects.create_user("mallory", password="x")
    client.force_login(mallory)
    assert client.get("/campaigns/loans/channel/").status_code == 404
    assert save(client, approval_rate_min="1").status_code == 404

    member_set(campaign_id=campaign.pk, username="mallory", role="view", by=owner)
    assert client.get("/campaigns/loans/channel/").status_code == 200
    assert save(client, approval_rate_min="1").status_code == 403
    campaign.refresh_from_db()
    assert "prolific" not in campaign.channel_settings


def test_the_participants_table_says_when_each_agreed_to_the_consent_page(client, owner):
    batch = links_batch(consent_text="We study what matters. You may stop at any time.")
    campaign = batch.topic.campaign
    campaign.owner = owner
    campaign.save(update_fields=["owner"])
    agreed, waiting = links.links_create(campaign=campaign, labels=["Dr. Agreed", "Dr. Waiting"])
    session = holds.link_session_open(link=agreed, worker=agreed.worker)
    holds.session_consent(session, now=datetime(2026, 11, 2, 9, 30, tzinfo=UTC))
    holds.link_session_open(link=waiting, worker=waiting.worker)
    client.force_login(owner)

    page = client.get(f"/campaigns/{campaign.slug}/channel/").content.decode()

    assert '<th scope="col">Consent given</th>' in page
    assert '<time datetime="2026-11-02T09:30:00+00:00">' in page
    assert page.count("<td>not yet</td>") == 1
