"""Collaborators in the admin (issue 16): the admin's scope follows the same rule as the
dashboard and the API. B (a staff researcher with every model permission of the apps) is
made a collaborator on A's campaign, whose rows are those of tests/attacks/test_admin_scope.py:
as a viewer B sees them, read-only, and changes, deletes or acts on none of them; as an editor
B changes them, but not the campaign's money or owner."""

import html
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from annotation.models import Campaign, CampaignMember, Topic
from tests.annotation.test_admin import page_data
from tests.attacks.test_admin_scope import (
    ACTIONS,
    ADMINS,
    World,
    _ids,
    action_does_nothing,
    block_refused,
    listed,
    url,
    world_for_the_module,
)

pytestmark = [pytest.mark.attacks, pytest.mark.django_db]


@pytest.fixture(scope="module")
def _world(django_db_setup, django_db_blocker):
    with world_for_the_module(django_db_blocker) as world:
        yield world


def _shared(world: World, role: str) -> World:
    world = world.fresh()
    CampaignMember.objects.create(campaign=world.rows_a[Campaign], user=world.b, role=role, added_by=world.a)
    return world


@pytest.fixture
def viewing(_world) -> World:
    return _shared(_world, "view")


@pytest.fixture
def editing(_world) -> World:
    return _shared(_world, "edit")


@pytest.mark.parametrize("model", ADMINS, ids=_ids)
def test_a_viewer_lists_the_shared_rows_and_opens_them_read_only(viewing, model):
    theirs = viewing.rows_a[model].pk

    assert theirs in listed(viewing.as_b, model)
    page = viewing.as_b.get(url(model, "change", theirs))

    assert page.status_code == 200
    assert page.context["has_change_permission"] is False and page.context["has_delete_permission"] is False


@pytest.mark.parametrize("model", ADMINS, ids=_ids)
def test_a_viewer_cannot_change_or_delete_a_shared_row(viewing, model):
    theirs = viewing.rows_a[model].pk
    change = url(model, "change", theirs)
    data = page_data(viewing.as_a.get(change))  # the owner's own form, posted by the viewer
    before = viewing.snapshot_a()

    changed = viewing.as_b.post(change, data)
    deleted = viewing.as_b.post(url(model, "delete", theirs), {"post": "yes"})

    assert changed.status_code in (302, 403) and deleted.status_code in (302, 403)
    assert viewing.as_b.get(url(model, "delete", theirs)).status_code == 403
    assert viewing.snapshot_a() == before


@pytest.mark.parametrize(("model", "action"), ACTIONS, ids=lambda value: getattr(value, "_meta", None) and _ids(value))
def test_a_viewer_cannot_run_an_action_on_a_shared_row(viewing, model, action):
    action_does_nothing(
        viewing, model, action, reason="acting on a campaign I only view", campaign=viewing.rows_a[Campaign]
    )


def test_a_viewer_cannot_block_a_worker_at_the_shared_campaign(viewing):
    block_refused(viewing, reason="blocked from a campaign I only view")


def test_an_editor_changes_a_shared_row(editing):
    topic = editing.rows_a[Topic]
    change = url(Topic, "change", topic.pk)
    data = {**page_data(editing.as_b.get(change)), "description": "edited by a collaborator"}

    assert editing.as_b.post(change, data).status_code == 302
    topic.refresh_from_db()
    assert topic.description == "edited by a collaborator"


@pytest.mark.parametrize(
    "money", [{"budget_cap": "99999.00"}, {"production_enabled": "on"}], ids=["raise the cap", "switch production on"]
)
def test_an_editor_cannot_touch_the_money_in_the_admin(editing, money):
    campaign = editing.rows_a[Campaign]
    change = url(Campaign, "change", campaign.pk)
    data = page_data(editing.as_b.get(change))
    before = editing.snapshot_a()

    response = editing.as_b.post(change, {**data, **money}, follow=True)

    assert "Only the owner of campaign" in response.content.decode()
    assert editing.snapshot_a() == before
    campaign.refresh_from_db()
    assert (campaign.budget_cap, campaign.production_enabled) == (Decimal("100.00"), False)


def test_an_editor_cannot_take_the_campaign_over_in_the_admin(editing):
    campaign = editing.rows_a[Campaign]
    change = url(Campaign, "change", campaign.pk)
    page = editing.as_b.get(change)
    assert "owner" not in page.context["adminform"].form.fields  # shown, not offered

    editing.as_b.post(change, {**page_data(page), "owner": editing.b.pk})

    campaign.refresh_from_db()
    assert campaign.owner == editing.a


def test_an_editor_may_lower_the_cap_in_the_admin(editing):
    campaign = editing.rows_a[Campaign]
    change = url(Campaign, "change", campaign.pk)
    data = page_data(editing.as_b.get(change))

    assert editing.as_b.post(change, {**data, "budget_cap": "20.00"}).status_code == 302
    campaign.refresh_from_db()
    assert campaign.budget_cap == Decimal("20.00")


# --- the collaborators themselves: only the owner manages them, through annotation.members -------


def _member_add(client, campaign, username: str, role: str = "view"):
    return client.post(url(CampaignMember, "add"), {"campaign": campaign.pk, "username": username, "role": role})


def test_the_owner_adds_changes_and_removes_a_collaborator_in_the_admin(viewing):
    campaign = viewing.rows_a[Campaign]
    carol = get_user_model().objects.create_user("carol")

    added = _member_add(viewing.as_a, campaign, "carol", "edit")

    assert added.status_code == 302
    member = CampaignMember.objects.get(campaign=campaign, user=carol)
    assert (member.role, member.added_by) == ("edit", viewing.a)
    change = url(CampaignMember, "change", member.pk)
    page = viewing.as_a.get(change)
    assert set(page.context["adminform"].form.fields) == {"role", "username"}  # who and where are fixed
    assert viewing.as_a.post(change, {"role": "view"}).status_code == 302
    member.refresh_from_db()
    assert member.role == "view"
    assert viewing.as_a.post(url(CampaignMember, "delete", member.pk), {"post": "yes"}).status_code == 302
    assert not CampaignMember.objects.filter(pk=member.pk).exists()


@pytest.mark.parametrize(
    ("username", "message"),
    [("ghost", "No user is called 'ghost'"), ("ada", "You cannot add yourself"), ("", "Name the user to add")],
    ids=["unknown", "themselves", "nobody"],
)
def test_the_admin_refuses_what_the_settings_page_refuses(viewing, username, message):
    before = viewing.snapshot_a()

    response = _member_add(viewing.as_a, viewing.rows_a[Campaign], username)

    page = viewing.as_a.get(response["Location"]) if response.status_code == 302 else response
    assert message in html.unescape(page.content.decode())
    assert viewing.snapshot_a() == before


@pytest.mark.parametrize("role", ["view", "edit"])
def test_a_collaborator_adds_changes_or_removes_nobody_in_the_admin(_world, role):
    world = _shared(_world, role)
    campaign = world.rows_a[Campaign]
    get_user_model().objects.create_user("mallory")
    member = world.rows_a[CampaignMember]
    before = world.snapshot_a()

    added = _member_add(world.as_b, campaign, "mallory", "edit")
    raised = world.as_b.post(url(CampaignMember, "change", member.pk), {"role": "edit"})
    removed = world.as_b.post(url(CampaignMember, "delete", member.pk), {"post": "yes"})
    bulk = world.as_b.post(
        url(CampaignMember, "changelist"),
        {"action": "delete_selected", "_selected_action": [member.pk], "post": "yes"},
    )

    assert added.status_code == 200 and "campaign" in added.context["adminform"].form.errors
    assert raised.status_code in (302, 403) and removed.status_code in (302, 403) and bulk.status_code in (200, 302)
    assert world.snapshot_a() == before
    assert CampaignMember.objects.filter(campaign=campaign).count() == 2  # the row and B's own membership
    page = world.as_b.get(url(CampaignMember, "change", member.pk))
    assert page.status_code == 200 and page.context["has_change_permission"] is False


def test_a_hostile_username_is_shown_escaped_in_the_admin(viewing):
    hostile = '<img src=x onerror="alert(1)">'
    get_user_model().objects.create_user(hostile)
    _member_add(viewing.as_a, viewing.rows_a[Campaign], hostile)

    page = viewing.as_a.get(url(CampaignMember, "changelist")).content.decode()

    assert hostile not in page and "&lt;img src=x onerror=" in page
