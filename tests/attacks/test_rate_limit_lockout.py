"""F5: worker ids are not secret, so a flood of posts carrying a victim's workerId — with no
token, or with a token the attacker had our page mint for the victim's ids — must not cost the
victim their answer. The limits count per address and per submitting page (its own signed
token); the victim's own page has its own. Over HTTP: the local MTurk endpoint, our pages."""

import time
from types import SimpleNamespace
from urllib.parse import urlencode

import pytest
import requests

from config import security
from crowd.models import HIT, Assignment
from crowd.work.publishing import batch_publish
from tests.crowd.conftest import TurkWorker
from tests.crowd.factories import likert_batch

pytestmark = [pytest.mark.attacks, pytest.mark.mturk, pytest.mark.rate_limits, pytest.mark.django_db(transaction=True)]

VICTIM = "AVICTIM0000001"


@pytest.fixture(autouse=True)
def _one_window(monkeypatch):
    """Every post of a test counts in one rate-limit window: on a loaded machine a minute's
    boundary in the middle would split the counts and hide the limit being reached."""
    frozen = time.time()
    monkeypatch.setattr(security, "time", SimpleNamespace(time=lambda: frozen))


@pytest.fixture
def local_turk(local_turk, settings):
    settings.SUBMIT_RATE_PER_WORKER = 30  # the defaults
    settings.SUBMIT_RATE_PER_ADDRESS = 600
    return local_turk


def test_a_flood_in_a_victims_name_does_not_cost_the_victim_their_answer(local_turk):
    batch = likert_batch(propositions=5, assignments_per_hit=2)
    batch_publish(batch_id=batch.pk)
    hit = HIT.objects.get(task__batch=batch)
    task = hit.task
    victim = TurkWorker(local_turk.base_url, VICTIM)
    accepted = victim.accept(hit.hit_id)

    # 31 junk posts with the victim's ids and no token, then 31 more with a token the attacker
    # had our page mint for the victim's assignment (the page signs whatever ids its URL has).
    attacker = requests.Session()
    query = {"assignmentId": accepted["assignmentId"], "hitId": hit.hit_id, "workerId": VICTIM}
    minted = attacker.get(f"{local_turk.base_url}/hit/{task.uuid}/?{urlencode(query)}")
    token = minted.text.split('name="token" value="', 1)[1].split('"', 1)[0]
    junk = [
        attacker.post(f"{local_turk.base_url}/hit/{task.uuid}/submit/", data={**query, "token": forged})
        for forged in [""] * 31 + [token] * 31
    ]
    statuses = [response.status_code for response in junk]
    assert 429 not in statuses[:31]  # without a token, nothing is counted against a submitter
    assert 429 not in statuses[31:61] and statuses[61] == 429  # the minted token's own allowance, spent

    sent = victim.external_submit(victim.store(accepted["url"], score=4))  # the victim's own page

    assert sent.status_code == 200
    stored = Assignment.objects.get(worker__external_id=VICTIM)
    assert stored.assignment_id == accepted["assignmentId"]
    assert set(stored.likert_labels.values_list("score", flat=True)) == {4}
