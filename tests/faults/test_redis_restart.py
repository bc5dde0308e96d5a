"""Redis crashes in the middle of a pass of the loop and comes back empty: no answer is lost
(they live in PostgreSQL), and the pass verifies every one, runs quality control and
advances the topic in-process, counting nothing twice.

A known failure outside the project is kept as an xfail (not strict: it is a race), to flip when fixed: the
worker does not survive the crash with a task in flight (Celery 5.7.0, acks_late, more
than one pool process), so its supervisor has to start it again (docker-compose.yml
restarts it). A pass completes and advances a batch while the broker is away (it enqueues
nothing), and with the rate-limit cache on Redis a submission while Redis is down is still
stored (the limits fail open).
"""

from datetime import timedelta

import pytest
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnreachable

from annotation.batching import likert_tasks_build
from annotation.models import Batch, Topic
from crowd.models import HIT, Assignment, LikertLabel, WorkerQuality
from crowd.simulation.hits import crowd_simulate
from crowd.work import events
from crowd.work.publishing import batch_publish, hit_url
from ranking.models import PropositionScore
from ranking.pipeline import batch_is_complete
from ranking.tasks import advance_topic, run_loop
from ranking.workflow import loop_run
from tests.crowd.conftest import TurkWorker

from .conftest import broker_unreachable, endpoint_hit_urls, wait_until, worker_sessions_waiting
from .topics import small_topic

pytestmark = [pytest.mark.faults, pytest.mark.mturk]


def test_a_loop_pass_through_a_redis_crash_recovers_every_answer_once(
    fault_redis, start_worker, row_locks, local_endpoint, monkeypatch
):
    # The pass alone meets the crash: no event step (which, since events need no loop lock,
    # would confirm the same HITs beside the pass and wait on the same row locks).
    monkeypatch.setattr(events, "_listeners", [])
    topic = small_topic(propositions=10)  # two Likert HITs of five statements, three assignments each
    likert = likert_tasks_build(topic=topic, seed=1)
    batch_publish(batch_id=likert.pk)
    crowd = crowd_simulate(
        localturk_url=f"{local_endpoint}/localturk/", workers=6, spammers=0.0, trap_blind=0.0, seed=3
    )
    assert crowd.submitted == 6
    assert set(Assignment.objects.values_list("verification", flat=True)) == {Assignment.Verification.PENDING}

    # A pass of the loop lists the answers at the marketplace, then waits for the test's lock
    # on the HITs ...
    row_locks.hold(HIT, list(HIT.objects.filter(task__batch=likert).values_list("pk", flat=True)))
    start_worker()
    run_loop.delay()
    wait_until(lambda: worker_sessions_waiting() == 1, what="the pass to wait for the HITs")
    # ... when Redis crashes, taking every queued message with it.
    fault_redis.crash()
    with pytest.raises(BrokerUnreachable):
        run_loop.delay()  # enqueueing fails loudly; nothing is silently dropped
    row_locks.release()

    # The interrupted pass needs nothing of Redis to finish: it verifies what it listed
    # (PostgreSQL holds the answers), runs quality control, advances the topic and publishes
    # its first comparison batch in-process; it enqueues nothing.
    wait_until(
        lambda: Batch.objects.filter(topic=topic, kind=Batch.Kind.COMPARISON, status=Batch.Status.PUBLISHED).exists(),
        what="the interrupted pass to run quality control and advance the topic",
    )
    topic.refresh_from_db()
    assert topic.state == Topic.State.COMPARISONS
    comparison = Batch.objects.get(topic=topic, kind=Batch.Kind.COMPARISON)
    urls = endpoint_hit_urls()  # before the next pass approves and deletes the Likert HITs
    for task in [*likert.tasks.all(), *comparison.tasks.all()]:
        assert urls.count(hit_url(task)) == 1
    assert len(urls) == likert.tasks.count() + comparison.tasks.count()

    fault_redis.start()  # same port, empty
    worker = start_worker()  # what the worker's supervisor does if it exited
    again = run_loop.delay().id  # the next pass finds nothing new to publish
    wait_until(lambda: f"run_loop[{again}] succeeded" in worker.log(), what="the next pass to finish")

    assignments = list(Assignment.objects.all())
    assert len(assignments) == 6
    assert {a.verification for a in assignments} == {Assignment.Verification.VERIFIED}
    assert LikertLabel.objects.count() == 6 * 5
    assert set(PropositionScore.objects.filter(proposition__topic=topic).values_list("likert_n", flat=True)) == {3}
    workers = {a.worker_id for a in assignments}
    assert set(WorkerQuality.objects.filter(computed_at__isnull=False).values_list("worker_id", flat=True)) == workers
    # The next pass published nothing again.
    assert Batch.objects.filter(topic=topic, kind=Batch.Kind.COMPARISON).count() == 1
    assert HIT.objects.count() == likert.tasks.count() + comparison.tasks.count()


# Not strict: the upstream bug is a race that a loaded machine (several suites at once) does
# not always lose, and an XPASS there must not fail the suite; on a quiet machine it xfails.
@pytest.mark.xfail(
    strict=False,
    reason="Celery 5.7.0/kombu 5.7.0: on losing Redis with an unacknowledged (acks_late) message and "
    "--concurrency>=2, Consumer.on_connection_error_after_connected collects the connection, then "
    "closes it; restoring the message dereferences the dropped transport client: "
    "'Unrecoverable error: AttributeError(\"'NoneType' object has no attribute 'hostname'\")', "
    "and the worker exits instead of reconnecting.",
)
def test_a_worker_survives_a_redis_crash_with_a_task_in_flight(fault_redis, start_worker, row_locks):
    topic = small_topic()
    row_locks.hold(Topic, [topic.pk])
    worker = start_worker()
    advance_topic.delay(topic.pk)
    wait_until(lambda: worker_sessions_waiting() == 1, what="advance_topic to wait for the test's lock")

    fault_redis.crash()
    fault_redis.start()
    row_locks.release()

    wait_until(
        lambda: worker.log().count("Connected to redis") == 2 or worker.process.poll() is not None,
        what="the worker to reconnect, or to exit",
    )
    assert worker.process.poll() is None, worker.log()[-3000:]


def test_a_pass_completes_and_advances_a_batch_while_the_broker_is_unreachable(local_endpoint, monkeypatch):
    topic = small_topic(propositions=5)  # one Likert HIT, three assignments
    likert = likert_tasks_build(topic=topic, seed=1)
    batch_publish(batch_id=likert.pk)
    hit = HIT.objects.get(task__batch=likert)
    for number in range(2):
        TurkWorker(local_endpoint, f"AHONEST{number:07d}").complete(hit.hit_id, score=3)
    loop_run()  # verified; quality control runs
    loop_run()  # approved; the HIT stays open, one slot untaken
    hit.refresh_from_db()
    assert not hit.complete

    # The HIT's lifetime runs out with the slot untaken: the next pass collects and completes
    # it, runs quality control and advances the topic. It enqueues nothing, so a broker outage
    # cannot leave a completed batch behind.
    later = hit.expires_at + timedelta(seconds=topic.campaign.assignment_duration_seconds, minutes=1)
    monkeypatch.setattr(timezone, "now", lambda: later)
    with broker_unreachable():
        report = loop_run()
    hit.refresh_from_db()
    assert hit.complete and batch_is_complete(likert)
    assert [step["action"] for step in report.steps] == ["likert_done"]
    topic.refresh_from_db()
    assert topic.state == Topic.State.COMPARISONS


@pytest.mark.rate_limits
def test_an_answer_submitted_while_redis_is_down_is_stored(fault_redis, local_endpoint, settings):
    settings.CACHES = {
        **settings.CACHES,
        "ratelimit": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": fault_redis.url},
    }
    topic = small_topic(propositions=5)
    likert = likert_tasks_build(topic=topic, seed=1)
    batch_publish(batch_id=likert.pk)
    fault_redis.crash()

    TurkWorker(local_endpoint, "AWORKER0000001").complete(likert.tasks.get().hit.hit_id)

    assert Assignment.objects.count() == 1
