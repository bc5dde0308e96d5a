"""Races MTurk's users meet: many workers on the last slots, a publish retried in parallel,
approvals sent twice at once.
PostgreSQL only: the live server shares SQLite's in-memory test database between threads
through one connection, which cannot hold concurrent transactions."""

from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest
from django.db import connection

from rehearsal.localturk.models import HIT, Assignment, Requester

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


def test_concurrent_approvals_pay_each_assignment_once_and_count_it_once(mturk_factory, hit_type_id, worker_factory):
    hit = hit_create(mturk_factory(), hit_type_id, MaxAssignments=3)
    assignment_ids = [worker_factory(f"A1WORKER{n:05d}").complete(hit["HITId"]) for n in range(3)]
    balance = Requester.objects.get().balance
    clients = [mturk_factory(attempts=1) for _ in range(12)]

    def approve(pair):
        client, assignment_id = pair
        try:
            client.approve_assignment(AssignmentId=assignment_id)
            return "approved"
        except client.exceptions.RequestError as error:
            return error.response["TurkErrorCode"]

    with ThreadPoolExecutor(max_workers=12) as pool:  # each assignment approved by four clients at once
        outcomes = list(pool.map(approve, [(client, assignment_ids[n % 3]) for n, client in enumerate(clients)]))

    assert outcomes.count("approved") == 3
    assert outcomes.count("AWS.MechanicalTurk.InvalidAssignmentState") == 9
    assert Requester.objects.get().balance == balance - 3 * Decimal("0.07")  # $0.06 + the $0.01 minimum fee
    stored = HIT.objects.get(hit_id=hit["HITId"])
    assert (stored.completed, Assignment.objects.filter(status="Approved").count()) == (3, 3)
