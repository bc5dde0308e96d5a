"""The study's information and consent page (crowd.sessions.views, crowd.sessions.holds): a
campaign with a consent text shows it before a session's first task, hands out no task until
the participant agreed, and records when; a campaign without one starts at once."""

import csv
import io
import re
import zipfile
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.models import Campaign, Topic
from crowd.channels.links import links
from crowd.models import TaskHold, WorkSession
from crowd.sessions import holds
from crowd.simulation.hits import forms_parse
from ranking.export import raw_label_rows

from .conftest import links_batch
from .test_session_pages import _do_task

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


# ---- Which text was agreed to: a changed text is asked again ------------------------------------

CHANGED = CONSENT + "\n\nNew: your answers are kept for ten years."


def _working(client, link) -> str:
    """A participant who agreed and holds their first task; their session's address."""
    session_url = _start(client, link)
    _consent(client, session_url, agree="yes")
    assert IFRAME.search(client.get(session_url).content.decode())
    return session_url


def _text_changed(campaign_id: int, text: str = CHANGED) -> None:
    Campaign.objects.filter(pk=campaign_id).update(consent_text=text)


def test_the_session_records_the_version_of_the_text_it_agreed_to(client, consent_link):
    _working(client, consent_link)

    session = WorkSession.objects.get()
    assert session.consent_digest == holds.consent_digest(CONSENT) and len(session.consent_digest) == 64
    # The version is the text as read: line endings and surrounding white space do not count.
    assert holds.consent_digest(f"  {CONSENT.replace(chr(10), chr(13) + chr(10))}\n") == session.consent_digest
    assert holds.consent_digest("   ") == "" and holds.consent_digest(CHANGED) != session.consent_digest


def test_a_text_changed_after_agreeing_is_asked_again_before_the_next_task(client, consent_link):
    session_url = _working(client, consent_link)
    first = WorkSession.objects.get().consented_at
    _text_changed(consent_link.campaign_id)
    TaskHold.objects.update(expires_at=timezone.now() - timedelta(seconds=1))  # the task in hand ran out

    page = client.get(session_url)

    html = page.content.decode()
    assert "has changed since you agreed to it" in html and "kept for ten years" in html
    assert not IFRAME.search(html) and TaskHold.objects.count() == 1  # no new task
    with pytest.raises(holds.ConsentRequired):
        holds.hold_next(WorkSession.objects.get())

    agreed = _consent(client, session_url, agree="yes")

    session = WorkSession.objects.get()
    assert agreed.status_code == 302 and session.consent_digest == holds.consent_digest(CHANGED)
    assert session.consented_at > first
    assert IFRAME.search(client.get(session_url).content.decode()) and TaskHold.objects.count() == 2


def test_an_agreement_to_a_text_changed_while_the_page_was_open_is_not_recorded(client, consent_link):
    session_url = _start(client, consent_link)
    form = forms_parse(client.get(session_url).content.decode())["form-0"]
    assert dict(form.hidden)["consent"] == holds.consent_digest(CONSENT)
    _text_changed(consent_link.campaign_id)

    stale = client.post(form.action, {**dict(form.hidden), "agree": "yes"})

    assert stale.status_code == 400 and "changed while this page was open" in stale.content.decode()
    assert "kept for ten years" in stale.content.decode()  # the page shows the new text
    session = WorkSession.objects.get()
    assert session.consented_at is None and session.consent_digest == "" and not TaskHold.objects.exists()


@pytest.mark.parametrize(
    "forged",
    ["", "0" * 64, "not-a-digest", "<script>alert(1)</script>", "x" * 10_000],
    ids=["missing", "zeros", "junk", "markup", "huge"],
)
def test_a_forged_version_records_no_agreement(client, consent_link, forged):
    session_url = _start(client, consent_link)
    key = session_url.rstrip("/").split("/")[-1]

    response = client.post(f"/s/{key}/consent/", {"agree": "yes", "consent": forged})

    assert response.status_code == 400 and "<script>alert(1)</script>" not in response.content.decode()
    session = WorkSession.objects.get()
    assert session.consented_at is None and session.consent_digest == "" and not TaskHold.objects.exists()


def test_a_forged_session_key_agrees_to_nothing(client, consent_link):
    _start(client, consent_link)
    digest = holds.consent_digest(CONSENT)

    response = client.post("/s/00000000-0000-4000-8000-000000000000/consent/", {"agree": "yes", "consent": digest})

    assert response.status_code == 404
    assert WorkSession.objects.get().consent_digest == ""


def test_the_participants_table_shows_which_version_each_participant_agreed_to(client, consent_link, django_user_model):
    _working(client, consent_link)
    campaign = consent_link.campaign
    late = links.link_create(campaign=campaign, label="Late")
    _text_changed(campaign.pk)
    _working(Client(), late)
    campaign.refresh_from_db()

    rows = {row.participant: row for row in links.participants(campaign=campaign)}
    owner = django_user_model.objects.create_user("owner-of-consent")
    Campaign.objects.filter(pk=campaign.pk).update(owner=owner)
    researcher = Client()
    researcher.force_login(owner)
    page = researcher.get(f"/campaigns/{campaign.slug}/channel/").content.decode()

    assert rows["Ada"].consent_version == holds.consent_digest(CONSENT)[:12] and not rows["Ada"].consent_current
    assert rows["Late"].consent_version == holds.consent_digest(CHANGED)[:12] and rows["Late"].consent_current
    assert f"text {rows['Ada'].consent_version}, an earlier one: asked again before their next task" in page
    assert f"text {rows['Late'].consent_version}, the current one" in page


# ---- Which text was agreed to, in the exports ------------------------------------------------------

LABEL_HEADER = (
    "kind,topic,proposition_id,worker,assignment,submitted_at,score,excluded,"
    "winner_id,loser_id,untouched,shown_order,consent_version"
)


def _csv(response) -> list[dict]:
    content = response.content if hasattr(response, "content") else b"".join(response.streaming_content)
    return list(csv.DictReader(io.StringIO(content.decode(), newline="")))


def test_the_exports_say_which_version_each_link_and_answer_was_given_under(client, consent_link, django_user_model):
    _do_task(client, _working(client, consent_link))  # Ada agreed to the first text
    campaign = consent_link.campaign
    late = links.link_create(campaign=campaign, label="Late")
    links.link_create(campaign=campaign, label="Si")  # never used
    _text_changed(campaign.pk)
    late_client = Client()
    _do_task(late_client, _working(late_client, late))  # Late agreed to the changed one
    owner = django_user_model.objects.create_user("owner-of-exports")
    Campaign.objects.filter(pk=campaign.pk).update(owner=owner)
    researcher = Client()
    researcher.force_login(owner)
    topic = Topic.objects.get(campaign=campaign)

    listing = researcher.get(f"/campaigns/{campaign.slug}/links.csv")
    labels = researcher.get(reverse("ranking:labels-download", args=[campaign.slug, topic.key]))
    bundle = researcher.get(reverse("ranking:campaign-bundle", args=[campaign.slug]))

    first, changed = holds.consent_digest(CONSENT)[:12], holds.consent_digest(CHANGED)[:12]
    assert listing.content.decode().splitlines()[0] == "label,kind,url,revoked,consent_version"
    assert {row["label"]: row["consent_version"] for row in _csv(listing)} == {"Ada": first, "Late": changed, "Si": ""}
    assert labels.content.decode().splitlines()[0] == LABEL_HEADER  # appended: every other column keeps its place
    by_worker = {f"link{consent_link.pk}": first, f"link{late.pk}": changed}
    rows = _csv(labels)
    assert len(rows) == 10 and all(row["consent_version"] == by_worker[row["worker"]] for row in rows)
    archive = zipfile.ZipFile(io.BytesIO(b"".join(bundle.streaming_content)))
    [name] = [name for name in archive.namelist() if name.endswith("-labels.csv")]
    zipped = list(csv.DictReader(io.StringIO(archive.read(name).decode(), newline="")))
    assert archive.read(name).decode().splitlines()[0] == LABEL_HEADER and zipped == rows


def test_an_answer_to_a_task_handed_out_before_agreeing_again_has_no_version(client, consent_link):
    """Its participant started it under the earlier text, whose version the session no longer keeps."""
    session_url = _working(client, consent_link)
    _text_changed(consent_link.campaign_id)
    _consent(client, session_url, agree="yes")  # asked again, for the next task
    _do_task(client, session_url)  # the task held under the first text
    topic = Topic.objects.get(campaign_id=consent_link.campaign_id)

    rows = list(raw_label_rows(topic=topic))

    assert len(rows) == 5 and {row["consent_version"] for row in rows} == {""}
