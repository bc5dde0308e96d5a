"""N3 (issue 24): one client took every place of an open participant link — 40 invented codes,
40 sessions, 12 of the 12 places held for 1,800 s, renewable. Now an open link opens at most
LINK_SESSIONS_PER_ADDRESS live sessions (holding a place) per client address and
LINK_SESSIONS_PER_LINK in all (429 with Retry-After beyond, when a session opens and when it
takes a place), a place whose session page shows no activity for
LINK_IDLE_RELEASE_SECONDS is released (the page's heartbeat keeps it), and the Channel page
shows each place held, by whom, from where and until when.

Over HTTP with Django's test client; the clock is moved by passing `now` to the job that
releases expired places, as the sync does.
"""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from crowd.channels.links import links
from crowd.models import TaskHold, WorkSession
from crowd.sessions import holds
from tests.crowd.sessions.conftest import links_batch
from tests.crowd.sessions.test_session_pages import _start

pytestmark = [pytest.mark.attacks, pytest.mark.django_db]

ATTACKER = "198.51.100.7"
GENUINE = "203.0.113.9"


@pytest.fixture
def open_link(settings):
    settings.LINK_SESSIONS_PER_ADDRESS = 3
    settings.LINK_SESSIONS_PER_LINK = 200
    settings.LINK_IDLE_RELEASE_SECONDS = 600
    # 6 tasks, 2 answers each: 12 places, as in the report.
    batch = links_batch(propositions=30, tasks_per_session=3, assignments=2, assignment_duration_seconds=1800)
    return links.link_create(campaign=batch.topic.campaign, kind="open")


def _hoard(link, count: int = 40) -> list:
    attacker = Client(REMOTE_ADDR=ATTACKER)
    answers = []
    for n in range(count):
        answer = _start(attacker, link, code=f"INVENTED-{n}")
        if answer.status_code == 302:
            attacker.get(answer["Location"])  # the session page takes a place
        answers.append(answer)
    return answers


def test_40_invented_codes_from_one_client_open_3_sessions_and_leave_the_places(open_link):
    answers = _hoard(open_link)

    assert [answer.status_code for answer in answers] == [302] * 3 + [429] * 37
    assert all(answer["Retry-After"] == "60" for answer in answers[3:])
    assert "sessions are already open on this link from your network" in answers[-1].content.decode()
    assert WorkSession.objects.count() == 3
    assert TaskHold.objects.filter(released_at__isnull=True, submitted_at__isnull=True).count() == 3

    genuine = Client(REMOTE_ADDR=GENUINE)
    started = _start(genuine, open_link, code="P-001")
    assert started.status_code == 302
    assert 'class="session-task"' in genuine.get(started["Location"]).content.decode()


def test_a_link_s_own_cap_holds_whatever_the_addresses(open_link, settings):
    settings.LINK_SESSIONS_PER_LINK = 5
    answers = []
    for n in range(8):
        client = Client(REMOTE_ADDR=f"198.51.100.{n}")
        answer = _start(client, open_link, code=f"C{n}")
        if answer.status_code == 302:
            client.get(answer["Location"])
        answers.append(answer)

    assert [answer.status_code for answer in answers] == [302] * 5 + [429] * 3
    assert "as many participants working as it allows" in answers[-1].content.decode()


def test_sessions_opened_first_and_loaded_later_take_no_more_places(open_link):
    attacker = Client(REMOTE_ADDR=ATTACKER)
    opened = [_start(attacker, open_link, code=f"LATER-{n}")["Location"] for n in range(6)]  # nothing held yet

    pages = [attacker.get(url) for url in opened]

    assert [page.status_code for page in pages] == [200] * 3 + [429] * 3
    assert pages[-1]["Retry-After"] == "60"
    assert TaskHold.objects.count() == 3


def test_an_idle_session_loses_its_place_and_the_page_s_heartbeat_keeps_it(open_link):
    idle, alive = Client(REMOTE_ADDR=ATTACKER), Client(REMOTE_ADDR=GENUINE)
    idle.get(_start(idle, open_link, code="IDLE")["Location"])
    alive_url = _start(alive, open_link, code="ALIVE")["Location"]
    alive.get(alive_url)
    places = {hold.session.worker.external_id.split("-", 1)[1].upper(): hold for hold in TaskHold.objects.all()}
    now = timezone.now()
    assert all(hold.expires_at <= now + timedelta(seconds=601) for hold in places.values())  # not 1,800 s

    beat = alive.post(f"{alive_url}alive/")  # what static/js/session-alive.js sends
    assert beat.status_code == 204
    # Its beats go on while the page is open (the job the beat calls, with the clock moved on).
    assert holds.session_alive(places["ALIVE"].session, now=now + timedelta(seconds=500))

    released = holds.sessions_verify(now=now + timedelta(seconds=610)).released

    assert released == 1
    for hold in places.values():
        hold.refresh_from_db()
    assert places["IDLE"].released_at is not None and places["ALIVE"].released_at is None
    assert alive.post(f"/s/{places['IDLE'].session.key}/alive/").status_code == 410  # no place left to keep
    assert Client().post("/s/00000000-0000-0000-0000-000000000000/alive/").status_code == 404


def test_the_heartbeat_never_keeps_a_place_beyond_the_assignment_duration(open_link):
    client = Client(REMOTE_ADDR=GENUINE)
    session_url = _start(client, open_link, code="P-002")["Location"]
    client.get(session_url)
    hold = TaskHold.objects.get()
    session = hold.session

    for seconds in range(300, 2100, 300):  # a beat every 5 minutes for 35 minutes
        holds.session_alive(session, now=hold.held_at + timedelta(seconds=seconds))

    hold.refresh_from_db()
    assert hold.expires_at == hold.held_at + timedelta(seconds=1800)


def test_the_channel_page_shows_the_places_held_by_whom_and_until_when(open_link):
    _hoard(open_link, count=4)
    owner = get_user_model().objects.create_user("ada", password="pw-for-tests-only")
    campaign = open_link.campaign
    campaign.owner = owner
    campaign.save(update_fields=["owner"])
    researcher = Client()
    researcher.force_login(owner)

    page = researcher.get(f"/campaigns/{campaign.slug}/channel/").content.decode()

    assert "Places held now" in page
    for n in range(3):
        assert f"<td>invented-{n}</td>" in page  # codes are read without case, kept in lower case
    assert page.count(ATTACKER) == 3
    assert "LINK_IDLE_RELEASE_SECONDS" in page and "at most 3 live sessions from one network address" in page
