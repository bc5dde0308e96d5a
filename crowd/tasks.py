"""Celery entry points for the marketplace: thin, take ids, safe to run twice.

Transient marketplace failures (throttling, service faults, no connection) that outlast
botocore's own retries are retried here with exponential backoff and jitter; everything a
run committed before the failure stays, and the next run continues from there.
"""

from dataclasses import asdict

from celery import shared_task
from django.db import OperationalError

from crowd.marketplaces.base import MarketplaceUnavailable
from crowd.qc.worker_quality import campaign_quality_refresh
from crowd.work.expiry import batch_expire
from crowd.work.publishing import batch_publish
from crowd.work.sync import channels_sync

RETRYING = {
    "autoretry_for": (MarketplaceUnavailable,),
    "retry_backoff": True,
    "retry_backoff_max": 600,
    "retry_jitter": True,
    "max_retries": 8,
}


@shared_task(**RETRYING)
def sync_open_hits() -> dict:
    """Every channel's open HITs reconciled, nothing else (the `sync_hits` command's job; the
    beat runs the whole loop, ranking.tasks.run_loop)."""
    return channels_sync()


@shared_task(**RETRYING)
def publish_batch(batch_id: int, live: bool = False) -> dict:
    result = batch_publish(batch_id=batch_id, live=live)
    return {**asdict(result), "cost": str(result.cost)}


@shared_task(**RETRYING)
def expire_batch(batch_id: int) -> dict:
    return asdict(batch_expire(batch_id=batch_id))


@shared_task(autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def refresh_campaign_quality(campaign_id: int) -> int:
    """Recompute worker quality for the campaign now; the number excluded. (The loop runs
    quality control itself; this entry point stays for admins and for queued messages.)"""
    return len(campaign_quality_refresh(campaign_id=campaign_id))
