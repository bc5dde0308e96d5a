"""A researcher releases a participant's held place on the Channel page (issue 25, point 5),
over HTTP: the task is free for the next participant at once, and the answer its first holder
still sends is counted once if the task still needs it, or refused with a clear message and
counted nowhere (crowd.sessions.holds.released_answer_fits; RELIABILITY.md)."""

from html import unescape
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.members import member_set
from crowd.channels.links import links
from crowd.models import Assignment, TaskHold
from crowd.sessions import holds
from crowd.simulation.hits import forms_parse

from .conftest import links_batch
from .test_session_pages import IFRAME, _do_task, _start

pytestmark = pytest.mark.django_db
Verification = Assignment.Verification


@pytest.fixture
def world():
    """Two tasks, one answer each, two tasks a session; Ada owns the campaign, Eve edits it."""
    batch = links_batch(propositions=10, tasks_per_session=2, assignments=1)
    campaign = batch.topic.campaign
    users = get_user_model().objects
    campaign.owner = users.create_user("ada")
    campaign.save(update_fields=["owner"])
    member_set(campaign_id=campaign.pk, username=users.create_user("eve").username, role="edit", by=campaign.owner)
    return campaign, links.link_create(campaign=campaign, kind="open", label="lab")


def researcher(username: str) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


def _task_in_hand(client, link, code):
    """A participant opens their session and the task's page, and rates without sending yet."""
    session_url = _start(client, link, code=code)["Location"]
    frame = client.get(session_url)
    form = forms_parse(client.get(unescape(IFRAME.search(frame.content.decode()).group(1))).content.decode())
    return session_url, form["hit-form"]


def _send(client, form):
    """What the task page does on Submit: store the answer, then post its copy to the session."""
    stored = client.post(form.action, dict(form.hidden + [(name, "4") for name in form.radios]))
    copy = forms_parse(stored.content.decode())["external-submit"]
    return client.post(urlsplit(copy.action).path, dict(copy.hidden))


def _release(client, campaign, hold):
    return client.post(f"/campaigns/{campaign.slug}/holds/{hold.pk}/release/", follow=True)


def test_the_channel_page_offers_release_beside_each_hold_and_the_task_is_free_at_once(world):
    campaign, link = world
    first = Client()
    session_url, _ = _task_in_hand(first, link, "P-017")
    hold = TaskHold.objects.get()
    page = researcher("eve").get(f"/campaigns/{campaign.slug}/channel/").content.decode()
    assert f'action="/campaigns/{campaign.slug}/holds/{hold.pk}/release/"' in page

    released = _release(researcher("eve"), campaign, hold)

    assert (
        f"Place released: {hold.task.batch.topic.key} · task {hold.task.position} is free" in released.content.decode()
    )
    hold.refresh_from_db()
    assert hold.released_at is not None and hold.released_by == "eve"
    assert first.post(f"{session_url}alive/").status_code == 410  # the page's notice shows
    other = Client()
    _task_in_hand(other, link, "P-018")
    assert TaskHold.objects.filter(session__worker__external_id__endswith="p-018").get().task == hold.task


def test_an_answer_to_a_released_task_that_still_needs_it_counts_once(world):
    campaign, link = world
    participant = Client()
    session_url, form = _task_in_hand(participant, link, "P-017")
    hold = TaskHold.objects.get()
    _release(researcher("ada"), campaign, hold)

    copied = _send(participant, form)

    assert copied.status_code == 200
    answer = Assignment.objects.get()
    assert answer.verification == Verification.VERIFIED and answer.task == hold.task
    # Their session goes on with the other task, never the released one again.
    _do_task(participant, session_url)
    assert TaskHold.objects.filter(session=hold.session).exclude(task=hold.task).count() == 1
    assert Assignment.objects.filter(task=hold.task, verification=Verification.VERIFIED).count() == 1


def test_an_answer_to_a_released_task_given_to_someone_else_is_refused_clearly_and_counts_nowhere(world):
    campaign, link = world
    first = Client()
    session_url, form = _task_in_hand(first, link, "P-017")
    hold = TaskHold.objects.get()
    _release(researcher("ada"), campaign, hold)
    second = Client()
    _, copied = _do_task(second, _start(second, link, code="P-018")["Location"])  # takes and answers it
    assert copied.status_code == 200

    late = _send(first, form)

    assert late.status_code == 409
    text = late.content.decode()
    assert "The researcher released this task while you had it" in text and "not counted" in text
    assert f'href="{session_url}"' in text  # on to their next task
    verdicts = dict(Assignment.objects.filter(task=hold.task).values_list("worker__external_id", "verification"))
    assert verdicts == {
        f"link{link.pk}-p-017": Verification.UNVERIFIED,  # kept, counted nowhere
        f"link{link.pk}-p-018": Verification.VERIFIED,
    }
    assert Assignment.objects.filter(task=hold.task, verification=Verification.VERIFIED).count() == 1
    hold.refresh_from_db()
    assert hold.submitted_at is None  # not one of the session's tasks done
    # Sent again (a reload of the copy), still refused; the sync's check agrees.
    assert _send(first, form).status_code == 409
    assert Assignment.objects.filter(task=hold.task, verification=Verification.VERIFIED).count() == 1


def test_a_copy_that_never_arrived_is_judged_by_the_same_rule_at_sync(world):
    campaign, link = world
    first = Client()
    _, form = _task_in_hand(first, link, "P-017")
    hold = TaskHold.objects.get()
    _release(researcher("ada"), campaign, hold)
    second = Client()
    _do_task(second, _start(second, link, code="P-018")["Location"])
    first.post(form.action, dict(form.hidden + [(name, "4") for name in form.radios]))  # stored, copy lost

    report = holds.sessions_verify(campaign_ids=[campaign.pk])

    assert report.unverified == 1 and report.counted == 0
    assert Assignment.objects.filter(task=hold.task, verification=Verification.VERIFIED).count() == 1
