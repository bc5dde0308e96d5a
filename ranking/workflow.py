"""The campaign loop's one owner: what happens after work comes in.

One pass (`loop_run`, the Celery beat task `ranking.tasks.run_loop`):

    sync        every channel's HITs with news reconciled (crowd.work.sync): reports which
                campaigns changed; with a `dispatch` handed in (the Celery task module hands
                in crowd.tasks.sync_chunks_dispatch) its chunks are shared with idle Celery
                workers, and the pass waits for them (crowd.work.chunks), so adding workers
                shortens it; without one the pass does every chunk itself
    QC          once per campaign that had news or has a topic ready to move
                (crowd.qc.worker_quality.campaign_quality_refresh), outside any topic's lock;
                its Likert part current only when a topic's Likert round is to be scored,
                else kept while Likert labels stream in until they double (a round's QC work
                linear in its labels: crowd.qc.likert_part)
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
own connection (LOOP_LOCK_KEY), so it is released when its holder dies; a pass that finds it
held is skipped with one log line, and beat's messages expire after one interval, so the
queue cannot grow.

A topic has one stepper at a time (`topic_lock`: an advisory lock of its own, TOPIC_LOCK_CLASS
and the topic's id), the pass and the events alike: each steps only the topics whose lock it
gets, and leaves a topic held elsewhere to its holder. So an event never waits for a pass, nor
for another event stepping another topic, and a pass never waits for an event: what they share
meets under row locks that were already there (the topic's in ranking.pipeline, the campaign's
in QC and the budget ledger, the HITs' in crowd.work.sync).

The event path: a step within seconds of a batch's last answer, not at the next beat.

    report      crowd.work.events tells this module's listener (`step_request_record`, from
                ranking.tasks, registered in ranking.apps) that a batch may hold every answer
                it needs: the HIT page stored the answer that filled it, or a session counted
                one. One StepRequest per topic, due STEP_EVENT_DEBOUNCE_SECONDS later; only a
                new request enqueues the task (ranking.tasks.step_requested, after commit),
                so a burst of answers for one batch asks for one step
    take        a task takes one due request, the earliest whose topic's lock it gets
                (`step_requests_run`), so the tasks of requests for different topics step
                them at once in different worker processes; a request whose topic is held
                elsewhere is left to its holder, and the task looks again a little later
    confirm     the batch's answers confirmed with their channel, that batch alone
                (crowd.channels.registry.batch_sync_report: its HITs with a pending answer)
    step        if the topic is now ready (ranking.pipeline.topic_ready: its answers count),
                QC for its campaign, `topic_step` (publish, expire) and campaigns finished,
                exactly as a pass does; an answer its channel has not confirmed yet (a worker
                between our page and MTurk's submit) pushes the request back
                (CONFIRM_RETRY_SECONDS) and, those tries spent, drops it; so does a batch
                that was not full after all (a forged answer refused): no step
    the net     a pass takes every due request whose topic it gets after its steps (one whose
                task was lost with the broker, say), and beat's pass steps whatever is ready.
                The task has a queue of its own (EVENTS_QUEUE in config.settings' routes),
                which workers read between the chunks of a pass, so it does not wait behind
                a sync's chunks.
"""

import functools
import logging
from collections import defaultdict
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import Min
from django.utils import timezone

from annotation.campaigns import campaign_finish
from annotation.models import Batch, Campaign, Topic
from config.errors import ApplicationError
from crowd.channels.registry import batch_sync_report, channels_sync_report
from crowd.models import Assignment
from crowd.qc.worker_quality import campaign_quality_refresh
from crowd.work.chunks import Dispatch
from crowd.work.expiry import batch_expire
from crowd.work.ledger import BudgetExceeded
from crowd.work.progress import campaign_progress
from crowd.work.publishing import PublishResult, batch_publish
from crowd.work.rounds import topic_publish
from ranking.models import StepRequest
from ranking.pipeline import Step, topic_advance, topic_ready, topic_start

logger = logging.getLogger(__name__)

Publish = Callable[[int, bool], object]
# pg_try_advisory_lock's key for "a pass of the loop is running" (any bigint unique to it).
LOOP_LOCK_KEY = 0x5A11E7CE
# The first key of a topic's own lock (the second: its id), held by whoever steps it.
TOPIC_LOCK_CLASS = 0x5A11E7
WAITING = (Topic.State.LIKERT, Topic.State.COMPARISONS)
# How long the event path waits for a channel to confirm a batch's last answers, try by try
# (a worker posts to our page first, then to MTurk): then the request is dropped and beat heals.
CONFIRM_RETRY_SECONDS = (1, 2, 4, 8, 15, 30)


@dataclass
class LoopReport:
    sync: dict = field(default_factory=dict)
    quality_runs: list[int] = field(default_factory=list)  # campaigns whose QC ran, once each
    steps: list[dict] = field(default_factory=list)
    finished: list[int] = field(default_factory=list)  # campaigns marked Finished
    held: list[str] = field(default_factory=list)  # topics whose next batch the budget cap holds back
    elsewhere: list[int] = field(default_factory=list)  # ready topics an event was stepping: left to it
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
    *,
    now: datetime | None = None,
    publish: Publish | None = None,
    dispatch: Dispatch | None = None,
    requests: bool = False,
) -> LoopReport:
    """One pass of the loop over every active campaign; see the module docstring. `dispatch`
    hands sync chunks to other workers (crowd.work.chunks); None: this process does them all.
    Each topic is stepped under its own lock, a topic an event holds left to it. `requests`:
    the step requests due are taken after the steps (the net for events nobody took)."""
    report = LoopReport()
    if publish is None and dispatch is not None:  # what a step publishes is shared with the workers too
        publish = functools.partial(_publish_shared, dispatch=dispatch)
    synced, report.sync = channels_sync_report(now=now, dispatch=dispatch)
    stepped: set[int] = set()  # campaigns the requests' steps changed
    _steps_take(report, synced.campaign_ids, publish)
    report.finished = campaigns_finish()
    if requests:
        events = step_requests_take(publish=publish)
        report.steps += events.steps
        report.errors += events.errors
        stepped.update(events.quality_runs)
    pages_warm(synced.campaign_ids | set(report.quality_runs) | stepped)
    return report


def pages_warm(campaign_ids: Collection[int]) -> None:
    """The dashboard's figures of the campaigns a pass or an event changed, counted now into
    the cache every web process shares (crowd.work.progress), so the next page finds them."""
    for campaign in Campaign.objects.filter(pk__in=campaign_ids):
        campaign_progress(campaign)


def _steps_take(report: LoopReport, synced: set[int], publish: Publish | None) -> None:
    """Topics whose Likert batch went out outside the loop started, then QC once per campaign
    with news and each ready topic stepped, under its own lock (one an event holds: left to it)."""
    starting = Topic.objects.filter(state=Topic.State.IMPORTING, campaign__status=Campaign.Status.ACTIVE)
    for topic_id in starting.filter(batches__kind=Batch.Kind.LIKERT).values_list("pk", flat=True).distinct():
        topic_start(topic_id=topic_id)  # its Likert batch was published outside the loop
    topics: dict[int, list[int]] = defaultdict(list)
    waiting = Topic.objects.filter(state__in=WAITING, campaign__status=Campaign.Status.ACTIVE)
    for topic_id, campaign_id in waiting.order_by("campaign_id", "key").values_list("pk", "campaign_id"):
        topics[campaign_id].append(topic_id)
    for campaign_id, topic_ids in topics.items():
        ready = [topic_id for topic_id in topic_ids if topic_ready(topic_id=topic_id)]
        if campaign_id not in synced and not ready:
            continue
        excluded = campaign_quality_refresh(campaign_id=campaign_id, likert_current=_scores_likert(ready))
        report.quality_runs.append(campaign_id)
        for topic_id in ready:
            with topic_lock(topic_id) as mine:
                if not mine:
                    report.elsewhere.append(topic_id)
                    continue
                _pass_step(report, topic_id, excluded, publish)


def _pass_step(report: LoopReport, topic_id: int, excluded: set[int], publish: Publish | None) -> None:
    try:
        step = topic_step(topic_id=topic_id, excluded=excluded, publish=publish)
    except BudgetExceeded as held:  # shown on the batch (Batch.held_reason), logged once
        report.held.append(f"topic {topic_id}: {held.message}")
        return
    except ApplicationError as error:  # this topic only; the next pass tries again
        logger.error("topic %s: %s", topic_id, error.message)
        report.errors.append(f"topic {topic_id}: {error.message}")
        return
    report.steps.append({"topic": topic_id, "action": step.action, "state": step.state, **step.details})


def _waiting(campaign_id: int) -> bool:
    """Whether a topic of the campaign waits for its crowd (its passes run QC)."""
    return Topic.objects.filter(campaign_id=campaign_id, state__in=WAITING).exists()


def _scores_likert(topic_ids: list[int]) -> bool:
    """Whether one of the topics is to have its Likert round scored: its means leave out who
    quality control excludes, so the Likert part must be current (crowd.qc.likert_part)."""
    return Topic.objects.filter(pk__in=topic_ids, state=Topic.State.LIKERT).exists()


@contextmanager
def loop_lock() -> Iterator[bool]:
    """Whether this process may run a pass now: a session-level advisory lock on PostgreSQL,
    released on exit or when the connection dies. SQLite (the embedded default) runs one
    process, so every pass may run."""
    with _advisory_lock((LOOP_LOCK_KEY,)) as held:
        yield held


@contextmanager
def topic_lock(topic_id: int) -> Iterator[bool]:
    """Whether this process may step the topic now: not while a pass or an event steps it."""
    with _advisory_lock((TOPIC_LOCK_CLASS, topic_id)) as held:
        yield held


@contextmanager
def _advisory_lock(key: tuple[int, ...]) -> Iterator[bool]:
    """A session-level advisory lock on `key` if nobody holds it (never waiting for it),
    released on exit or when the connection dies; always held on SQLite (one process)."""
    if connection.vendor != "postgresql":
        yield True
        return
    arguments = ", ".join(["%s"] * len(key))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT pg_try_advisory_lock({arguments})", list(key))
        held = bool(cursor.fetchone()[0])
    try:
        yield held
    finally:
        if held:
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT pg_advisory_unlock({arguments})", list(key))


def loop_run_exclusive(*, now: datetime | None = None, dispatch: Dispatch | None = None) -> LoopReport | None:
    """`loop_run`, unless another pass holds the loop's lock: then nothing, and one log line.
    After its steps, the pass takes the step requests due (the net for an event's lost task)."""
    with loop_lock() as held:
        if not held:
            logger.info("a pass of the loop is still running: this one is skipped")
            return None
        return loop_run(now=now, dispatch=dispatch, requests=True)


# ---- The event path ------------------------------------------------------------------------


@dataclass
class EventReport:
    steps: list[dict] = field(default_factory=list)
    quality_runs: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)  # topics whose answers their channel has not confirmed yet
    dropped: list[int] = field(default_factory=list)  # topics whose request ended without a step
    elsewhere: list[int] = field(default_factory=list)  # topics another stepper held: left to it
    errors: list[str] = field(default_factory=list)
    next_due: datetime | None = None  # the earliest request left


def step_request_record(*, batch_id: int) -> bool:
    """crowd.work.events reported that the batch may hold every answer it needs: request its
    topic's step, due after the debounce. True when the request is new (the caller enqueues
    the event task after commit); False when one is waiting already, which covers this one."""
    topic_id = Batch.objects.values_list("topic_id", flat=True).get(pk=batch_id)
    due = timezone.now() + timedelta(seconds=settings.STEP_EVENT_DEBOUNCE_SECONDS)
    _request, created = StepRequest.objects.get_or_create(topic_id=topic_id, defaults={"due_at": due})
    return created


def step_requests_run(*, publish: Publish | None = None) -> EventReport:
    """The event path's turn (ranking.tasks.step_requested): the earliest due request whose
    topic nobody else is stepping taken (`step_requests_take`), so that the tasks of other
    topics' requests take theirs at once; then the figures of its campaign counted."""
    report = step_requests_take(publish=publish, one=True)
    pages_warm(set(report.quality_runs))
    return report


def step_requests_take(*, publish: Publish | None = None, one: bool = False) -> EventReport:
    """For each due request whose topic's lock this process gets (`one`: the first such),
    its topic's current batch confirmed with its channel, then the topic stepped if it is
    ready; see the module docstring. A topic held elsewhere is left to its holder."""
    report = EventReport()
    now = timezone.now()
    excluded: dict[int, set[int]] = {}
    due = StepRequest.objects.filter(due_at__lte=now).order_by("due_at").values_list("pk", "topic_id")
    for request_id, topic_id in list(due):
        with topic_lock(topic_id) as mine:
            request = StepRequest.objects.filter(pk=request_id).select_related("topic").first()
            if not mine:
                report.elsewhere.append(topic_id)
            elif request is not None:  # else another event stepped it already
                _request_take(report, request, now, excluded, publish)
                if one:
                    break
    if report.steps:
        campaigns_finish()
    report.next_due = StepRequest.objects.aggregate(due=Min("due_at"))["due"]
    return report


def _request_take(
    report: EventReport, request: StepRequest, now: datetime, excluded: dict[int, set[int]], publish: Publish | None
) -> None:
    """One due request, its topic's lock held: confirm, then step, wait or drop."""
    topic = request.topic
    batch = _current_batch(topic)
    if batch is not None:
        batch_sync_report(batch_id=batch.pk, now=now)
        if topic.state == Topic.State.IMPORTING and batch.kind == Batch.Kind.LIKERT:
            topic_start(topic_id=topic.pk)  # its Likert batch was published outside the loop, as in loop_run
            topic.refresh_from_db(fields=["state"])
    if topic_ready(topic_id=topic.pk):
        request.delete()
        if topic.campaign_id not in excluded or topic.state == Topic.State.LIKERT:
            excluded[topic.campaign_id] = campaign_quality_refresh(  # the report's statistics: the next pass's
                campaign_id=topic.campaign_id, likert_current=topic.state == Topic.State.LIKERT, statistics=False
            )
            report.quality_runs.append(topic.campaign_id)
        step = _event_step(report, topic.pk, excluded[topic.campaign_id], publish)
        if step is not None and step.state == Topic.State.DONE and not _waiting(topic.campaign_id):
            # No pass runs QC for a campaign without waiting topics: its last topic's event stores
            # the statistics, once (while others wait, the next pass with news does, as for any event).
            campaign_quality_refresh(campaign_id=topic.campaign_id)
    elif batch is not None and request.attempts < len(CONFIRM_RETRY_SECONDS) and _pending(batch.pk):
        request.due_at = now + timedelta(seconds=CONFIRM_RETRY_SECONDS[request.attempts])
        request.attempts += 1
        request.save(update_fields=["due_at", "attempts"])
        report.waiting.append(topic.pk)
    else:
        request.delete()
        report.dropped.append(topic.pk)


def _current_batch(topic: Topic) -> Batch | None:
    return topic.batches.filter(status=Batch.Status.PUBLISHED).order_by("-number", "-pk").first()


def _pending(batch_id: int) -> bool:
    return Assignment.objects.pending().filter(task__batch_id=batch_id).exists()


def _event_step(report: EventReport, topic_id: int, excluded: set[int], publish: Publish | None) -> Step | None:
    """The topic's step, recorded in the report; None when it failed (the report says why)."""
    try:
        step = topic_step(topic_id=topic_id, excluded=excluded, publish=publish)
    except ApplicationError as error:  # a held budget included: the batch says why; beat tries again
        logger.error("topic %s: %s", topic_id, error.message)
        report.errors.append(f"topic {topic_id}: {error.message}")
        return None
    report.steps.append({"topic": topic_id, "action": step.action, "state": step.state, **step.details})
    return step


def campaigns_finish() -> list[int]:
    """Mark Finished every active campaign whose topics are all done; their ids."""
    active = Campaign.objects.filter(status=Campaign.Status.ACTIVE, topics__isnull=False).distinct()
    unfinished = Topic.objects.exclude(state=Topic.State.DONE).values("campaign_id")
    finished = []
    for campaign_id in active.exclude(pk__in=unfinished).values_list("pk", flat=True):
        if campaign_finish(campaign_id=campaign_id):
            finished.append(campaign_id)
    return finished
