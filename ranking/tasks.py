"""Celery entry points of the ranking app (thin: the logic is in ranking/pipeline.py)."""

from celery import shared_task
from django.db import OperationalError

from ranking.pipeline import topic_advance


@shared_task(bind=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=8, acks_late=True)
def advance_topic(self, topic_id: int) -> dict:
    """One idempotent pipeline step for a topic; safe to run twice, or again after a crash."""
    step = topic_advance(topic_id=topic_id)
    return {"topic": step.topic_id, "action": step.action, "state": step.state, **step.details}
