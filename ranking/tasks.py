"""Celery entry points of the ranking app (thin: the loop is ranking/workflow.py, the
per-topic step ranking/pipeline.py)."""

from dataclasses import asdict

from celery import shared_task
from django.db import OperationalError

from crowd.tasks import RETRYING
from ranking.workflow import loop_run_exclusive, topic_step


@shared_task(**RETRYING)
def run_loop() -> dict:
    """Celery beat, every SYNC_INTERVAL_SECONDS: one pass of the campaign loop (sync, quality
    control once per campaign, every waiting topic advanced, publish, expire, finish), or
    nothing when a pass is still running."""
    report = loop_run_exclusive()
    return asdict(report) if report is not None else {"skipped": "a pass is still running"}


@shared_task(bind=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=8, acks_late=True)
def advance_topic(self, topic_id: int) -> dict:
    """One idempotent step for a topic (quality control for its campaign first); safe to run
    twice, or again after a crash."""
    step = topic_step(topic_id=topic_id)
    return {"topic": step.topic_id, "action": step.action, "state": step.state, **step.details}
