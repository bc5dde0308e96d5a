"""The clock's sweep (`state.tick`): at most once a second per process, and still on time."""

import time
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from rehearsal.localturk import marketplace, state
from rehearsal.localturk.models import HIT, Assignment

from .conftest import hit_create


@pytest.fixture
def sweeps_reset():
    """A test's own sweep clock: the next tick sweeps, and so does the first after the test."""
    state.next_tick_sweeps()
    yield
    state.next_tick_sweeps()


@pytest.mark.django_db
def test_requests_within_a_second_run_one_sweep(sweeps_reset):
    start = time.monotonic()
    with CaptureQueriesContext(connection) as first:
        assert state.tick(clock=lambda: start)
    assert first.captured_queries  # a sweep reads what is due

    with CaptureQueriesContext(connection) as within:
        swept = [state.tick(clock=lambda step=step: start + step / 10) for step in range(1, 10)]
    assert swept == [False] * 9
    assert within.captured_queries == []

    assert state.tick(clock=lambda: start + state.SWEEP_SECONDS)


def test_an_overdue_assignment_frees_its_slot_within_a_second(mturk, hit_type_id, worker_factory, sweeps_reset):
    hit = hit_create(mturk, hit_type_id, MaxAssignments=1)
    worker = worker_factory("A1WORKER00001")
    assignment_id = worker.accept(hit["HITId"]).json()["assignmentId"]
    Assignment.objects.filter(assignment_id=assignment_id).update(deadline=datetime.now(UTC))

    time.sleep(state.SWEEP_SECONDS + 0.1)  # the clock moves on: the next request sweeps
    counters = mturk.get_hit(HITId=hit["HITId"])["HIT"]

    assert (counters["NumberOfAssignmentsAvailable"], counters["NumberOfAssignmentsPending"]) == (1, 0)
    assert Assignment.objects.get(assignment_id=assignment_id).status == Assignment.Status.ABANDONED


def test_an_expired_hit_is_not_listed_before_the_sweep(mturk, hit_type_id, worker_factory, sweeps_reset):
    hit = hit_create(mturk, hit_type_id)
    assert state.tick(clock=lambda: time.monotonic() + 3600)  # swept: no sweep for the next second
    HIT.objects.update(expiration=datetime.now(UTC))

    assert marketplace.hits_for_worker("A1WORKER00001") == []
    assert HIT.objects.get(hit_id=hit["HITId"]).status == HIT.Status.ASSIGNABLE  # not swept yet
