"""A participant's session through the real pages (Django's test client): link, session
frame, the ordinary HIT page, the answer's copy back to the session, completion."""

import re
from html import unescape
from urllib.parse import urlsplit

from annotation.batching import comparison_tasks_build
from crowd.channels.links import links
from crowd.models import Assignment, LikertLabel, WorkSession
from crowd.simulation.hits import forms_parse
from crowd.work.publishing import batch_publish

from .conftest import links_batch

IFRAME = re.compile(r'<iframe class="session-task" src="([^"]+)"')


def _start(client, link, code=None):
    data = {} if code is None else {"code": code}
    page = client.get(f"/s/l/{link.token}/")
    token = dict(forms_parse(page.content.decode())["form-0"].hidden)["csrfmiddlewaretoken"]
    return client.post(f"/s/l/{link.token}/", {**data, "csrfmiddlewaretoken": token})


def _do_task(client, session_url):
    """Load the session page, do its task with 4s everywhere, send the copy; the copy's response."""
    frame = client.get(session_url)
    assert frame.status_code == 200, frame.content
    task_url = unescape(IFRAME.search(frame.content.decode()).group(1))
    page = client.get(task_url)
    form = forms_parse(page.content.decode())["hit-form"]
    ratings = [(name, "4") for name in form.radios]
    stored = client.post(form.action, dict(form.hidden + ratings))
    assert stored.status_code == 200, stored.content
    copy = forms_parse(stored.content.decode())["external-submit"]
    return frame, client.post(urlsplit(copy.action).path, dict(copy.hidden))


def test_a_participant_works_through_a_whole_session_on_an_open_link(client, db):
    batch = links_batch(tasks_per_session=3)
    link = links.link_create(campaign=batch.topic.campaign, kind="open")

    refused = _start(client, link, code="no spaces please")
    started = _start(client, link, code="P-017")

    assert refused.status_code == 400 and b"participant code" in refused.content
    assert started.status_code == 302
    session_url = started["Location"]
    for number in (1, 2, 3):
        frame, copied = _do_task(client, session_url)
        assert f"Task <strong>{number}</strong> of 3".encode() in frame.content
        assert copied.status_code == 200 and b'data-next="' in copied.content
    finished = client.get(session_url)
    assert b"You finished this session: 3 tasks done" in finished.content
    session = WorkSession.objects.get()
    # A code is one participant whatever its case (crowd.channels.links.codes): stored in lower case.
    assert session.status == WorkSession.Status.FINISHED and session.worker.external_id == f"link{link.pk}-p-017"
    answers = Assignment.objects.filter(worker=session.worker)
    assert answers.count() == 3
    assert set(answers.values_list("verification", flat=True)) == {"verified"}
    assert LikertLabel.objects.filter(worker=session.worker).count() == 15


def test_the_copy_of_a_task_not_handed_out_is_refused(client, db):
    batch = links_batch()
    link = links.link_create(campaign=batch.topic.campaign, label="Dr. Expert")
    session_url = _start(client, link)["Location"]
    client.get(session_url)

    refused = client.post(f"{session_url}mturk/externalSubmit", {"assignmentId": "SNOTHANDEDOUT"})

    assert refused.status_code == 409 and b"not handed to you" in refused.content


def test_a_revoked_link_is_closed_and_unknown_ones_are_not_found(client, db):
    batch = links_batch()
    link = links.link_create(campaign=batch.topic.campaign, label="Dr. Expert")
    links.link_revoke(link=link)

    assert client.get(f"/s/l/{link.token}/").status_code == 410
    assert client.get("/s/l/not-a-token/").status_code == 404
    assert client.get("/s/00000000-0000-0000-0000-000000000000/").status_code == 404


def test_the_personal_link_page_shows_progress(client, db):
    batch = links_batch(tasks_per_session=2)
    link = links.link_create(campaign=batch.topic.campaign, label="Dr. Expert")
    session_url = _start(client, link)["Location"]
    _do_task(client, session_url)

    page = client.get(f"/s/l/{link.token}/")

    assert b"You have done <strong>1</strong> task so far" in page.content
    assert b"Continue" in page.content


def test_a_sessions_likert_and_ordering_tasks_carry_their_own_titles(client, db):
    likert = links_batch(propositions=5, tasks_per_session=2, assignments=1)
    ids = list(likert.topic.propositions.values_list("pk", flat=True))
    ordering = comparison_tasks_build(topic=likert.topic, groups=[ids], number=1)
    batch_publish(batch_id=ordering.pk)
    link = links.link_create(campaign=likert.topic.campaign, label="Dr. Expert")
    session_url = _start(client, link)["Location"]

    first, _ = _do_task(client, session_url)
    second = client.get(session_url).content.decode()

    assert "<title>Task 1 of 2: Rate how important short statements are for a topic</title>" in (first.content.decode())
    assert "<title>Task 2 of 2: Put short statements about a topic in order of importance</title>" in second
    assert 'title="Task 2 of 2: Put short statements about a topic in order of importance"' in second
