"""The Channel page's "release" of a held place (issue 25, point 5) attacked over HTTP: a
viewer, another researcher, a forged hold id (another campaign's, or none), a replayed POST
and a POST without the CSRF token leave every hold as it was; only the owner and editors
release, once."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.members import member_set
from crowd.channels.links import links
from crowd.models import TaskHold
from tests.crowd.sessions.conftest import links_batch
from tests.crowd.sessions.test_session_pages import _start

pytestmark = [pytest.mark.attacks, pytest.mark.django_db]


def _campaign_with_a_hold(owner: str, code: str):
    batch = links_batch(propositions=5, tasks_per_session=1, assignments=1)
    campaign = batch.topic.campaign
    campaign.owner = get_user_model().objects.create_user(owner)
    campaign.save(update_fields=["owner"])
    link = links.link_create(campaign=campaign, kind="open")
    participant = Client()
    participant.get(_start(participant, link, code=code)["Location"])
    return campaign, TaskHold.objects.get(session__campaign=campaign)


@pytest.fixture
def world():
    campaign, hold = _campaign_with_a_hold("ada", "P-017")
    other_campaign, other_hold = _campaign_with_a_hold("mallory", "M-001")
    users = get_user_model().objects
    member_set(campaign_id=campaign.pk, username=users.create_user("vic").username, role="view", by=campaign.owner)
    member_set(campaign_id=campaign.pk, username=users.create_user("edie").username, role="edit", by=campaign.owner)
    return campaign, hold, other_campaign, other_hold


def signed_in(username: str, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(get_user_model().objects.get(username=username))
    return client


def holds_now() -> list[tuple]:
    return list(TaskHold.objects.order_by("pk").values_list("pk", "released_at", "released_by", "expires_at"))


def release_url(campaign, hold_id: int) -> str:
    return f"/campaigns/{campaign.slug}/holds/{hold_id}/release/"


def test_a_viewer_sees_the_hold_without_a_release_button_and_cannot_release_it(world):
    campaign, hold, *_ = world
    viewer = signed_in("vic")
    page = viewer.get(f"/campaigns/{campaign.slug}/channel/").content.decode()
    assert "<td>p-017</td>" in page and release_url(campaign, hold.pk) not in page
    before = holds_now()

    assert viewer.post(release_url(campaign, hold.pk)).status_code == 403
    assert holds_now() == before


def test_another_researcher_finds_nothing_to_release_in_a_campaign_not_theirs(world):
    campaign, hold, _, _ = world
    before = holds_now()

    assert signed_in("mallory").post(release_url(campaign, hold.pk)).status_code == 404
    assert Client().post(release_url(campaign, hold.pk)).status_code == 302  # to the login page
    assert holds_now() == before


@pytest.mark.parametrize("forged", ["other campaign's", "unknown"])
def test_a_forged_hold_id_releases_nothing(world, forged):
    campaign, _, _, other_hold = world
    hold_id = other_hold.pk if forged == "other campaign's" else 999_999
    before = holds_now()

    refused = signed_in("ada").post(release_url(campaign, hold_id))

    assert refused.status_code == 404
    assert holds_now() == before


def test_a_replayed_release_changes_nothing_and_says_so(world):
    campaign, hold, *_ = world
    editor = signed_in("edie")
    assert editor.post(release_url(campaign, hold.pk)).status_code == 302
    once = holds_now()
    assert next(row for row in once if row[0] == hold.pk)[2] == "edie"

    replayed = editor.post(release_url(campaign, hold.pk), follow=True)

    assert "This place was released already" in replayed.content.decode()
    assert holds_now() == once


def test_a_release_without_the_csrf_token_is_refused(world):
    campaign, hold, *_ = world
    before = holds_now()

    refused = signed_in("ada", enforce_csrf_checks=True).post(release_url(campaign, hold.pk))

    assert refused.status_code == 403
    assert holds_now() == before
