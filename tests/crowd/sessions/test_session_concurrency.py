"""Participants arriving at once, each on its own connection: no task gets more holders
than it needs answers, and nobody holds the same task twice."""

import threading
from collections import Counter

import pytest
from django.db import connection

from crowd.channels.links import links
from crowd.models import TaskHold
from crowd.sessions import holds

from .conftest import links_batch

PARTICIPANTS = 12


@pytest.mark.django_db(transaction=True)
def test_simultaneous_arrivals_never_overfill_a_task():
    if connection.vendor != "postgresql":
        pytest.skip("threads on separate connections need PostgreSQL; `make test` runs this on PostgreSQL")
    batch = links_batch(propositions=20, tasks_per_session=4, assignments=3)  # 4 tasks × 3 slots = 12 holds
    link = links.link_create(campaign=batch.topic.campaign, kind="open")
    start = threading.Barrier(PARTICIPANTS)
    errors = []

    def participant(number):
        try:
            worker = holds.session_worker(channel="links", external_id=f"link{link.pk}-p{number}")
            session = holds.link_session_open(link=link, worker=worker)
            start.wait()
            holds.hold_next(session)
        except Exception as error:  # reported below, with the others
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=participant, args=(n,)) for n in range(PARTICIPANTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert not errors
    held = Counter(TaskHold.objects.values_list("task_id", flat=True))
    assert sum(held.values()) == PARTICIPANTS  # every slot handed out, to someone
    assert set(held.values()) == {3}  # and no task beyond its three
    per_worker = Counter(TaskHold.objects.values_list("session__worker_id", "task_id"))
    assert max(per_worker.values()) == 1
