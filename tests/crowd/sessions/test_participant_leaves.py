"""A participant who leaves mid-session no longer stalls a topic (issue 25, point 5), over
HTTP: the researcher sees the place held (Channel page and topic card); after the idle window
the loop's pass releases it, another participant does the task, and the topic steps on."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from annotation.models import Topic
from crowd.channels.links import links
from crowd.models import TaskHold
from ranking.pipeline import topic_start
from ranking.workflow import loop_run

from .conftest import links_batch
from .test_session_pages import _do_task, _start

pytestmark = pytest.mark.django_db


def test_a_participant_who_leaves_mid_session_holds_the_topic_only_for_the_idle_window(settings):
    settings.LINK_IDLE_RELEASE_SECONDS = 600
    batch = links_batch(propositions=10, tasks_per_session=2, assignments=1, assignment_duration_seconds=3600)
    topic, campaign = batch.topic, batch.topic.campaign
    campaign.owner = get_user_model().objects.create_user("ada")
    campaign.save(update_fields=["owner"])
    topic_start(topic_id=topic.pk)
    link = links.link_create(campaign=campaign, kind="open")
    researcher = Client()
    researcher.force_login(campaign.owner)

    leaver = Client()
    session_url = _start(leaver, link, code="P-017")["Location"]
    _do_task(leaver, session_url)  # the first task done
    leaver.get(session_url)  # the second in hand; then the browser is closed
    held = TaskHold.objects.get(submitted_at__isnull=True)

    channel = researcher.get(f"/campaigns/{campaign.slug}/channel/").content.decode()
    assert f'data-hold="{held.pk}"' in channel and "<td>p-017</td>" in channel
    card = researcher.get(f"/campaigns/{campaign.slug}/").content.decode()
    assert "Waiting for 1 answer: 1 task held by participant p-017 (since" in card
    latecomer = Client()
    latecomer_url = _start(latecomer, link, code="P-018")["Location"]
    assert "No tasks available" in latecomer.get(latecomer_url).content.decode()  # the place is taken
    loop_run(now=timezone.now() + timedelta(seconds=300))  # within the window: nothing moves
    held.refresh_from_db()
    assert held.released_at is None

    loop_run(now=held.expires_at + timedelta(seconds=1))  # the window passed: the pass releases the place

    held.refresh_from_db()
    assert held.released_at is not None
    assert "No place is held now." in researcher.get(f"/campaigns/{campaign.slug}/channel/").content.decode()
    _, copied = _do_task(latecomer, latecomer_url)  # the same session page now hands the task out
    assert copied.status_code == 200
    assert TaskHold.objects.filter(task=held.task, submitted_at__isnull=False).count() == 1

    report = loop_run()

    topic.refresh_from_db()
    assert [step["topic"] for step in report.steps] == [topic.pk]
    assert topic.state != Topic.State.LIKERT
