"""Collaborators (annotation.members) and the access rule they feed (annotation.campaigns:
campaigns_visible_to, campaigns_editable_by, campaigns_owned_by, campaign_owner_changes_check)."""

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from annotation.campaigns import (
    OwnerOnly,
    campaign_update,
    campaigns_editable_by,
    campaigns_owned_by,
    campaigns_visible_to,
)
from annotation.members import MemberRefused, member_remove, member_role, member_set
from annotation.models import Campaign, CampaignMember
from config.errors import NotFound
from tests.factories import CampaignFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    make = get_user_model().objects.create_user
    return {name: make(name) for name in ("owner", "viewer", "editor", "stranger")} | {
        "root": get_user_model().objects.create_superuser("root")
    }


@pytest.fixture
def campaign(people):
    campaign = CampaignFactory(owner=people["owner"], slug="shared")
    member_set(campaign_id=campaign.pk, username="viewer", role="view", by=people["owner"])
    member_set(campaign_id=campaign.pk, username="editor", role="edit", by=people["owner"])
    return campaign


def test_each_role_sees_changes_and_owns_what_the_rule_says(people, campaign):
    other = CampaignFactory(owner=people["stranger"])
    expected = {
        # user: (visible, editable, owned)
        "owner": (True, True, True),
        "editor": (True, True, False),
        "viewer": (True, False, False),
        "stranger": (False, False, False),
        "root": (True, True, True),
    }
    for name, (visible, editable, owned) in expected.items():
        user = people[name]
        assert (
            campaigns_visible_to(user).filter(pk=campaign.pk).exists(),
            campaigns_editable_by(user).filter(pk=campaign.pk).exists(),
            campaigns_owned_by(user).filter(pk=campaign.pk).exists(),
        ) == (visible, editable, owned), name
    # A collaborator sees the shared campaign, not the rest of the owner's or anyone's.
    assert list(campaigns_visible_to(people["viewer"])) == [campaign]
    assert other not in campaigns_visible_to(people["editor"])


def test_member_role_agrees_with_the_rule(people, campaign):
    roles = {name: member_role(campaign=campaign, user=user) for name, user in people.items()}
    assert roles == {"owner": "owner", "editor": "edit", "viewer": "view", "stranger": "", "root": "owner"}


def test_adding_again_changes_the_role_and_keeps_who_added_them(people, campaign):
    member, created = member_set(campaign_id=campaign.pk, username="viewer", role="edit", by=people["root"])

    assert created is False
    assert (member.role, member.added_by) == ("edit", people["owner"])
    assert CampaignMember.objects.filter(campaign=campaign, user=people["viewer"]).count() == 1
    assert campaigns_editable_by(people["viewer"]).filter(pk=campaign.pk).exists()


@pytest.mark.parametrize(
    ("username", "role", "code"),
    [
        ("ghost", "view", "unknown_user"),
        ("owner", "view", "member_self"),
        ("stranger", "admin", "invalid_role"),
        ("  ", "view", "unknown_user"),
    ],
)
def test_refused_additions_write_nothing(people, campaign, username, role, code):
    before = list(CampaignMember.objects.values())

    with pytest.raises(MemberRefused) as refused:
        member_set(campaign_id=campaign.pk, username=username, role=role, by=people["owner"])

    assert refused.value.code == code
    assert list(CampaignMember.objects.values()) == before


def test_a_superuser_cannot_make_the_owner_a_collaborator(people, campaign):
    with pytest.raises(MemberRefused) as refused:
        member_set(campaign_id=campaign.pk, username="owner", role="view", by=people["root"])
    assert refused.value.code == "member_owner"


def test_an_inactive_user_is_not_found(people, campaign):
    get_user_model().objects.create_user("gone", is_active=False)
    with pytest.raises(MemberRefused, match="No user is called 'gone'"):
        member_set(campaign_id=campaign.pk, username="gone", role="view", by=people["owner"])


@pytest.mark.parametrize("who", ["editor", "viewer", "stranger"])
def test_only_the_owner_manages_collaborators(people, campaign, who):
    before = list(CampaignMember.objects.values())

    with pytest.raises(OwnerOnly):
        member_set(campaign_id=campaign.pk, username="stranger", role="edit", by=people[who])
    with pytest.raises(OwnerOnly):
        member_remove(campaign_id=campaign.pk, user_id=people["viewer"].pk, by=people[who])

    assert list(CampaignMember.objects.values()) == before


def test_removing_a_collaborator_ends_their_access(people, campaign):
    removed = member_remove(campaign_id=campaign.pk, user_id=people["viewer"].pk, by=people["owner"])

    assert removed.user == people["viewer"]
    assert not campaigns_visible_to(people["viewer"]).exists()
    with pytest.raises(NotFound):
        member_remove(campaign_id=campaign.pk, user_id=people["viewer"].pk, by=people["owner"])


def test_deleting_a_campaign_or_a_user_deletes_their_memberships(people, campaign):
    people["viewer"].delete()
    assert CampaignMember.objects.filter(campaign=campaign).count() == 1
    campaign.delete()
    assert not CampaignMember.objects.exists()


# ---- money stays with the owner ------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [{"budget_cap": Decimal("100.01")}, {"production_enabled": True}, {"budget_cap": "not money"}],
    ids=["raise the cap", "production on", "invalid cap"],
)
def test_an_editor_cannot_raise_the_cap_or_switch_production_on(people, campaign, changes):
    with pytest.raises(OwnerOnly) as refused:
        campaign_update(campaign_id=campaign.pk, changes=changes, by=people["editor"])

    assert refused.value.http_status == 403
    campaign.refresh_from_db()
    assert (campaign.budget_cap, campaign.production_enabled) == (Decimal("100.00"), False)


def test_an_editor_cannot_hand_the_campaign_to_anyone(people, campaign):
    for owner in (people["editor"], people["editor"].pk, None):
        with pytest.raises(OwnerOnly, match="change the owner"):
            campaign_update(campaign_id=campaign.pk, changes={"owner": owner}, by=people["editor"])
    assert Campaign.objects.get(pk=campaign.pk).owner == people["owner"]


def test_an_editor_may_lower_the_cap_switch_production_off_and_send_the_same_values(people, campaign):
    Campaign.objects.filter(pk=campaign.pk).update(production_enabled=True)
    same = {"budget_cap": "100.00", "owner": people["owner"], "name": "Renamed"}
    campaign_update(campaign_id=campaign.pk, changes=same, by=people["editor"])

    campaign_update(
        campaign_id=campaign.pk,
        changes={"budget_cap": Decimal("40.00"), "production_enabled": False},
        by=people["editor"],
    )

    campaign.refresh_from_db()
    assert (campaign.name, campaign.budget_cap, campaign.production_enabled) == ("Renamed", Decimal("40.00"), False)


def test_the_owner_a_superuser_and_the_command_line_may_raise_it(people, campaign):
    for by, cap in ((people["owner"], "200.00"), (people["root"], "300.00"), (None, "400.00")):
        campaign_update(campaign_id=campaign.pk, changes={"budget_cap": Decimal(cap)}, by=by)
        campaign.refresh_from_db()
        assert campaign.budget_cap == Decimal(cap)
