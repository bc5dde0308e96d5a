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
# An event that finds a due request's topic stepped elsewhere looks again this much later
# (its holder takes it meanwhile, or the request is still there for this task).
FOLLOW_UP_SECONDS = 2


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


@shared_task(acks_late=True)
def step_requested() -> dict:
    """The event path (ranking.workflow.step_requests_run): one due step request confirmed
    and its topic stepped, then this task again when the earliest request left is due (at
    once when one is due already: the tasks of several topics' requests step them side by
    side). Safe to run twice: a request is taken once, under its topic's lock."""
    report = step_requests_run()
    if report.next_due is not None:
        wait = max(0.0, (report.next_due - timezone.now()).total_seconds())
        took = report.steps or report.waiting or report.dropped or report.errors
        if report.elsewhere and not took:  # only topics held elsewhere are due: look again later, not at once
            wait = max(wait, FOLLOW_UP_SECONDS)
        step_requested.apply_async(countdown=wait, retry=False)
    return {**asdict(report), "next_due": report.next_due.isoformat() if report.next_due else None}
