"""Celery entry points for the marketplace: thin, take ids, safe to run twice.

Transient marketplace failures (throttling, service faults, no connection) that outlast
botocore's own retries are retried here with exponential backoff and jitter; everything a
run committed before the failure stays, and the next run continues from there.

The product enqueues four kinds of task: the beat's pass of the loop (ranking.tasks.run_loop),
the chunks that pass shares — of its sync (`sync_chunk`) and of what it publishes
(`publish_chunk`) — through `chunks_dispatch`, which the Celery task module hands to the loop,
and the loop's event path (ranking.tasks.step_requested, enqueued by the loop's owner when
crowd.work.events reports a batch that may be complete). The other tasks here are enqueued by
nothing in the product: each is one step of the loop's own path (sync, publish, expire,
quality control for a campaign), kept for admins (`celery call`) and for messages already queued.
"""

import logging
from dataclasses import asdict
from datetime import datetime

from celery import shared_task
from django.db import OperationalError
from kombu.exceptions import OperationalError as BrokerUnreachable

from crowd.channels.registry import channels_sync
from crowd.marketplaces.base import MarketplaceUnavailable
from crowd.qc.worker_quality import campaign_quality_refresh
from crowd.work.chunks import Chunk
from crowd.work.expiry import batch_expire
from crowd.work.publishing import batch_publish, chunk_publish
from crowd.work.sync import chunk_sync

logger = logging.getLogger(__name__)
# A chunk task older than this has long been done by its pass: the queue drops it unrun.
CHUNK_EXPIRES = 3600

RETRYING = {
    "autoretry_for": (MarketplaceUnavailable,),
    "retry_backoff": True,
    "retry_backoff_max": 600,
    "retry_jitter": True,
    "max_retries": 8,
}


@shared_task(**RETRYING)
def sync_open_hits() -> dict:
    """Every channel's open HITs reconciled, nothing else: the loop's sync step alone (the
    beat runs the whole loop, ranking.tasks.run_loop). Enqueued by nothing in the product."""
    return channels_sync(dispatch=chunks_dispatch)


@shared_task(acks_late=False)
def sync_chunk(run: int, index: int, hit_ids: list[int], now: str) -> None:
    """A worker's share of a sync pass: the pass waits for it, or does the chunk itself if
    this task never runs, fails or dies (crowd.work.chunks); so no retries here, and a
    message lost with its worker costs nothing."""
    chunk_sync(chunk=Chunk(run=run, index=index, ids=hit_ids), now=datetime.fromisoformat(now))


@shared_task(acks_late=False)
def publish_chunk(run: int, index: int, task_ids: list[int]) -> None:
    """A worker's share of a publish: as `sync_chunk`, the publish waits for it or does the
    chunk itself (crowd.work.publishing.chunk_publish); the tokens make a redone chunk harmless."""
    chunk_publish(chunk=Chunk(run=run, index=index, ids=task_ids, job="publish"))


def chunks_dispatch(chunks: list[Chunk], now: datetime) -> int:
    """A task per chunk (`sync_chunk` or `publish_chunk`, by the chunk's job), for the pass's
    Dispatch; how many were enqueued. None when Celery runs eagerly (no other process to
    share with) and none after the broker failed: the pass does the rest itself."""
    if sync_chunk.app.conf.task_always_eager:
        return 0
    sent = 0
    for chunk in chunks:
        arguments: tuple = (chunk.run, chunk.index, chunk.ids)
        task = publish_chunk if chunk.job == "publish" else sync_chunk
        if task is sync_chunk:
            arguments += (now.isoformat(),)
        try:
            task.apply_async(arguments, retry=False, expires=CHUNK_EXPIRES)
        except BrokerUnreachable as error:
            logger.warning("chunks not handed to workers (%s): the pass does them", error)
            break
        sent += 1
    return sent


sync_chunks_dispatch = chunks_dispatch  # the name ranking.tasks and older callers know


@shared_task(**RETRYING)
def publish_batch(batch_id: int, live: bool = False) -> dict:
    """The loop's publish step for one batch (crowd.work.publishing.batch_publish, idempotent).
    Enqueued by nothing in the product."""
    result = batch_publish(batch_id=batch_id, live=live, dispatch=chunks_dispatch)
    return {**asdict(result), "cost": str(result.cost)}


@shared_task(**RETRYING)
def expire_batch(batch_id: int) -> dict:
    """The loop's expire step for one batch (crowd.work.expiry.batch_expire). Enqueued by
    nothing in the product."""
    return asdict(batch_expire(batch_id=batch_id))


@shared_task(autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def refresh_campaign_quality(campaign_id: int) -> int:
    """The loop's quality-control step for one campaign now (once per campaign, as the loop
    runs it); the number excluded. Enqueued by nothing in the product."""
    return len(campaign_quality_refresh(campaign_id=campaign_id))
