"""The study's information and consent page (crowd.sessions.views, crowd.sessions.holds): a
campaign with a consent text shows it before a session's first task, hands out no task until
the participant agreed, and records when; a campaign without one starts at once."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Campaign
from crowd.models import TaskHold, WorkSession
from crowd.sessions import holds, links
from crowd.simulation.hits import forms_parse

from .conftest import links_batch

CONSENT = "This study is run by the Lab of Examples.\n\nYou may stop at any time."
IFRAME = re.compile(r'<iframe class="session-task" src="([^"]+)"')


def _start(client, link):
    page = client.get(f"/s/l/{link.token}/")
    token = dict(forms_parse(page.content.decode())["form-0"].hidden)["csrfmiddlewaretoken"]
    started = client.post(f"/s/l/{link.token}/", {"csrfmiddlewaretoken": token})
    assert started.status_code == 302
    return started["Location"]


def _consent(client, session_url, **data):
    page = client.get(session_url)
    form = forms_parse(page.content.decode())["form-0"]
    return client.post(form.action, {**dict(form.hidden), **data})


@pytest.fixture
def consent_link(db):
    batch = links_batch(consent_text=CONSENT)
    return links.link_create(campaign=batch.topic.campaign, label="Ada")


def test_the_consent_page_comes_before_any_task_and_agreeing_records_the_time(client, consent_link):
    session_url = _start(client, consent_link)

    page = client.get(session_url)
    again = client.get(session_url)  # reloading hands out nothing either

    html = page.content.decode()
    assert page.status_code == 200 and "Before you start" in html
    assert "<p>This study is run by the Lab of Examples.</p>\n\n<p>You may stop at any time.</p>" in html
    assert "If you do not agree, just close this page" in html
    assert not IFRAME.search(html) and not IFRAME.search(again.content.decode())
    assert not TaskHold.objects.exists()
    assert WorkSession.objects.get().consented_at is None

    before = timezone.now()
    agreed = _consent(client, session_url, agree="yes")

    session = WorkSession.objects.get()
    assert agreed.status_code == 302 and agreed["Location"] == session_url
    assert before <= session.consented_at <= timezone.now()
    frame = client.get(session_url)
    assert IFRAME.search(frame.content.decode()) and TaskHold.objects.count() == 1


def test_not_ticking_the_box_shows_the_page_again_and_records_nothing(client, consent_link):
    session_url = _start(client, consent_link)

    response = _consent(client, session_url)

    assert response.status_code == 400 and "Tick the box to agree" in response.content.decode()
    assert WorkSession.objects.get().consented_at is None and not TaskHold.objects.exists()


def test_agreeing_twice_keeps_the_first_time(client, consent_link):
    session_url = _start(client, consent_link)
    _consent(client, session_url, agree="yes")
    first = WorkSession.objects.get().consented_at

    key = session_url.rstrip("/").split("/")[-1]
    client.post(f"/s/{key}/consent/", {"agree": "yes"})

    assert WorkSession.objects.get().consented_at == first


def test_without_a_consent_text_the_first_task_comes_at_once(client, db):
    batch = links_batch()
    link = links.link_create(campaign=batch.topic.campaign, label="Bo")

    frame = client.get(_start(client, link))

    assert IFRAME.search(frame.content.decode())
    assert WorkSession.objects.get().consented_at is None  # nothing was asked, nothing recorded


def test_no_task_is_handed_out_before_consent_whoever_asks(db):
    batch = links_batch(consent_text=CONSENT)
    link = links.link_create(campaign=batch.topic.campaign, label="Cy")
    session = holds.link_session_open(link=link, worker=link.worker)

    with pytest.raises(holds.ConsentRequired):
        holds.hold_next(session)
    holds.session_consent(session)

    assert holds.hold_next(session) is not None


def test_a_consent_text_added_later_is_asked_before_the_next_task(client, db):
    batch = links_batch()
    link = links.link_create(campaign=batch.topic.campaign, label="Di")
    session_url = _start(client, link)
    client.get(session_url)  # the first task is handed out
    Campaign.objects.filter(pk=batch.topic.campaign_id).update(consent_text=CONSENT)
    TaskHold.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    page = client.get(session_url)

    assert "Before you start" in page.content.decode() and TaskHold.objects.count() == 1
