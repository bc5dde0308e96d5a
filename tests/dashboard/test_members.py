"""The collaborators section of the dashboard (dashboard.members): the owner adds,
re-roles and removes collaborators on the settings page; everyone who sees the campaign sees
the list. The attacks on it are in tests/attacks/test_collaborators.py."""

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from annotation.models import CampaignMember
from tests.factories import CampaignFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def users(django_user_model):
    return {name: django_user_model.objects.create_user(name) for name in ("olga", "vic", "edie")}


@pytest.fixture
def campaign(users):
    return CampaignFactory(owner=users["olga"], slug="shared", name="Shared study")


def signed_in(client, user):
    client.force_login(user)
    return client


def test_the_owner_adds_a_collaborator_on_the_settings_page(client, users, campaign):
    owner = signed_in(client, users["olga"])
    settings_page = owner.get(reverse("dashboard:campaign-settings", args=["shared"]))
    assert "No collaborators: only the owner sees this campaign." in settings_page.content.decode()
    assert reverse("dashboard:member-add", args=["shared"]) in settings_page.content.decode()

    response = owner.post(reverse("dashboard:member-add", args=["shared"]), {"username": " vic ", "role": "view"})

    assert response.status_code == 302
    assert response["Location"] == reverse("dashboard:campaign-settings", args=["shared"]) + "#members"
    assert [str(m) for m in get_messages(response.wsgi_request)] == ["vic added: they can view this campaign."]
    member = CampaignMember.objects.get()
    assert (member.campaign, member.user, member.role, member.added_by) == (
        campaign,
        users["vic"],
        "view",
        users["olga"],
    )
    page = owner.get(response["Location"]).content.decode()
    assert "<td>vic</td>" in page and "<td>View</td>" in page


def test_adding_again_changes_the_role(client, users, campaign):
    owner = signed_in(client, users["olga"])
    owner.post(reverse("dashboard:member-add", args=["shared"]), {"username": "edie", "role": "view"})

    response = owner.post(reverse("dashboard:member-add", args=["shared"]), {"username": "edie", "role": "edit"})

    assert [str(m) for m in get_messages(response.wsgi_request)][-1] == (
        "edie role changed: they can view and change this campaign."
    )
    assert CampaignMember.objects.get().role == "edit"


def test_the_owner_removes_a_collaborator(client, users, campaign):
    member = CampaignMember.objects.create(campaign=campaign, user=users["vic"], role="view")
    owner = signed_in(client, users["olga"])

    response = owner.post(reverse("dashboard:member-remove", args=["shared", member.pk]))

    assert response.status_code == 302
    assert not CampaignMember.objects.exists()
    assert owner.post(reverse("dashboard:member-remove", args=["shared", member.pk])).status_code == 404


def test_an_empty_form_is_a_form_error(client, users, campaign):
    page = signed_in(client, users["olga"]).post(reverse("dashboard:member-add", args=["shared"]), {"role": "view"})

    assert page.status_code == 400 and "username" in page.context["member_form"].errors
    assert not CampaignMember.objects.exists()


def test_a_viewer_sees_the_list_without_the_forms(client, users, campaign):
    CampaignMember.objects.create(campaign=campaign, user=users["vic"], role="view", added_by=users["olga"])
    CampaignMember.objects.create(campaign=campaign, user=users["edie"], role="edit", added_by=users["olga"])
    viewer = signed_in(client, users["vic"])

    for url in (reverse("dashboard:members", args=["shared"]), reverse("dashboard:campaign-settings", args=["shared"])):
        page = viewer.get(url)
        text = page.content.decode()
        assert page.status_code == 200
        assert "<td>edie</td>" in text and "<td>Edit</td>" in text
        assert "you can view this campaign and download its exports, not change it" in text
        assert "member-remove" not in text and reverse("dashboard:member-add", args=["shared"]) not in text


def test_a_viewer_s_post_is_refused_with_a_page_that_says_why(client, users, campaign):
    CampaignMember.objects.create(campaign=campaign, user=users["vic"], role="view")

    page = signed_in(client, users["vic"]).post(reverse("dashboard:campaign-pause", args=["shared"]))

    assert page.status_code == 403
    assert "You can view campaign &#x27;shared&#x27; but not change it" in page.content.decode()
    campaign.refresh_from_db()
    assert campaign.status == "draft"


def test_collaborators_see_shared_campaigns_in_their_list(client, users, campaign):
    CampaignMember.objects.create(campaign=campaign, user=users["vic"], role="view")
    CampaignFactory(owner=users["olga"], name="Olga's own")

    page = signed_in(client, users["vic"]).get(reverse("dashboard:campaigns")).content.decode()

    assert "Shared study" in page and "Olga&#x27;s own" not in page
