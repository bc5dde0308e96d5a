"""Celery entry points of the ranking app (thin: the loop is ranking/workflow.py, the
per-topic step ranking/pipeline.py). This module is where the loop meets Celery: it hands the
loop the chunk dispatch of crowd.tasks, so the sync's chunks are shared with idle workers."""

from dataclasses import asdict

from celery import shared_task
from django.db import OperationalError

from annotation.models import Topic
from crowd.qc.worker_quality import excluded_worker_ids
from crowd.tasks import RETRYING, sync_chunks_dispatch
from ranking.workflow import loop_run_exclusive, topic_step


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
