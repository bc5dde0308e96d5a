"""The MTurk endpoint throttling and failing for longer than botocore retries: the Celery
tasks retry with backoff on a real worker, the publish and the sync complete, and no HIT is
created twice.

botocore's own retries (10 attempts) are covered by tests/crowd/test_publishing.py and
tests/rehearsal/localturk/test_faults.py; the worker here makes one attempt per call
(FAULTS_MTURK_MAX_ATTEMPTS=0), so every injected fault reaches the task.
"""

import pytest

from annotation.batching import likert_tasks_build
from annotation.models import Batch
from crowd.models import HIT, Assignment
from crowd.simulation.hits import crowd_simulate
from crowd.tasks import publish_batch
from crowd.work import events
from crowd.work.publishing import hit_url
from ranking.tasks import run_loop
from rehearsal.localturk import faults

from .conftest import endpoint_hit_urls, wait_until
from .topics import small_topic

pytestmark = [pytest.mark.faults, pytest.mark.mturk]


def _assert_each_task_has_one_hit() -> None:
    urls = endpoint_hit_urls()
    tasks = [hit.task for hit in HIT.objects.select_related("task")]
    assert sorted(urls) == sorted(hit_url(task) for task in tasks)  # one HIT per task, nothing unrecorded
    assert not Batch.objects.filter(tasks__hit__isnull=True).exclude(status=Batch.Status.CREATED).exists()


def test_publish_and_sync_outlast_marketplace_faults_by_retrying(start_worker, local_endpoint, monkeypatch):
    # The pass below meets the listing faults: the answers filling the batch must not also send
    # the event path's sync to the worker first (tests/ranking/test_events.py has that path).
    monkeypatch.setattr(events, "_listeners", [])
    topic = small_topic(propositions=10)
    likert = likert_tasks_build(topic=topic, seed=1)
    # One call at a time, so the two faults meet two attempts of the task (in parallel both can
    # meet the first; tests/crowd/test_calls.py covers publishing's parallel calls).
    worker = start_worker(FAULTS_MTURK_MAX_ATTEMPTS="0", MARKETPLACE_CALLS_PER_PROCESS="1")

    faults.inject(throttle=1, service_fault=1, operations=["CreateHITWithHITType"])
    published = publish_batch.delay(likert.pk).id
    wait_until(
        lambda: Batch.objects.filter(pk=likert.pk, status=Batch.Status.PUBLISHED).exists(),
        what="the Likert batch to be published",
    )
    assert faults.active() == []
    assert worker.log().count(f"publish_batch[{published}] retry: Retry in") == 2
    _assert_each_task_has_one_hit()

    crowd = crowd_simulate(
        localturk_url=f"{local_endpoint}/localturk/", workers=6, spammers=0.0, trap_blind=0.0, seed=5
    )
    assert crowd.submitted == 6
    faults.inject(throttle=1, service_fault=1, operations=["ListAssignmentsForHIT"])
    synced = run_loop.delay().id
    # The pass verifies the answers and moves the topic on: QC, then comparison batch 1.
    wait_until(
        lambda: Batch.objects.filter(topic=topic, kind=Batch.Kind.COMPARISON, status=Batch.Status.PUBLISHED).exists(),
        what="the pass to verify the answers and publish the next batch",
    )
    wait_until(worker.idle, what="the worker to finish")
    assert faults.active() == []
    assert worker.log().count(f"run_loop[{synced}] retry: Retry in") == 2
    assert f"run_loop[{synced}] succeeded" in worker.log()
    assert Assignment.objects.count() == 6
    assert set(Assignment.objects.values_list("verification", flat=True)) == {Assignment.Verification.VERIFIED}
    _assert_each_task_has_one_hit()
