"""N5 (issue 24): after the consent text changed, the answer to the task the participant
already held was verified without agreement to the new text. Now no answer counts unless its
participant had agreed to the text in force when it was given: the held task's answer is
refused and its place released, at the copy and at the sync alike; after agreeing again the
participant goes on with another task, whose answer counts.

Over HTTP with Django's test client, on a participant link with a consent text.
"""

from urllib.parse import urlsplit

import pytest

from crowd.models import Assignment, TaskHold, WorkSession
from crowd.sessions import holds
from crowd.simulation.hits import forms_parse
from tests.crowd.sessions.test_consent import CHANGED, IFRAME, _consent, _text_changed, _working, consent_link
from tests.crowd.sessions.test_session_pages import _do_task

pytestmark = [pytest.mark.attacks, pytest.mark.django_db]
__all__ = ["consent_link"]  # a fixture, found here by pytest

Verification = Assignment.Verification


def _answer_held(client, held: TaskHold):
    """The task page opened before the change: answer it; the response that stored it."""
    task = held.task
    query = f"assignmentId={held.assignment_id}&hitId={task.hit.hit_id}&workerId={held.session.worker.external_id}"
    query += f"&turkSubmitTo=http://testserver/s/{held.session.key}"
    page = client.get(f"/hit/{task.uuid}/?{query}")
    form = forms_parse(page.content.decode())["hit-form"]
    stored = client.post(form.action, dict(form.hidden + [(name, "4") for name in form.radios]))
    assert stored.status_code == 200
    return stored


def test_the_task_in_hand_does_not_count_after_the_text_changed(client, consent_link):
    session_url = _working(client, consent_link)
    held = TaskHold.objects.get()
    _text_changed(consent_link.campaign_id)

    stored = _answer_held(client, held)  # answered without agreeing to the new text
    copy_form = forms_parse(stored.content.decode())["external-submit"]
    copy = client.post(urlsplit(copy_form.action).path, dict(copy_form.hidden))

    assert copy.status_code == 403 and "was not counted" in copy.content.decode()
    answer = Assignment.objects.get()
    assert answer.verification == Verification.UNVERIFIED
    held.refresh_from_db()
    assert held.submitted_at is None and held.released_at is not None  # the place is free again
    assert holds.sessions_verify().counted == 0  # the sync does not count it either
    again = client.post(copy.wsgi_request.path, {"assignmentId": held.assignment_id})
    assert again.status_code == 403  # sent again: still refused
    answer.refresh_from_db()
    assert answer.verification == Verification.UNVERIFIED

    page = client.get(session_url).content.decode()
    assert "has changed since you agreed to it" in page and not IFRAME.search(page)
    _consent(client, session_url, agree="yes")
    assert WorkSession.objects.get().consent_digest == holds.consent_digest(CHANGED)

    _frame, counted = _do_task(client, session_url)  # another task, under the new text

    assert counted.status_code == 200
    second = Assignment.objects.exclude(pk=answer.pk).get()
    assert second.task_id != answer.task_id and second.verification == Verification.VERIFIED


def test_an_answer_whose_copy_never_arrived_is_not_counted_by_the_sync_after_a_change(client, consent_link):
    _working(client, consent_link)
    held = TaskHold.objects.get()
    _text_changed(consent_link.campaign_id)
    _answer_held(client, held)  # stored; its copy is never sent

    report = holds.sessions_verify()

    assert (report.counted, report.unverified) == (0, 1)
    assert Assignment.objects.get().verification == Verification.UNVERIFIED
    held.refresh_from_db()
    assert held.submitted_at is None and held.released_at is not None
