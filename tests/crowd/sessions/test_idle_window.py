"""The idle window of a campaign's participant links (issue 24 N3, issue 25 point 5), set on the
Channel page at any time (crowd.sessions.holds.link_idle_set): bounded and validated, used by
the release of idle places, and the pages' wording follows it."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.members import member_set
from crowd.channels.links import links
from crowd.models import TaskHold
from crowd.sessions import holds

from .conftest import links_batch
from .test_session_pages import _start

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(settings):
    settings.LINK_IDLE_RELEASE_SECONDS = 600
    batch = links_batch(propositions=10, tasks_per_session=2, assignments=1, assignment_duration_seconds=3600)
    campaign = batch.topic.campaign  # published: the window may change all the same
    campaign.owner = get_user_model().objects.create_user("ada")
    campaign.save(update_fields=["owner"])
    owner = Client()
    owner.force_login(campaign.owner)
    return campaign, links.link_create(campaign=campaign, kind="open"), owner


def _set(client, campaign, minutes):
    return client.post(f"/campaigns/{campaign.slug}/channel/idle/", {"idle_minutes": minutes})


def test_a_campaign_s_own_window_releases_its_idle_places_and_the_pages_say_so(world):
    campaign, link, owner = world
    assert _set(owner, campaign, "5").status_code == 302
    campaign.refresh_from_db()
    assert campaign.link_idle_seconds == 300

    channel = owner.get(f"/campaigns/{campaign.slug}/channel/").content.decode()
    assert 'data-idle-minutes="5"' in channel and "this campaign's window" in channel
    assert 'data-idle-minutes="5"' in Client().get(f"/s/l/{link.token}/").content.decode()
    participant = Client()
    frame = participant.get(_start(participant, link, code="P-017")["Location"]).content.decode()
    assert 'data-seconds="100"' in frame  # the heartbeat beats three times a window
    hold = TaskHold.objects.get()
    assert hold.expires_at == hold.held_at + timedelta(seconds=300)  # not the deployment's 600

    assert holds.sessions_verify(now=hold.held_at + timedelta(seconds=299)).released == 0
    assert holds.sessions_verify(now=hold.held_at + timedelta(seconds=301)).released == 1


def test_an_empty_window_is_the_deployment_s_again(world):
    campaign, _, owner = world
    _set(owner, campaign, "5")

    assert _set(owner, campaign, "").status_code == 302

    campaign.refresh_from_db()
    assert campaign.link_idle_seconds is None
    channel = owner.get(f"/campaigns/{campaign.slug}/channel/").content.decode()
    assert 'data-idle-minutes="10"' in channel and "LINK_IDLE_RELEASE_SECONDS" in channel


@pytest.mark.parametrize("minutes", ["1", "1441", "ten", "-5", "2.5"])
def test_a_window_out_of_bounds_is_refused_on_its_field_and_nothing_changes(world, minutes):
    campaign, _, owner = world
    _set(owner, campaign, "30")

    refused = _set(owner, campaign, minutes)

    assert refused.status_code == 400
    assert refused.context["idle_form"].errors["idle_minutes"]
    assert 'id="id_idle_minutes_error"' in refused.content.decode() or "errorlist" in refused.content.decode()
    campaign.refresh_from_db()
    assert campaign.link_idle_seconds == 1800


def test_a_viewer_cannot_change_the_window(world):
    campaign, _, _ = world
    viewer = get_user_model().objects.create_user("vic")
    member_set(campaign_id=campaign.pk, username="vic", role="view", by=campaign.owner)
    client = Client()
    client.force_login(viewer)

    assert _set(client, campaign, "5").status_code == 403
    assert (
        'action="/campaigns/' + campaign.slug + '/channel/idle/"'
        not in client.get(f"/campaigns/{campaign.slug}/channel/").content.decode()
    )
    campaign.refresh_from_db()
    assert campaign.link_idle_seconds is None
