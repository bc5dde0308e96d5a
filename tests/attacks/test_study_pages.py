"""A study's pages, attacked over HTTP on the live server (real requests, real cookies):

* consent: a participant who skips the consent page — reloading the session, opening the
  HIT page of a task directly, posting an answer and its copy — gets no task and counts no
  answer;
* preview: the dashboard's HIT preview is for the campaign's owner only, issues no
  assignment, worker or submit token, writes nothing, and a submission made from it (or
  forged around it) is refused and stores nothing.
"""

import re
from html import unescape
from urllib.parse import urlencode

import pytest
import requests
from django.contrib.auth import get_user_model

from annotation.models import Batch, Campaign, Task
from crowd.channels.links import links
from crowd.hit_page.params import PREVIEW_ASSIGNMENT_ID
from crowd.models import HIT, Assignment, LikertLabel, TaskHold, Worker, counted
from crowd.simulation.hits import forms_parse
from tests.crowd.sessions.conftest import links_batch
from tests.factories import PropositionFactory, TopicFactory

pytestmark = [pytest.mark.attacks, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-for-tests-only"
IFRAME = re.compile(r'<iframe class="session-task" src="([^"]+)"')


@pytest.fixture
def site(live_server, settings):
    settings.SITE_URL = live_server.url
    settings.SUBMIT_RATE_PER_WORKER = settings.SUBMIT_RATE_PER_ADDRESS = 0
    return live_server.url


def _logged_in(base: str, username: str) -> requests.Session:
    get_user_model().objects.create_user(username, password=PASSWORD)
    http = requests.Session()
    page = http.get(f"{base}/accounts/login/")
    token = dict(forms_parse(page.text)["form-0"].hidden)["csrfmiddlewaretoken"]
    done = http.post(
        f"{base}/accounts/login/",
        data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token},
        headers={"Referer": f"{base}/accounts/login/"},
    )
    assert done.url == f"{base}/", done.text
    return http


def _ratings(form) -> list[tuple[str, str]]:
    return [(name, "5") for name in form.radios]


# ---- Consent --------------------------------------------------------------------------------------


def test_skipping_the_consent_page_gets_no_task_and_counts_no_answer(site):
    batch = links_batch(consent_text="Information for participants. Agree before you start.")
    link = links.link_create(campaign=batch.topic.campaign, label="Mallory")
    http = requests.Session()
    page = http.get(links.link_url(link))
    token = dict(forms_parse(page.text)["form-0"].hidden)["csrfmiddlewaretoken"]
    session = http.post(links.link_url(link), data={"csrfmiddlewaretoken": token}, headers={"Referer": page.url})
    session_url = session.url

    # Reloading the session page, however often, shows the consent page and nothing else.
    for _ in range(3):
        again = http.get(session_url)
        assert again.status_code == 200 and "Before you start" in again.text and not IFRAME.search(again.text)
    assert not TaskHold.objects.exists()

    # Going around it: the task's own page with ids the participant made up, an answer, its copy.
    task = Task.objects.filter(batch=batch).order_by("position").first()
    query = urlencode(
        {
            "assignmentId": "SMADEUP0000000000000000000000001",
            "hitId": task.hit.hit_id,
            "workerId": link.worker.external_id,
            "turkSubmitTo": session_url.rstrip("/"),
        }
    )
    hit_page = http.get(f"{site}/hit/{task.uuid}/?{query}")
    form = forms_parse(hit_page.text)["hit-form"]
    stored = http.post(f"{site}{form.action}", data=form.hidden + _ratings(form))
    copy = forms_parse(stored.text)["external-submit"]
    copied = http.post(unescape(copy.action), data=copy.hidden)
    # A consent post for a session nobody opened, and for this one without the box ticked.
    stranger = http.post(f"{site}/s/00000000-0000-4000-8000-000000000000/consent/", data={"agree": "yes"})

    # The page stores what it is sent (it cannot know the ids were made up); the session refuses the copy.
    assert stored.status_code == 200 and copied.status_code == 409
    assert list(Assignment.objects.values_list("verification", flat=True)) == ["pending"]
    assert stranger.status_code in (403, 404)
    assert not TaskHold.objects.exists()
    assert not Assignment.objects.filter(counted()).exists()
    assert not LikertLabel.objects.filter(assignment__in=Assignment.objects.filter(counted())).exists()
    assert link.worker.work_sessions.get().consented_at is None


# ---- Preview --------------------------------------------------------------------------------------


def _preview_url(base: str, campaign: Campaign, key: str, **query) -> str:
    suffix = f"?{urlencode(query)}" if query else ""
    return f"{base}/campaigns/{campaign.slug}/topics/{key}/preview/{suffix}"


def test_the_preview_is_the_owners_and_issues_nothing(site):
    batch = links_batch()
    campaign = batch.topic.campaign
    owner = _logged_in(site, "owner")
    Campaign.objects.filter(pk=campaign.pk).update(owner=get_user_model().objects.get(username="owner"))
    other = _logged_in(site, "other")
    url = _preview_url(site, campaign, batch.topic.key, batch=batch.pk, task=2)

    anonymous = requests.get(url, allow_redirects=False)
    foreign = other.get(url)
    shown = owner.get(url)

    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous.headers["Location"]
    assert foreign.status_code == 404
    assert shown.status_code == 200 and shown.headers["X-Frame-Options"] == "DENY"
    form = forms_parse(shown.text)["hit-form"]
    hidden = dict(form.hidden)
    second = Task.objects.filter(batch=batch).order_by("position")[1]
    assert form.action == f"/hit/{second.uuid}/submit/"
    assert hidden["assignmentId"] == PREVIEW_ASSIGNMENT_ID and hidden["hitId"] == second.hit.hit_id
    assert hidden["token"] == "" and hidden["workerId"] == ""
    assert shown.text.count('<fieldset class="rating" disabled>') == 5
    assert "answers cannot be sent from a preview" in shown.text  # the links channel's words, not MTurk's
    assert not Worker.objects.exists() and not Assignment.objects.exists() and not TaskHold.objects.exists()

    # Submitting what the preview shows, or the same with a made-up assignment: refused, nothing stored.
    as_shown = owner.post(f"{site}{form.action}", data=form.hidden + _ratings(form))
    forged = owner.post(
        f"{site}{form.action}",
        data=[(n, v) for n, v in form.hidden if n not in ("assignmentId", "workerId")]
        + [("assignmentId", "AFORGED0001"), ("workerId", "WFORGED0001")]
        + _ratings(form),
    )
    assert as_shown.status_code == 400 and "only a preview" in as_shown.text
    assert forged.status_code >= 400
    assert not Worker.objects.exists() and not Assignment.objects.exists()

    # Tasks that do not exist are a 404, not an error page.
    for query in ({"batch": batch.pk, "task": 99}, {"batch": 10**6}, {"task": "x"}, {"batch": "1;DROP"}):
        assert owner.get(_preview_url(site, campaign, batch.topic.key, **query)).status_code == 404


def test_before_publishing_the_preview_is_a_sample_that_builds_nothing(site):
    owner = _logged_in(site, "owner")
    campaign = Campaign.objects.create(
        slug="draft", name="Draft", channel="mturk", owner=get_user_model().objects.get(username="owner")
    )
    topic = TopicFactory(campaign=campaign, key="bees", description="why bees matter", state="importing")
    PropositionFactory.create_batch(12, topic=topic)

    shown = owner.get(_preview_url(site, campaign, "bees"))

    form = forms_parse(shown.text)["hit-form"]
    assert shown.status_code == 200 and "why bees matter" in shown.text
    assert "Accept the HIT to start" in shown.text  # MTurk's own preview words
    assert len(set(form.radios)) == 5 and dict(form.hidden)["token"] == ""
    assert not Batch.objects.exists() and not Task.objects.exists() and not HIT.objects.exists()
    posted = owner.post(f"{site}{form.action}", data=form.hidden + _ratings(form))
    assert posted.status_code == 404 and not Assignment.objects.exists()
