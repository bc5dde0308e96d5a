"""The collaborators endpoint (dashboard.api.member_views): list for everyone who sees the
campaign; add, re-role and remove for its owner only."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.models import CampaignMember
from tests.dashboard.api.conftest import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def vic(db):
    return get_user_model().objects.create_user("vic")


def members_url(slug="loans"):
    return reverse("api-member-list", args=[slug])


def test_the_owner_adds_lists_re_roles_and_removes_a_collaborator(api, campaign, vic, researcher):
    added = api.post(members_url(), {"username": "vic"}, format="json")
    re_roled = api.post(members_url(), {"username": "vic", "role": "edit"}, format="json")
    listed = api.get(members_url())

    assert added.status_code == 201
    assert added.json() | {"added_at": None} == {
        "username": "vic",
        "role": "view",
        "added_by": "ada",
        "added_at": None,
    }
    assert re_roled.status_code == 200 and re_roled.json()["role"] == "edit"
    assert [(row["username"], row["role"]) for row in listed.json()["results"]] == [("vic", "edit")]

    removed = api.delete(reverse("api-member-detail", args=["loans", "vic"]))

    assert removed.status_code == 204 and not CampaignMember.objects.exists()
    assert api.delete(reverse("api-member-detail", args=["loans", "vic"])).status_code == 404


@pytest.mark.parametrize("role", ["view", "edit"])
def test_a_collaborator_lists_but_does_not_manage(campaign, vic, researcher, role, other_researcher):
    CampaignMember.objects.create(campaign=campaign, user=vic, role=role, added_by=researcher)
    as_vic = client_for(vic)

    assert as_vic.get(members_url()).status_code == 200
    assert as_vic.post(members_url(), {"username": "grace"}, format="json").status_code == 403
    assert as_vic.delete(reverse("api-member-detail", args=["loans", "vic"])).status_code == 403
    assert list(CampaignMember.objects.values_list("user__username", "role")) == [("vic", role)]


def test_another_researcher_finds_no_members(campaign, other_researcher):
    as_grace = client_for(other_researcher)

    assert as_grace.get(members_url()).status_code == 404
    assert as_grace.post(members_url(), {"username": "grace"}, format="json").status_code == 404


def test_a_bad_role_is_a_field_error(api, campaign, vic):
    response = api.post(members_url(), {"username": "vic", "role": "owner"}, format="json")

    assert response.status_code == 400 and "role" in response.json()
    assert not CampaignMember.objects.exists()


def test_a_shared_campaign_is_listed_for_its_collaborator(campaign, vic, researcher):
    CampaignMember.objects.create(campaign=campaign, user=vic, role="view", added_by=researcher)

    rows = client_for(vic).get(reverse("api-campaign-list")).json()["results"]

    assert [(row["slug"], row["owner"]) for row in rows] == [("loans", "ada")]
