"""Collaborators in the admin (issue 16): the admin's scope follows the same rule as the
dashboard and the API. B (a staff researcher with every model permission of the apps) is
made a collaborator on A's campaign, whose rows are those of tests/attacks/test_admin_scope.py:
as a viewer B sees them, read-only, and changes, deletes or acts on none of them; as an editor
B changes them, but not the campaign's money or owner."""

from decimal import Decimal

import pytest
from django.contrib.messages import ERROR, SUCCESS, get_messages

from annotation.models import Campaign, CampaignMember, Topic
from crowd.models import Worker
from tests.annotation.test_admin import page_data
from tests.attacks.test_admin_scope import ACTIONS, ADMINS, World, _ids, listed, url

pytestmark = [pytest.mark.attacks, pytest.mark.django_db]


def _shared(role: str) -> World:
    world = World()
    CampaignMember.objects.create(campaign=world.rows_a[Campaign], user=world.b, role=role, added_by=world.a)
    return world


@pytest.fixture
def viewing() -> World:
    return _shared("view")


@pytest.fixture
def editing() -> World:
    return _shared("edit")


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
    before = viewing.snapshot_a()
    data = {
        "action": action,
        "_selected_action": [viewing.rows_a[model].pk],
        "index": 0,
        "post": "yes",
        "apply": "1",
        "reason": "acting on a campaign I only view",
        "amount": "0.50",
        "campaign": viewing.rows_a[Campaign].pk,
    }

    response = viewing.as_b.post(url(model, "changelist"), data)

    assert response.status_code in (200, 302)
    if response.status_code == 200 and response.context and "queryset" in response.context:
        assert list(response.context["queryset"]) == []
    assert [str(message) for message in get_messages(response.wsgi_request) if message.level in (SUCCESS, ERROR)] == []
    assert viewing.snapshot_a() == before


def test_a_viewer_cannot_block_a_worker_at_the_shared_campaign(viewing):
    before = viewing.snapshot_a()
    data = {
        "action": "block_workers",
        "_selected_action": [viewing.shared_worker.pk],
        "apply": "1",
        "reason": "blocked from a campaign I only view",
        "campaign": viewing.rows_a[Campaign].pk,
    }

    page = viewing.as_b.post(url(Worker, "changelist"), data)

    assert page.status_code == 200 and "campaign" in page.context["form"].errors
    assert viewing.snapshot_a() == before


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
