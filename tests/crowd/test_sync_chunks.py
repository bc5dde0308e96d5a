"""A sync pass shared with Celery workers (crowd.work.chunks): every chunk worked once, by the
pass or by a worker, whether or not workers are there to take them."""

import psycopg2
import pytest
from django.db import connection
from django.utils import timezone

from config.celery import app
from crowd.models import HIT, Assignment
from crowd.tasks import sync_chunks_dispatch
from crowd.work import events, sync
from crowd.work.chunks import RUN_SLOT, Chunk, chunks_split
from crowd.work.publishing import batch_publish
from rehearsal.localturk import faults
from tests.conftest import celery_connections_reset
from tests.faults.conftest import broker_unreachable

from .chunk_worker import PASS, WORKER, ChunkWorker
from .factories import likert_batch

pytestmark = pytest.mark.mturk
Verification = Assignment.Verification


def _answered(local_turk, *, hits: int) -> list[HIT]:
    """A Likert batch of `hits` one-slot HITs, each answered through the worker's whole path."""
    batch = likert_batch(propositions=5 * hits, assignments_per_hit=1)
    batch_publish(batch_id=batch.pk)
    published = list(HIT.objects.filter(task__batch=batch).order_by("pk"))
    for hit in published:
        local_turk.worker("AWORKERONE0001").complete(hit.hit_id)
    return published


@pytest.fixture
def quiet_beat(monkeypatch):
    """The worker's beat sends no pass of its own during the test: this test runs the pass."""
    monkeypatch.setenv("E2E_SYNC_INTERVAL_SECONDS", "3600")


def test_workers_take_chunks_of_a_pass_and_each_answer_is_verified_once(
    quiet_beat, celery_worker_process, local_turk, monkeypatch
):
    celery_connections_reset(app)  # publish to the worker's Redis, not to a broker an earlier test met
    monkeypatch.setattr(sync, "SHARED_CHUNK_SIZE", 1)
    # This test runs a sync itself, outside the loop's lock: the answers filling the batch must
    # not also send the event path's sync to the worker (tests/ranking/test_events.py has that).
    monkeypatch.setattr(events, "_listeners", [])
    published = _answered(local_turk, hits=8)
    faults.inject(latency_ms=400, operations=["ListAssignmentsForHIT"])  # a chunk outlasts a worker's pickup

    report = sync.assignments_sync(dispatch=sync_chunks_dispatch)

    assert report.chunks_shared >= 1  # the worker's two pool processes took chunks off the pass
    assert (report.hits, report.verified, report.errors) == (8, 8, [])
    assert report.topic_ids == {published[0].task.batch.topic_id}
    answers = Assignment.objects.filter(task__hit__in=published)
    assert answers.count() == 8
    assert set(answers.values_list("verification", flat=True)) == {Verification.VERIFIED}
    assert not HIT.objects.filter(pk__in=[hit.pk for hit in published], last_synced_at__isnull=True).exists()


def test_a_pass_whose_broker_is_unreachable_does_every_chunk_itself(local_turk, monkeypatch):
    monkeypatch.setattr(sync, "SHARED_CHUNK_SIZE", 1)
    published = _answered(local_turk, hits=3)

    with broker_unreachable():
        report = sync.assignments_sync(dispatch=sync_chunks_dispatch)

    assert (report.hits, report.verified, report.chunks_shared) == (3, 3, 0)
    answers = Assignment.objects.filter(task__hit__in=published)
    assert set(answers.values_list("verification", flat=True)) == {Verification.VERIFIED}


def test_a_pass_does_the_chunks_of_tasks_that_never_ran(local_turk, monkeypatch):
    # A shared pass's chunks stop at SHARED_CHUNK_SIZE, below CHUNK_SIZE: a worker goes back to
    # its queues, where a step request may wait, after each one.
    monkeypatch.setattr(sync, "SHARED_CHUNK_SIZE", 2)
    published = _answered(local_turk, hits=5)
    handed: list[Chunk] = []

    def lost(chunks, now):  # enqueued, then lost with their broker
        handed.extend(chunks)
        return len(chunks)

    report = sync.assignments_sync(dispatch=lost)

    assert [chunk.index for chunk in handed] == [1, 2]
    assert sorted(hit_id for chunk in handed for hit_id in chunk.ids) == [hit.pk for hit in published[2:]]
    assert (report.hits, report.verified, report.chunks_shared) == (5, 5, 0)


def test_a_chunk_task_that_comes_after_its_pass_does_nothing(local_turk):
    published = _answered(local_turk, hits=2)

    sync.chunk_sync(chunk=Chunk(run=12345, index=1, ids=[hit.pk for hit in published]), now=timezone.now())

    answers = Assignment.objects.filter(task__hit__in=published)
    assert set(answers.values_list("verification", flat=True)) == {Verification.PENDING}


def test_a_chunk_task_works_only_while_its_pass_runs_whoever_else_probes(local_turk):
    published = _answered(local_turk, hits=2)
    chunk = Chunk(run=4242, index=1, ids=[hit.pk for hit in published])
    answers = Assignment.objects.filter(task__hit__in=published)
    settings = connection.settings_dict
    other = psycopg2.connect(
        dbname=settings["NAME"], user=settings["USER"], host=settings["HOST"], port=settings["PORT"]
    )
    other.autocommit = True
    try:
        with other.cursor() as cursor:  # another worker, probing the finished pass at this moment
            cursor.execute("SELECT pg_try_advisory_lock_shared(4242, %s)", [RUN_SLOT])
        sync.chunk_sync(chunk=chunk, now=timezone.now())
        assert set(answers.values_list("verification", flat=True)) == {Verification.PENDING}

        with other.cursor() as cursor:  # now the pass runs
            cursor.execute("SELECT pg_advisory_unlock_shared(4242, %s)", [RUN_SLOT])
            cursor.execute("SELECT pg_advisory_lock(4242, %s)", [RUN_SLOT])
        sync.chunk_sync(chunk=chunk, now=timezone.now())
        assert set(answers.values_list("verification", flat=True)) == {Verification.VERIFIED}
    finally:
        other.close()


def test_a_pass_goes_in_pass_chunks_chunks_never_below_the_floor_nor_above_the_ceiling(settings):
    settings.PASS_CHUNKS = 8
    ids = list(range(100))

    assert [len(chunk) for chunk in chunks_split(ids, floor=10, ceiling=100, shared=True)] == [13] * 7 + [9]
    assert [len(chunk) for chunk in chunks_split(ids[:24], floor=10, ceiling=100, shared=True)] == [10, 10, 4]
    assert [len(chunk) for chunk in chunks_split(ids[:9], floor=10, ceiling=100, shared=True)] == [9]
    assert [len(chunk) for chunk in chunks_split(list(range(1000)), floor=10, ceiling=100, shared=True)] == [100] * 10
    assert [len(chunk) for chunk in chunks_split(ids[:5], floor=10, ceiling=2, shared=True)] == [
        2,
        2,
        1,
    ]  # the ceiling wins
    assert [
        i for chunk in chunks_split(ids, floor=10, ceiling=100, shared=True) for i in chunk
    ] == ids  # each once, in order
    assert chunks_split([], floor=10, ceiling=100, shared=True) == []
    unshared = chunks_split(ids, floor=10, ceiling=30, shared=False)  # nobody to share with: the ceiling
    assert [len(chunk) for chunk in unshared] == [30, 30, 30, 10]


def test_a_pass_of_a_dozen_hits_is_split_so_a_worker_takes_part(local_turk, monkeypatch):
    published = _answered(local_turk, hits=12)  # default sizes: chunks of 10 and 2 HITs
    worker = ChunkWorker(lambda chunk, now: sync.chunk_sync(chunk=chunk, now=now))
    monkeypatch.setattr(sync, "_chunk_sync", worker.recorder(sync._chunk_sync))

    report = sync.assignments_sync(dispatch=worker.dispatch)
    worker.join()

    pks = [hit.pk for hit in published]
    assert [chunk.ids for chunk in worker.handed] == [pks[10:]]
    assert worker.by(WORKER) == [pks[10:]]  # the worker took the chunk handed to it
    assert worker.by(PASS) == [pks[:10]]  # and the pass did the first
    assert (report.hits, report.verified, report.chunks_shared, report.errors) == (12, 12, 1, [])
    answers = Assignment.objects.filter(task__hit__in=published)
    assert set(answers.values_list("verification", flat=True)) == {Verification.VERIFIED}
