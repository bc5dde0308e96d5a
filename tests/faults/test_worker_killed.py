"""A Celery worker killed in the middle of a pipeline step: the step runs again, and exactly
one new comparison batch is created and published, once.

The test stops `advance_topic` where it wants it with a row lock held from a second
connection: on the topic (the step waits before it starts), or on one of the scores the refit
writes (the step has marked the answered batch complete and refitted the ratings, and holds
the topic's lock — all uncommitted). Then it kills the process running the step.
"""

import os
import random
import signal

import pytest

from annotation.models import Batch, Topic
from crowd.models import HIT
from crowd.work.publishing import hit_url
from ranking.models import PropositionScore, RankingSnapshot
from ranking.tasks import advance_topic

from .conftest import endpoint_hit_urls, wait_until, worker_sessions_waiting
from .topics import topic_ready_for_refit

pytestmark = [pytest.mark.faults, pytest.mark.mturk]


def _lock_where(row_locks, topic: Topic, stop_at: str) -> None:
    if stop_at == "topic":
        row_locks.hold(Topic, [topic.pk])
    else:
        score = PropositionScore.objects.filter(proposition__topic=topic, in_comparisons=True).first()
        row_locks.hold(PropositionScore, [score.pk])


def _assert_refitted_once_and_published_once(topic: Topic, hits_before: list[str]) -> None:
    batches = list(Batch.objects.filter(topic=topic, kind=Batch.Kind.COMPARISON).order_by("number"))
    assert [(batch.number, batch.status) for batch in batches] == [
        (1, Batch.Status.COMPLETE),
        (2, Batch.Status.PUBLISHED),
    ]
    assert RankingSnapshot.objects.filter(topic=topic).count() == 1  # the killed run's refit was rolled back
    tasks = list(batches[1].tasks.all())
    hits_after = endpoint_hit_urls()
    assert len(hits_after) == len(hits_before) + len(tasks)
    for task in tasks:
        assert hits_after.count(hit_url(task)) == 1
    assert HIT.objects.filter(task__batch=batches[1]).count() == len(tasks)


@pytest.mark.parametrize("stop_at", ["topic", "refit"])
def test_a_pool_process_killed_mid_step_is_replaced_and_the_step_runs_once(start_worker, row_locks, stop_at):
    topic = topic_ready_for_refit(random.Random(1))
    hits_before = endpoint_hit_urls()
    _lock_where(row_locks, topic, stop_at)
    worker = start_worker()

    task_id = advance_topic.delay(topic.pk).id
    wait_until(lambda: worker_sessions_waiting() == 1, what="advance_topic to wait for the test's lock")
    victim = wait_until(lambda: worker.executing(task_id), what="the pool process running advance_topic")
    assert victim in worker.children() and victim != worker.pid
    os.kill(victim, signal.SIGKILL)

    # acks_late + reject_on_worker_lost: the main process puts the message back at once.
    rerun = wait_until(lambda: worker.executing(task_id) not in (None, victim), what="advance_topic to run again")
    assert rerun
    # The new run waits too: for the test's lock, or for the dead run's session, which holds
    # the topic until it finds its client gone.
    wait_until(lambda: worker_sessions_waiting() == 2, what="the new run to wait behind the dead one")
    row_locks.release()

    wait_until(
        lambda: Batch.objects.filter(topic=topic, number=2, status=Batch.Status.PUBLISHED).exists(),
        what="comparison batch 2 to be published",
    )
    wait_until(worker.idle, what="the worker to finish")
    _assert_refitted_once_and_published_once(topic, hits_before)


def test_a_whole_worker_killed_mid_refit_hands_the_step_to_the_next_worker(start_worker, row_locks):
    topic = topic_ready_for_refit(random.Random(2))
    hits_before = endpoint_hit_urls()
    _lock_where(row_locks, topic, "refit")
    first = start_worker()

    task_id = advance_topic.delay(topic.pk).id
    wait_until(lambda: worker_sessions_waiting() == 1, what="advance_topic to wait for the test's lock")
    first.kill()
    row_locks.release()
    wait_until(lambda: worker_sessions_waiting() == 0, what="the dead worker's session to roll back")
    assert not Batch.objects.filter(topic=topic, number=2).exists()

    # Nobody acknowledged the message: Redis hands it to the next worker once its visibility
    # timeout has passed (an hour by default; two seconds here).
    second = start_worker(FAULTS_VISIBILITY_TIMEOUT="2")
    wait_until(
        lambda: Batch.objects.filter(topic=topic, number=2, status=Batch.Status.PUBLISHED).exists(),
        what="the next worker to run the step and publish batch 2",
    )
    wait_until(second.idle, what="the worker to finish")
    assert task_id in second.log()
    _assert_refitted_once_and_published_once(topic, hits_before)
