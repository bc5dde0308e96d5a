"""Marketplace calls in parallel, bounded (crowd.work.calls): publishing and approvals make the
same calls per HIT as one after the other, never more in flight than the channel's bound over
every process, and a chunk done twice creates no second HIT and no second approval."""

import threading
import time
from decimal import Decimal as D

import psycopg2
import pytest
import requests
from django.db import connection
from django.utils import timezone

from config.celery import app
from crowd.marketplaces.base import MarketplaceUnavailable
from crowd.marketplaces.registry import get_marketplace
from crowd.models import HIT, Assignment, LedgerEntry, Worker, WorkerQuality
from crowd.tasks import chunks_dispatch
from crowd.work import ledger, publishing, sync
from crowd.work.calls import calls_run, slot_key
from crowd.work.publishing import batch_publish
from crowd.work.review import reviews_record
from crowd.work.sync import assignments_sync
from crowd.work.sync.approvals import assignments_approve
from crowd.work.sync.report import SyncReport
from rehearsal.localturk import faults
from tests.conftest import celery_connections_reset

from .chunk_worker import PASS, WORKER, ChunkWorker
from .factories import likert_batch

pytestmark = pytest.mark.mturk


def _calls(local_turk) -> dict:
    """The local endpoint's meter (rehearsal/localturk/meter.py), over HTTP."""
    response = requests.get(f"{local_turk.base_url}/localturk/_control/calls", timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


def _meter_reset(local_turk) -> None:
    assert requests.delete(f"{local_turk.base_url}/localturk/_control/calls", timeout=10).status_code == 204


@pytest.fixture
def other_connection():
    """A second database session, as another process of the deployment holds one."""
    settings = connection.settings_dict
    other = psycopg2.connect(
        dbname=settings["NAME"], user=settings["USER"], host=settings["HOST"], port=settings["PORT"]
    )
    other.autocommit = True
    yield other
    other.close()


def _slot_locks(other_connection, *, granted: bool) -> list[tuple[int, int]]:
    """(backend pid, slot) of the MTurk slot locks held (granted) or waited for, as PostgreSQL sees them."""
    with other_connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, objid::int FROM pg_locks WHERE locktype = 'advisory' AND classid = %s::oid "
            "AND objsubid = 2 AND granted = %s AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "ORDER BY pid, objid",
            [slot_key("mturk"), granted],
        )
        return cursor.fetchall()


class SlotWaiter(threading.Thread):
    """Another holder in this process: calls_run on MTurk's slots from a thread with its own session,
    each call recorded as it starts and held until `let_go`."""

    def __init__(self, name: str, events: list, *, items: int = 1):
        super().__init__(name=name, daemon=True)
        self.events, self.items = events, items
        self.calling, self.let_go, self.pid = threading.Event(), threading.Event(), None
        self.session_open = threading.Event()

    def run(self):
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                self.pid = cursor.fetchone()[0]
            self.session_open.set()
            calls_run(channel="mturk", items=range(self.items), call=self.call, done=lambda outcome: None)
        finally:
            connection.close()

    def call(self, item):
        self.events.append((self.name, "calls", item))
        self.calling.set()
        assert self.let_go.wait(30)


def _waiting_for_slots(other_connection, waiters: int) -> list[tuple[int, int]]:
    """Once `waiters` sessions block on a slot lock: (pid, slot) each waits for (lock state, not a clock)."""
    for _ in range(2000):
        waits = _slot_locks(other_connection, granted=False)
        if len(waits) == waiters:
            return waits
        time.sleep(0.01)
    raise AssertionError(f"{waiters} waiter(s) expected, PostgreSQL shows {waits}")


@pytest.mark.django_db(transaction=True)
def test_a_holder_that_finds_every_slot_held_blocks_on_one_and_calls_the_moment_it_is_let_go(
    settings, other_connection
):
    settings.MTURK_CONCURRENT_CALLS = 3
    settings.MARKETPLACE_CALLS_PER_PROCESS = 2
    key = slot_key("mturk")
    with other_connection.cursor() as cursor:  # another process has every MTurk slot
        cursor.execute("SELECT pg_advisory_lock(%s, 0), pg_advisory_lock(%s, 1), pg_advisory_lock(%s, 2)", [key] * 3)
    events: list = []
    waiter = SlotWaiter("waiter", events, items=2)
    waiter.start()

    [(pid, slot)] = _waiting_for_slots(other_connection, 1)  # blocked in PostgreSQL, not sleeping between tries

    assert (pid, slot) == (waiter.pid, 0)
    assert events == []  # no call while every slot is held
    events.append(("other process", "lets go of", slot))
    with other_connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [key, slot])
    assert waiter.calling.wait(30)
    assert events == [("other process", "lets go of", 0), ("waiter", "calls", 0)]
    assert (waiter.pid, 0) in _slot_locks(other_connection, granted=True)  # the slot let go, and only it:
    assert [lock for lock in _slot_locks(other_connection, granted=True) if lock[0] == waiter.pid] == [(waiter.pid, 0)]
    waiter.let_go.set()
    waiter.join(30)
    assert events[-1] == ("waiter", "calls", 1)  # its share of the bound is one slot: one call after the other
    assert not waiter.is_alive()
    assert _slot_locks(other_connection, granted=True) == [
        (other_connection.info.backend_pid, 1),
        (other_connection.info.backend_pid, 2),
    ]


@pytest.mark.django_db(transaction=True)
def test_holders_waiting_for_slots_spread_over_them_and_each_takes_the_free_ones(settings, other_connection):
    settings.MTURK_CONCURRENT_CALLS = 3
    settings.MARKETPLACE_CALLS_PER_PROCESS = 3
    key = slot_key("mturk")
    with other_connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s, 0), pg_advisory_lock(%s, 1), pg_advisory_lock(%s, 2)", [key] * 3)
    events: list = []
    first, second = SlotWaiter("first", events, items=3), SlotWaiter("second", events, items=3)
    first.start()
    _waiting_for_slots(other_connection, 1)
    second.start()

    waits = _waiting_for_slots(other_connection, 2)

    assert sorted(waits) == sorted([(first.pid, 0), (second.pid, 1)])  # not both behind the same holder's slot
    with other_connection.cursor() as cursor:  # the slot the second waits for, and one nobody waits for
        cursor.execute("SELECT pg_advisory_unlock(%s, 2), pg_advisory_unlock(%s, 1)", [key] * 2)
    assert second.calling.wait(30)
    held = [slot for pid, slot in _slot_locks(other_connection, granted=True) if pid == second.pid]
    assert held == [1, 2]  # its own slot, then the free one beside it
    assert [event for event in events if event[0] == "first"] == []  # still behind slot 0
    second.let_go.set()
    second.join(30)
    with other_connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s, 0)", [key])
    first.let_go.set()
    first.join(30)
    assert not first.is_alive() and not second.is_alive()
    assert sorted(events) == [("first", "calls", n) for n in range(3)] + [("second", "calls", n) for n in range(3)]
    assert _slot_locks(other_connection, granted=True) == []


class GatedCalls(SlotWaiter):
    """A holder whose every call waits for its own gate, so a test says which call ends when."""

    def __init__(self, name: str, events: list, *, items: int):
        super().__init__(name, events, items=items)
        self.gates = {item: threading.Event() for item in range(items)}
        self.started = {item: threading.Event() for item in range(items)}

    def call(self, item):
        self.events.append((self.name, "calls", item))
        self.started[item].set()
        assert self.gates[item].wait(30)


@pytest.mark.django_db(transaction=True)
def test_a_holder_short_of_its_share_takes_slots_let_go_as_its_calls_end(settings, other_connection):
    settings.MTURK_CONCURRENT_CALLS = 3
    settings.MARKETPLACE_CALLS_PER_PROCESS = 3
    key = slot_key("mturk")
    with other_connection.cursor() as cursor:  # another process has two of the three slots
        cursor.execute("SELECT pg_advisory_lock(%s, 1), pg_advisory_lock(%s, 2)", [key] * 2)
    events: list = []
    holder = GatedCalls("holder", events, items=4)
    holder.start()
    assert holder.started[0].wait(30)
    assert [slot for pid, slot in _slot_locks(other_connection, granted=True) if pid == holder.pid] == [0]

    with other_connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s, 1)", [key])  # let go while the holder's one call is out
    holder.gates[0].set()
    assert holder.started[1].wait(30) and holder.started[2].wait(30)

    assert events == [("holder", "calls", 0), ("holder", "calls", 1), ("holder", "calls", 2)]  # two out at once
    assert [slot for pid, slot in _slot_locks(other_connection, granted=True) if pid == holder.pid] == [0, 1]
    for gate in holder.gates.values():
        gate.set()
    holder.join(30)
    assert not holder.is_alive() and len(events) == 4
    assert _slot_locks(other_connection, granted=True) == [(other_connection.info.backend_pid, 2)]


def test_publishing_in_parallel_makes_one_create_call_per_hit_within_the_bound(local_turk, settings):
    settings.MTURK_CONCURRENT_CALLS = 3
    settings.MARKETPLACE_CALLS_PER_PROCESS = 8  # the channel's bound is the tighter one
    batch = likert_batch(propositions=60)  # 12 HITs
    faults.inject(latency_ms=100, operations=["CreateHITWithHITType"])  # calls overlap
    _meter_reset(local_turk)

    result = batch_publish(batch_id=batch.pk)

    meter = _calls(local_turk)
    assert result.published == 12
    # The calls of the sequential path: a balance check, one HIT type, one CreateHIT per HIT.
    assert {name: op["calls"] for name, op in meter["operations"].items()} == {
        "GetAccountBalance": 1,
        "CreateHITType": 1,
        "CreateHITWithHITType": 12,
    }
    assert 2 <= meter["peak_in_flight"] <= 3  # in parallel, never beyond the bound
    assert HIT.objects.count() == len(local_turk.hits()) == 12


def test_slots_another_process_holds_count_against_the_bound(local_turk, settings, other_connection):
    settings.MTURK_CONCURRENT_CALLS = 3
    batch = likert_batch(propositions=30)  # 6 HITs
    faults.inject(latency_ms=50, operations=["CreateHITWithHITType"])
    with other_connection.cursor() as cursor:  # another process has two MTurk calls in flight
        cursor.execute("SELECT pg_advisory_lock(%s, 0), pg_advisory_lock(%s, 2)", [slot_key("mturk")] * 2)
    _meter_reset(local_turk)

    result = batch_publish(batch_id=batch.pk)

    assert result.published == 6
    assert _calls(local_turk)["peak_in_flight"] == 1  # the one slot left


def test_a_failure_in_parallel_records_the_calls_in_flight_and_keeps_the_uncertain_one_committed(
    local_turk, monkeypatch, settings
):
    monkeypatch.setattr("crowd.marketplaces.mturk.client.MAX_ATTEMPTS", 0)  # no retry: the fault is final
    settings.MARKETPLACE_CALLS_PER_PROCESS = 3
    batch = likert_batch(propositions=15)  # three HITs at $0.35, all three calls in flight at once
    campaign = batch.topic.campaign
    faults.inject(latency_ms=100, operations=["CreateHITWithHITType"])
    faults.inject(service_fault=1, operations=["CreateHITWithHITType"])

    with pytest.raises(MarketplaceUnavailable) as failed:
        batch_publish(batch_id=batch.pk)

    assert failed.value.message.endswith(
        f"2 HITs of {batch} are out; $0.35 stays committed for what may have reached MTurk before the failure: "
        "publish again to find it, or expire the batch to release it."
    )
    assert HIT.objects.count() == len(local_turk.hits()) == 2
    assert ledger.campaign_money(campaign=campaign).committed == D("1.05")

    result = batch_publish(batch_id=batch.pk)

    assert (result.published, result.already) == (1, 2)
    assert HIT.objects.count() == len(local_turk.hits()) == 3
    assert LedgerEntry.objects.filter(kind=LedgerEntry.Kind.COMMITTED).count() == 3


def test_a_chunk_done_again_creates_no_second_hit(local_turk, monkeypatch):
    batch = likert_batch(propositions=40)  # 8 HITs
    record = publishing._hit_record
    recorded = []

    def crash_after_five(**kwargs):  # the holder dies with HITs created at MTurk but not recorded
        if len(recorded) == 5:
            raise RuntimeError("worker killed between MTurk's answer and our commit")
        recorded.append(kwargs["task"].pk)
        return record(**kwargs)

    monkeypatch.setattr(publishing, "_hit_record", crash_after_five)
    with pytest.raises(RuntimeError):
        batch_publish(batch_id=batch.pk)
    assert HIT.objects.count() == 5
    monkeypatch.setattr(publishing, "_hit_record", record)
    task_ids = list(batch.tasks.order_by("position").values_list("pk", flat=True))

    report = publishing._chunk_publish(task_ids)  # the chunk again, as a pass redoing it would
    again = publishing._chunk_publish(task_ids)

    assert (report["published"], report["error"]) == (3, None)
    assert (again["published"], again["error"]) == (0, None)
    remote_ids = sorted(hit["HITId"] for hit in local_turk.hits())
    assert len(remote_ids) == 8
    assert sorted(HIT.objects.values_list("hit_id", flat=True)) == remote_ids


def _approval_due(local_turk, *, hits: int, slots: int = 2) -> list[HIT]:
    """`hits` HITs whose every slot is answered, verified, and due for approval (QC ran)."""
    batch = likert_batch(propositions=5 * hits, assignments_per_hit=slots)
    batch_publish(batch_id=batch.pk)
    published = list(HIT.objects.filter(task__batch=batch).order_by("pk"))
    for hit in published:
        for number in range(slots):
            local_turk.worker(f"AWORKER{number:07d}").complete(hit.hit_id)
    assignments_sync()  # verified
    for worker in Worker.objects.all():
        WorkerQuality.objects.update_or_create(
            campaign=batch.topic.campaign, worker=worker, defaults={"computed_at": timezone.now()}
        )
    return published


def test_approvals_in_parallel_make_one_call_per_assignment_within_the_bound(local_turk, settings):
    settings.MTURK_CONCURRENT_CALLS = 2
    published = _approval_due(local_turk, hits=4)
    faults.inject(latency_ms=100, operations=["ApproveAssignment"])
    _meter_reset(local_turk)

    report = assignments_sync()

    meter = _calls(local_turk)
    assert report.approved == 8
    assert meter["operations"]["ApproveAssignment"]["calls"] == 8
    assert meter["peak_in_flight"] == 2
    assert set(Assignment.objects.values_list("status", flat=True)) == {Assignment.Status.APPROVED}
    assert HIT.objects.filter(pk__in=[hit.pk for hit in published], complete=True).count() == 4


def test_an_approval_pass_of_a_dozen_hits_is_split_so_a_worker_takes_part(local_turk, monkeypatch):
    published = _approval_due(local_turk, hits=12, slots=1)  # default sizes: chunks of 10 and 2 HITs
    worker = ChunkWorker(lambda chunk, now: sync.chunk_sync(chunk=chunk, now=now))
    monkeypatch.setattr(sync, "_chunk_sync", worker.recorder(sync._chunk_sync))
    _meter_reset(local_turk)

    report = sync.assignments_sync(dispatch=worker.dispatch)
    worker.join()

    pks = [hit.pk for hit in published]
    assert worker.by(WORKER) == [pks[10:]]  # the worker approved the chunk handed to it
    assert worker.by(PASS) == [pks[:10]]
    assert (report.approved, report.completed, report.chunks_shared) == (12, 12, 1)
    assert _calls(local_turk)["operations"]["ApproveAssignment"]["calls"] == 12  # one each, whoever made it
    assert set(Assignment.objects.values_list("status", flat=True)) == {Assignment.Status.APPROVED}


def test_an_approval_sent_again_is_harmless(local_turk):
    published = _approval_due(local_turk, hits=2)
    campaign = published[0].task.batch.topic.campaign
    marketplace = get_marketplace(campaign)
    due = list(Assignment.objects.select_related("worker", "task__batch__topic__campaign").order_by("pk"))

    first, _ = assignments_approve(due=due, marketplace=marketplace, channel="mturk", report=SyncReport())
    reviews_record(reviews=first)
    spent = ledger.campaign_money(campaign=campaign).spent
    balance = marketplace.balance()
    # The same approvals again, as a chunk retried after its holder died before recording them.
    _meter_reset(local_turk)
    again, failure = assignments_approve(due=due, marketplace=marketplace, channel="mturk", report=SyncReport())
    reviews_record(reviews=again)

    assert failure is None
    assert {review.status for review in first + again} == {Assignment.Status.APPROVED}
    assert len(first) == len(again) == 4
    operations = {name: op["calls"] for name, op in _calls(local_turk)["operations"].items()}
    assert operations == {"ApproveAssignment": 4, "GetAssignment": 4}  # refused, then read back: Approved
    assert ledger.campaign_money(campaign=campaign).spent == spent
    assert LedgerEntry.objects.filter(kind=LedgerEntry.Kind.SPENT).count() == 4
    assert marketplace.balance() == balance  # MTurk paid each assignment once


def test_recording_a_chunks_approvals_builds_no_model_and_books_each_once(local_turk, monkeypatch):
    """A sync records a chunk's every approval at once: from the assignments' columns, under
    their row locks, one ledger entry each, naming its assignment and worker (no model built:
    the answers' JSON is not even read)."""
    published = _approval_due(local_turk, hits=3)
    campaign = published[0].task.batch.topic.campaign
    due = list(Assignment.objects.select_related("worker").order_by("pk"))
    reviews, _ = assignments_approve(
        due=due, marketplace=get_marketplace(campaign), channel="mturk", report=SyncReport()
    )
    built: list[type] = []
    from_db = Assignment.from_db.__func__
    monkeypatch.setattr(Assignment, "from_db", classmethod(lambda cls, *args: built.append(cls) or from_db(cls, *args)))

    assert reviews_record(reviews=reviews) == 6
    assert reviews_record(reviews=reviews) == 0  # recorded already: nothing changes, nothing booked

    assert built == []
    spent = LedgerEntry.objects.filter(campaign=campaign, kind=LedgerEntry.Kind.SPENT)
    assert sorted(spent.values_list("reference", flat=True)) == sorted(
        f"assignment:{answer.assignment_id}:{answer.worker.external_id}" for answer in due
    )
    assert set(Assignment.objects.values_list("status", flat=True)) == {Assignment.Status.APPROVED}


@pytest.fixture
def quiet_beat(monkeypatch):
    """The worker's beat sends no pass of its own during the test: this test publishes."""
    monkeypatch.setenv("E2E_SYNC_INTERVAL_SECONDS", "3600")


def test_a_celery_worker_takes_chunks_of_a_publish_and_no_hit_is_doubled(
    quiet_beat, celery_worker_process, local_turk, monkeypatch, settings
):
    celery_connections_reset(app)  # publish to the worker's Redis, not to a broker an earlier test met
    monkeypatch.setattr(publishing, "CHUNK_SIZE", 2)
    settings.MARKETPLACE_CALLS_PER_PROCESS = 1
    batch = likert_batch(propositions=40)  # 8 HITs, 4 chunks
    faults.inject(latency_ms=300, operations=["CreateHITWithHITType"])  # a chunk outlasts a worker's pickup

    result = batch_publish(batch_id=batch.pk, dispatch=chunks_dispatch)

    assert result.chunks_shared >= 1  # a worker process published a chunk of this run
    assert (result.published, result.already) == (8, 0)
    remote_ids = sorted(hit["HITId"] for hit in local_turk.hits())
    assert len(remote_ids) == 8
    assert sorted(HIT.objects.values_list("hit_id", flat=True)) == remote_ids


def test_a_publish_of_a_dozen_tasks_is_split_so_a_worker_takes_part(local_turk, monkeypatch):
    batch = likert_batch(propositions=60)  # 12 tasks; default sizes: chunks of 10 and 2
    worker = ChunkWorker(lambda chunk, now: publishing.chunk_publish(chunk=chunk))
    monkeypatch.setattr(publishing, "_chunk_publish", worker.recorder(publishing._chunk_publish))

    result = batch_publish(batch_id=batch.pk, dispatch=worker.dispatch)
    worker.join()

    task_ids = list(batch.tasks.order_by("position").values_list("pk", flat=True))
    assert worker.by(WORKER) == [task_ids[10:]]  # the worker published the chunk handed to it
    assert worker.by(PASS) == [task_ids[:10]]
    assert (result.published, result.already, result.chunks_shared) == (12, 0, 1)
    remote_ids = sorted(hit["HITId"] for hit in local_turk.hits())
    assert len(remote_ids) == 12
    assert sorted(HIT.objects.values_list("hit_id", flat=True)) == remote_ids
