"""Campaigns through the REST API: authentication, isolation, create, read, and edits (the settings
fixed once a campaign has published are refused with 409)."""

from decimal import Decimal

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Campaign
from tests.annotation.test_campaigns import published
from tests.dashboard.api.conftest import client_for
from tests.factories import CampaignFactory, TopicFactory

pytestmark = pytest.mark.django_db

LIST = reverse("api-campaign-list")


def detail(slug):
    return reverse("api-campaign-detail", args=[slug])


def test_anonymous_gets_401_with_a_token_challenge():
    response = APIClient().get(LIST)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


def test_a_token_from_the_token_endpoint_opens_the_api(researcher, campaign):
    response = APIClient().post(
        reverse("api-token"), {"username": "ada", "password": "pw-for-tests-only"}, format="json"
    )
    assert response.status_code == 200
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {response.json()['token']}")
    assert client.get(LIST).json()["count"] == 1


def test_wrong_password_gets_no_token(researcher):
    response = APIClient().post(reverse("api-token"), {"username": "ada", "password": "nope"}, format="json")
    assert response.status_code == 400
    assert "token" not in response.json()


def test_session_login_works_too(researcher, campaign):
    client = APIClient()
    client.force_login(researcher)
    assert client.get(LIST).status_code == 200


def test_list_shows_only_own_campaigns(api, campaign, foreign_campaign):
    body = api.get(LIST).json()
    assert [row["slug"] for row in body["results"]] == ["loans"]
    assert body["count"] == 1


def test_superuser_sees_every_campaign(superuser, campaign, foreign_campaign):
    body = client_for(superuser).get(LIST).json()
    assert {row["slug"] for row in body["results"]} == {"loans", "grace-only"}


def test_list_rows_carry_settings_owner_and_topic_count(api, campaign):
    TopicFactory.create_batch(2, campaign=campaign)
    row = api.get(LIST).json()["results"][0]
    assert row["owner"] == "ada"
    assert row["topics"] == 2
    assert row["status"] == "draft"
    assert Decimal(row["likert_reward"]) == Decimal("0.06")
    assert row["environment"] == row["mturk_environment"] == "local"  # the old name: a deprecated alias


def test_list_queries_do_not_grow_with_campaigns(api, researcher, django_assert_max_num_queries):
    for campaign in CampaignFactory.create_batch(12, owner=researcher):
        TopicFactory.create_batch(2, campaign=campaign)
    # Token lookup, page count, page rows (owner joined, topics counted).
    with django_assert_max_num_queries(3):
        response = api.get(LIST)
    assert response.json()["count"] == 12


def test_list_paginates_by_50(api, researcher):
    CampaignFactory.create_batch(55, owner=researcher)
    first = api.get(LIST).json()
    assert (first["count"], len(first["results"])) == (55, 50)
    second = api.get(first["next"]).json()
    assert len(second["results"]) == 5
    assert second["next"] is None


def test_retrieve_by_slug(api, campaign):
    response = api.get(detail("loans"))
    assert response.status_code == 200
    assert response.json()["name"] == "Student loans"


def test_another_researchers_campaign_is_404(api, foreign_campaign):
    assert api.get(detail("grace-only")).status_code == 404
    assert api.patch(detail("grace-only"), {"name": "mine now"}, format="json").status_code == 404
    foreign_campaign.refresh_from_db()
    assert foreign_campaign.name == "Not yours"


def test_create_uses_the_papers_defaults_and_owns_the_campaign(api, researcher):
    response = api.post(LIST, {"slug": "wiki-2017", "name": "Wiki", "budget_cap": "25.00"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["slug"], body["owner"], body["topics"], body["status"]) == ("wiki-2017", "ada", 0, "draft")
    campaign = Campaign.objects.get(slug="wiki-2017")
    assert campaign.owner == researcher
    assert campaign.budget_cap == Decimal("25.00")
    assert (campaign.likert_reward, campaign.comparison_reward) == (Decimal("0.06"), Decimal("0.05"))
    assert campaign.assignments_per_hit == 5


def test_create_ignores_fields_that_are_not_settings(api):
    response = api.post(
        LIST,
        {
            "slug": "sneaky",
            "name": "S",
            "status": "active",
            "production_enabled": True,
            "environment": "production",
            "mturk_environment": "production",
        },
        format="json",
    )
    assert response.status_code == 201
    campaign = Campaign.objects.get(slug="sneaky")
    assert (campaign.status, campaign.production_enabled, campaign.environment) == ("draft", False, "local")


@pytest.mark.parametrize(
    "payload",
    [
        {"slug": "Not A Slug", "name": "x"},
        {"slug": "UPPER", "name": "x"},
        {"slug": "ok", "name": "x", "likert_reward": "-0.01"},
        {"slug": "ok", "name": "x", "trap_rate": 1.5},
        {"slug": "ok"},
    ],
)
def test_create_refuses_invalid_input_and_writes_nothing(api, payload):
    response = api.post(LIST, payload, format="json")
    assert response.status_code == 400
    assert not Campaign.objects.exists()


def test_create_refuses_a_taken_slug(api, foreign_campaign):
    response = api.post(LIST, {"slug": "grace-only", "name": "Mine"}, format="json")
    assert response.status_code == 400
    assert Campaign.objects.filter(slug="grace-only").count() == 1


def test_patch_changes_settings_of_a_draft(api, campaign):
    response = api.patch(
        detail("loans"), {"name": "Loans v2", "budget_cap": "40.00", "likert_reward": "0.08"}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["name"] == "Loans v2"
    campaign.refresh_from_db()
    assert (campaign.name, campaign.budget_cap, campaign.likert_reward) == (
        "Loans v2",
        Decimal("40.00"),
        Decimal("0.08"),
    )


def test_patch_cannot_change_status_or_the_production_switch(api, campaign):
    response = api.patch(detail("loans"), {"status": "active", "production_enabled": True}, format="json")
    assert response.status_code == 200
    campaign.refresh_from_db()
    assert (campaign.status, campaign.production_enabled) == ("draft", False)


def test_patch_of_a_fixed_setting_of_a_published_campaign_is_409_and_changes_nothing(api, campaign):
    published(campaign)
    response = api.patch(
        detail("loans"),
        {"name": "Loans v2", "likert_reward": "0.08", "assignments_per_hit": 3, "budget_cap": "1000.00"},
        format="json",
    )
    assert response.status_code == 409
    assert response.json() == {
        "code": "settings_fixed",
        "message": "Campaign 'loans' has published work: assignments_per_hit, likert_reward can no longer be "
        "changed. They decide what its HITs ask, pay and accept, and how their answers are judged; create a new "
        "campaign to change them.",
        "details": {"fields": ["assignments_per_hit", "likert_reward"]},
    }
    campaign.refresh_from_db()
    assert (campaign.name, campaign.likert_reward, campaign.assignments_per_hit, campaign.budget_cap) == (
        "Student loans",
        Decimal("0.06"),
        5,
        Decimal("100.00"),
    )


def test_patch_of_a_published_campaign_still_changes_name_and_budget_cap(api, campaign):
    published(campaign)
    response = api.patch(detail("loans"), {"name": "Loans v2", "budget_cap": "1000.00"}, format="json")
    assert response.status_code == 200, response.content
    campaign.refresh_from_db()
    assert (campaign.name, campaign.budget_cap) == ("Loans v2", Decimal("1000.00"))


def test_patch_validates_values(api, campaign):
    response = api.patch(detail("loans"), {"budget_cap": "-5"}, format="json")
    assert response.status_code == 400
    assert "budget_cap" in response.json()


def test_put_and_delete_are_not_offered(api, campaign):
    assert api.put(detail("loans"), {"name": "x", "slug": "loans"}, format="json").status_code == 405
    assert api.delete(detail("loans")).status_code == 405
    assert Campaign.objects.filter(slug="loans").exists()


def test_a_request_django_refuses_before_the_view_is_a_json_400(api, campaign, settings):
    """Too many query fields: Django raises while DRF reads them; handler400 answers."""
    query = "&".join(f"f{n}=1" for n in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1))
    response = api.get(f"{LIST}?{query}")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "code": "too_many_fields",
        "message": f"The request was not processed: it has more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,} fields.",
    }
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]
