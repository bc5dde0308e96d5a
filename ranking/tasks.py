"""Celery entry points of the ranking app (thin: the loop is ranking/workflow.py, the
per-topic step ranking/pipeline.py). This module is where the loop meets Celery: it hands the
loop the chunk dispatch of crowd.tasks, so the sync's chunks are shared with idle workers, and
it turns the event path's requests into tasks (`batch_full_heard`, `step_requested`)."""

import logging
from dataclasses import asdict

from celery import shared_task
from django.conf import settings
from django.db import OperationalError
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnreachable

from annotation.models import Topic
from crowd.qc.worker_quality import excluded_worker_ids
from crowd.tasks import RETRYING, sync_chunks_dispatch
from ranking.workflow import loop_run_exclusive, step_request_record, step_requests_run, topic_step

logger = logging.getLogger(__name__)
# An event that finds a pass running tries again this often, this many times; the pass itself
# takes the requests due before it lets go of the lock, and beat's next pass any left.
FOLLOW_UP_SECONDS = 2
FOLLOW_UPS = 30


@shared_task(**RETRYING)
def run_loop() -> dict:
    """Celery beat, every SYNC_INTERVAL_SECONDS: one pass of the campaign loop (sync, quality
    control once per campaign, every waiting topic advanced, publish, expire, finish), or
    nothing when a pass is still running."""
    report = loop_run_exclusive(dispatch=sync_chunks_dispatch)
    return asdict(report) if report is not None else {"skipped": "a pass is still running"}


@shared_task(bind=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=8, acks_late=True)
def advance_topic(self, topic_id: int) -> dict:
    """One idempotent step for a topic, as the loop takes it, with the exclusions its
    campaign's last quality control stored: quality control is the loop's, once per campaign
    (run_loop), never once per topic. Nothing in the product enqueues this task: it stays for
    admins (`celery call`) and for messages already queued; safe to run twice, or again after
    a crash."""
    campaign_id = Topic.objects.values_list("campaign_id", flat=True).get(pk=topic_id)
    step = topic_step(topic_id=topic_id, excluded=excluded_worker_ids(campaign_id))
    return {"topic": step.topic_id, "action": step.action, "state": step.state, **step.details}


def batch_full_heard(batch_id: int) -> None:
    """crowd.work.events' listener (registered in ranking.apps), after the answer's commit: a
    step request for the batch's topic, and the task that takes it once it is due when the
    request is new. Nothing when Celery runs eagerly (no worker to hand it to: the pass takes
    it) or the broker is unreachable (logged; the pass takes it): never the worker's error."""
    if step_requested.app.conf.task_always_eager or not step_request_record(batch_id=batch_id):
        return
    try:
        step_requested.apply_async(countdown=settings.STEP_EVENT_DEBOUNCE_SECONDS, retry=False)
    except BrokerUnreachable as error:
        logger.warning("batch %s: step request not handed to a worker (%s): the next pass takes it", batch_id, error)


@shared_task(bind=True, max_retries=FOLLOW_UPS + 1, acks_late=True)
def step_requested(self) -> dict:
    """The event path (ranking.workflow.step_requests_run): the due step requests confirmed
    and their topics stepped, then this task again when the earliest request left is due. A
    pass running: the same again in FOLLOW_UP_SECONDS (the pass takes what is due before it
    lets go). Safe to run twice: a request is taken once, under the loop's lock."""
    report = step_requests_run()
    if report is None and self.request.retries >= FOLLOW_UPS:  # a long pass: it takes them as it ends
        return {"skipped": "a pass is still running: it takes the requests due before it lets go"}
    if report is None:
        raise self.retry(countdown=FOLLOW_UP_SECONDS)
    if report.next_due is not None:
        wait = max(0.0, (report.next_due - timezone.now()).total_seconds())
        if report.elsewhere:  # another event holds a due topic: look again later, not at once
            wait = max(wait, FOLLOW_UP_SECONDS)
        step_requested.apply_async(countdown=wait, retry=False)
    return {**asdict(report), "next_due": report.next_due.isoformat() if report.next_due else None}
