"""The campaign loop's one owner: what happens after work comes in.

One pass (`loop_run`, the Celery beat task `ranking.tasks.run_loop`):

    sync        every channel's HITs with news reconciled (crowd.work.sync): reports which
                campaigns changed; with a `dispatch` handed in (the Celery task module hands
                in crowd.tasks.sync_chunks_dispatch) its chunks are shared with idle Celery
                workers, and the pass waits for them (crowd.work.chunks), so adding workers
                shortens it; without one the pass does every chunk itself
    QC          once per campaign that had news or has a topic ready to move
                (crowd.qc.worker_quality.campaign_quality_refresh), outside any topic's lock
    advance     each waiting topic of an active campaign, one step, with that QC result
                (ranking.pipeline.topic_advance)
    publish     the batch a step chose, after the step committed (crowd.work.publishing),
                its chunks shared with the workers as the sync's are
    expire      what a topic that just finished left on offer (crowd.work.expiry)
    finish      a campaign whose every topic is done becomes Finished (annotation.campaigns)

Services below report what they changed; only this module decides what comes next, and it
calls them directly rather than enqueuing their tasks, so a pass is one task whose failures
are logged per topic and healed by the next pass: a batch chosen but not published is still
`created` and is published again (idempotent), a topic whose step failed is waiting still.

One pass runs at a time (`loop_run_exclusive`): a PostgreSQL advisory lock held by the pass's
own connection, so it is released when its holder dies; a pass that finds it held is skipped
with one log line, and beat's messages expire after one interval, so the queue cannot grow.
"""

import functools
import logging
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection

from annotation.campaigns import campaign_finish
from annotation.models import Batch, Campaign, Topic
from config.errors import ApplicationError
from crowd.channels.registry import channels_sync_report
from crowd.qc.worker_quality import campaign_quality_refresh
from crowd.work.chunks import Dispatch
from crowd.work.expiry import batch_expire
from crowd.work.ledger import BudgetExceeded
from crowd.work.publishing import PublishResult, batch_publish
from crowd.work.rounds import topic_publish
from ranking.pipeline import Step, topic_advance, topic_ready, topic_start

logger = logging.getLogger(__name__)

Publish = Callable[[int, bool], object]
# pg_try_advisory_lock's key for "a pass of the loop is running" (any bigint unique to it).
LOOP_LOCK_KEY = 0x5A11E7CE
WAITING = (Topic.State.LIKERT, Topic.State.COMPARISONS)


@dataclass
class LoopReport:
    sync: dict = field(default_factory=dict)
    quality_runs: list[int] = field(default_factory=list)  # campaigns whose QC ran, once each
    steps: list[dict] = field(default_factory=list)
    finished: list[int] = field(default_factory=list)  # campaigns marked Finished
    held: list[str] = field(default_factory=list)  # topics whose next batch the budget cap holds back
    errors: list[str] = field(default_factory=list)


def _publish(batch_id: int, live: bool) -> object:
    return batch_publish(batch_id=batch_id, live=live)


def _publish_shared(batch_id: int, live: bool, *, dispatch: Dispatch) -> object:
    return batch_publish(batch_id=batch_id, live=live, dispatch=dispatch)


def topic_step(*, topic_id: int, excluded: set[int] | None = None, publish: Publish | None = None) -> Step:
    """One topic's step as the loop takes it: quality control for its campaign (unless the
    caller ran it and hands in `excluded`), the pipeline step, then publishing the batch it
    chose and expiring what it left open. `publish(batch_id, live)` defaults to publishing
    at the campaign's channel now."""
    if excluded is None:
        campaign_id = Topic.objects.values_list("campaign_id", flat=True).get(pk=topic_id)
        excluded = campaign_quality_refresh(campaign_id=campaign_id)
    step = topic_advance(topic_id=topic_id, excluded=excluded)
    if step.publish_batch_id is not None:
        (publish or _publish)(step.publish_batch_id, step.publish_live)
    for batch_id in step.expire_batch_ids:
        batch_expire(batch_id=batch_id)
    return step


def topic_round_publish(*, topic: Topic, kind: str, live: bool = False) -> list[PublishResult]:
    """Publish the topic's unpublished batches of `kind` (the Likert one built first if
    needed; crowd.work.rounds.topic_publish) and start its Likert round at once, so the
    dashboard and the command show the round as soon as its HITs are out."""
    results = topic_publish(topic=topic, kind=kind, live=live)
    topic_start(topic_id=topic.pk)
    return results


def loop_run(
    *, now: datetime | None = None, publish: Publish | None = None, dispatch: Dispatch | None = None
) -> LoopReport:
    """One pass of the loop over every active campaign; see the module docstring. `dispatch`
    hands sync chunks to other workers (crowd.work.chunks); None: this process does them all."""
    report = LoopReport()
    if publish is None and dispatch is not None:  # what a step publishes is shared with the workers too
        publish = functools.partial(_publish_shared, dispatch=dispatch)
    synced, report.sync = channels_sync_report(now=now, dispatch=dispatch)
    starting = Topic.objects.filter(state=Topic.State.IMPORTING, campaign__status=Campaign.Status.ACTIVE)
    for topic_id in starting.filter(batches__kind=Batch.Kind.LIKERT).values_list("pk", flat=True).distinct():
        topic_start(topic_id=topic_id)  # its Likert batch was published outside the loop
    topics: dict[int, list[int]] = defaultdict(list)
    waiting = Topic.objects.filter(state__in=WAITING, campaign__status=Campaign.Status.ACTIVE)
    for topic_id, campaign_id in waiting.order_by("campaign_id", "key").values_list("pk", "campaign_id"):
        topics[campaign_id].append(topic_id)
    for campaign_id, topic_ids in topics.items():
        ready = [topic_id for topic_id in topic_ids if topic_ready(topic_id=topic_id)]
        if campaign_id not in synced.campaign_ids and not ready:
            continue
        excluded = campaign_quality_refresh(campaign_id=campaign_id)
        report.quality_runs.append(campaign_id)
        for topic_id in ready:
            try:
                step = topic_step(topic_id=topic_id, excluded=excluded, publish=publish)
            except BudgetExceeded as held:  # shown on the batch (Batch.held_reason), logged once
                report.held.append(f"topic {topic_id}: {held.message}")
                continue
            except ApplicationError as error:  # this topic only; the next pass tries again
                logger.error("topic %s: %s", topic_id, error.message)
                report.errors.append(f"topic {topic_id}: {error.message}")
                continue
            report.steps.append({"topic": topic_id, "action": step.action, "state": step.state, **step.details})
    report.finished = campaigns_finish()
    return report


@contextmanager
def loop_lock() -> Iterator[bool]:
    """Whether this process may run a pass now: a session-level advisory lock on PostgreSQL,
    released on exit or when the connection dies. SQLite (the embedded default) runs one
    process, so every pass may run."""
    if connection.vendor != "postgresql":
        yield True
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [LOOP_LOCK_KEY])
        held = bool(cursor.fetchone()[0])
    try:
        yield held
    finally:
        if held:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [LOOP_LOCK_KEY])


def loop_run_exclusive(*, now: datetime | None = None, dispatch: Dispatch | None = None) -> LoopReport | None:
    """`loop_run`, unless another pass holds the loop's lock: then nothing, and one log line."""
    with loop_lock() as held:
        if not held:
            logger.info("a pass of the loop is still running: this one is skipped")
            return None
        return loop_run(now=now, dispatch=dispatch)


def campaigns_finish() -> list[int]:
    """Mark Finished every active campaign whose topics are all done; their ids."""
    active = Campaign.objects.filter(status=Campaign.Status.ACTIVE, topics__isnull=False).distinct()
    unfinished = Topic.objects.exclude(state=Topic.State.DONE).values("campaign_id")
    finished = []
    for campaign_id in active.exclude(pk__in=unfinished).values_list("pk", flat=True):
        if campaign_finish(campaign_id=campaign_id):
            finished.append(campaign_id)
    return finished
