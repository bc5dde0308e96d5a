"""Races MTurk's users meet: many workers on the last slots, a publish retried in parallel.
PostgreSQL only: the live server shares SQLite's in-memory test database between threads
through one connection, which cannot hold concurrent transactions."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from rehearsal.localturk.models import HIT, Assignment

from .conftest import hit_create

pytestmark = [
    pytest.mark.mturk,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL (make test)"),
]


def test_concurrent_accepts_fill_exactly_the_free_slots(mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id, MaxAssignments=3)
    workers = [worker_factory(f"A1WORKER{n:05d}") for n in range(12)]

    with ThreadPoolExecutor(max_workers=12) as pool:
        statuses = list(pool.map(lambda worker: worker.accept(hit["HITId"]).status_code, workers))

    assert sorted(statuses) == [200] * 3 + [409] * 9
    assert Assignment.objects.filter(status="Accepted").count() == 3
    assert mturk.get_hit(HITId=hit["HITId"])["HIT"]["HITStatus"] == "Unassignable"


def test_concurrent_retries_of_one_publish_create_one_hit(mturk_factory, hit_type_id):
    clients = [mturk_factory() for _ in range(8)]

    def publish(client):
        try:
            return hit_create(client, hit_type_id, UniqueRequestToken="task-7")["HITId"]
        except client.exceptions.RequestError as error:
            return error.response["TurkErrorCode"]

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(publish, clients))

    (hit_id,) = HIT.objects.values_list("hit_id", flat=True)
    assert outcomes.count(hit_id) == 1
    assert outcomes.count("AWS.MechanicalTurk.HitAlreadyExists") == 7
