"""Publishing a batch: one HIT per task, exactly once, within the campaign's budget.

1. Checks: the topic has a description (workers see only that), the production guard
   (three switches, see `production_guard_check`), an HTTPS SITE_URL for real MTurk.
   The checks specific to the channel are its policy's (Prolific: no sandbox, its pay floor).
2. Budget: under a lock on the campaign, what publishing commits in the channel's unit
   (crowd.work.ledger.batch_commit: MTurk every assignment at reward + fee, Prolific the study's
   places at the session reward + service fee, links nothing) must fit under the cap with
   what is already committed; then it is committed in the ledger. A refusal writes nothing
   and names the cost, the commitment, the cap and the shortfall.
   Then one quick call asks whether the marketplace answers at all (its `reachable_check`):
   if not, what was committed is withdrawn and the error says what to start — in seconds,
   not after every retry. A failure later on withdraws what never reached the marketplace
   (`_failed_publish_withdraw`), so a failed publish leaves no commitment for work not on offer.
3. A HIT type with the campaign's reward, texts, timing and qualification requirements,
   created once per distinct set of parameters (crowd.HITType keeps its fingerprint).
4. One HIT per task, `UniqueRequestToken` = task uuid; each HIT row is committed as soon
   as MTurk answers. A re-run skips tasks that have a HIT row, and for a task whose HIT was
   created but not recorded (a crash in between), MTurk refuses the repeated token and the
   marketplace returns the existing HIT (crowd.marketplaces.mturk.client) — never a second one. MTurk keeps
   tokens for 24 hours: re-run an interrupted publish within a day.
5. In parallel: the tasks go in chunks (crowd.work.chunks.chunks_split: PASS_CHUNKS of them,
   at least CHUNK_FLOOR and at most CHUNK_SIZE tasks each), which the publishing process and, with
   a `dispatch` (crowd.tasks.chunks_dispatch), idle Celery workers take (crowd.work.chunks);
   each holder makes its chunk's calls a few at once, within the channel's bound on calls in
   flight over the whole deployment (crowd.work.calls). Recording stays per HIT, in the
   holder's own thread, so a chunk retried (a worker died, the pass redoes it) skips what is
   recorded and meets the token for what is not. The first failure stops new calls; the
   calls in flight finish and are recorded, and step 2's withdrawal keeps the commitment of
   every task whose request may have reached the marketplace.

A topic's round (every batch of a kind, with its plan and budget preview) is crowd.work.rounds.
"""

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from uuid import UUID

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.batching import batch_hold, batch_status_move
from annotation.campaigns import campaign_activate
from annotation.models import Batch, Campaign, Task, Topic
from config.errors import ApplicationError
from crowd.marketplaces.base import (
    Marketplace,
    MarketplaceError,
    MarketplaceUnavailable,
    OutcomeUnknown,
    Publication,
    RemoteHIT,
    Requirement,
    WorkType,
)
from crowd.marketplaces.registry import channel_policy, get_marketplace
from crowd.models import HIT, HITType
from crowd.work import ledger
from crowd.work.calls import Outcome, calls_run, stops_run
from crowd.work.chunks import Chunk, Dispatch, chunk_work, chunks_split, chunks_work

Environment = Campaign.Environment

logger = logging.getLogger(__name__)

# Tasks per chunk at most: one Celery task when the publish is shared (crowd.work.chunks).
CHUNK_SIZE = 50
# Tasks per chunk at least (the last may have fewer): one CreateHITWithHITType each.
CHUNK_FLOOR = 10


@dataclass(frozen=True)
class PublishResult:
    batch_id: int
    published: int  # HITs this run created and recorded
    already: int  # tasks whose HIT existed before, or that a concurrent run recorded first
    cost: Decimal  # committed by this run
    chunks_shared: int = 0  # chunks a Celery worker published for this run


# ---- Checks ------------------------------------------------------------------------------


def production_guard_check(*, campaign: Campaign, live: bool) -> None:
    """Real money needs all three: the deployment (the channel's own setting), the campaign's
    switch, and `live`. A channel that pays nobody has no production to guard."""
    policy = channel_policy(campaign.channel)
    if campaign.environment != Environment.PRODUCTION or policy.deployment_setting is None:
        return
    missing = []
    if policy.production_setting() != Environment.PRODUCTION:
        missing.append(f"the deployment setting {policy.deployment_setting}=production")
    if not campaign.production_enabled:
        missing.append(f"the production switch of campaign {campaign.slug} (production_enabled)")
    if not live:
        missing.append("an explicit --live on the command (or the typed confirmation)")
    if missing:
        raise ApplicationError(
            f"Refusing to publish to {policy.short_name} production, which spends real money. Missing: "
            + "; ".join(missing)
            + ".",
            code="production_guard",
            details=missing,
        )


def topic_description_check(*, topic: Topic) -> None:
    if not topic.description.strip():
        raise ApplicationError(
            f"Topic {topic} has no description. Workers see only the topic description: add one before publishing.",
            code="topic_description_missing",
        )


def topic_publish_refusal(*, topic: Topic) -> str:
    """Why publishing `topic` would be refused, before anything is written, by the topic
    itself ("" when nothing of the topic refuses it): the check topic_publish makes, for the
    pages that offer a Publish button only where publishing would go ahead."""
    try:
        topic_description_check(topic=topic)
    except ApplicationError as error:
        return error.message
    return ""


def round_publish_check(*, topic: Topic, kind: str) -> None:
    """What refuses publishing the topic's round of `kind` whichever of its batches: the topic's
    description and its channel's own checks (Prolific: no sandbox, its pay floor). Made before
    the round is built, and by the publish page, so a refused publish builds nothing and the
    page says why instead of offering its button."""
    topic_description_check(topic=topic)
    campaign = topic.campaign
    channel_policy(campaign.channel).publish_check(campaign=campaign, kind=kind)


def _publish_check(*, batch: Batch, live: bool) -> None:
    campaign = batch.topic.campaign
    if batch.status == Batch.Status.EXPIRED:
        raise ApplicationError(
            f"{batch} was expired; its remaining tasks are not published any more.", code="batch_expired"
        )
    topic_description_check(topic=batch.topic)
    policy = channel_policy(campaign.channel)
    policy.publish_check(campaign=campaign, kind=batch.kind)  # Prolific: no sandbox, its pay floor
    production_guard_check(campaign=campaign, live=live)
    if policy.https_required(campaign.environment) and not settings.SITE_URL.startswith("https://"):
        raise ApplicationError(
            f"{policy.short_name} sends workers only to HTTPS pages, but SITE_URL is {settings.SITE_URL}: "
            "set SITE_URL to the public https:// address of this server.",
            code="site_url_not_https",
        )


# ---- What a batch holds -------------------------------------------------------------------


def unpublished_tasks(batch: Batch):
    """The batch's tasks without a HIT yet, in order."""
    return batch.tasks.filter(hit__isnull=True).order_by("position")


# ---- HIT type ----------------------------------------------------------------------------


def requirements_for(*, campaign: Campaign) -> tuple[Requirement, ...]:
    """The worker qualifications of the campaign's channel (MTurk: locale and approval rate)."""
    return channel_policy(campaign.channel).requirements(campaign=campaign)


def work_type_for(*, campaign: Campaign, kind: str) -> WorkType:
    if kind == Batch.Kind.LIKERT:
        description = (
            f"Read {campaign.likert_group_size} short statements about a topic and rate how important "
            "each one is for learning about it. No documents to read."
        )
    else:
        description = (
            f"Put {campaign.comparison_group_size} short statements about a topic in order, "
            "from most to least important for learning about it. No documents to read."
        )
    return WorkType(
        title=campaign.title_for(kind),
        description=description,
        keywords=campaign.hit_keywords,
        reward=campaign.reward_for(kind),
        assignment_duration_seconds=campaign.assignment_duration_seconds,
        auto_approval_delay_seconds=campaign.auto_approval_delay_seconds,
        requirements=requirements_for(campaign=campaign),
    )


def _fingerprint(work_type: WorkType) -> str:
    parameters = {
        "title": work_type.title,
        "description": work_type.description,
        "keywords": work_type.keywords,
        "reward": str(work_type.reward),
        "duration": work_type.assignment_duration_seconds,
        "auto_approval": work_type.auto_approval_delay_seconds,
        "requirements": [
            [r.type_id, r.comparator, list(r.integers), list(r.countries)] for r in work_type.requirements
        ],
    }
    return hashlib.sha256(json.dumps(parameters, sort_keys=True).encode()).hexdigest()


def hit_type_ensure(*, campaign: Campaign, kind: str, marketplace: Marketplace) -> str:
    """The HIT type id for the campaign's current parameters, created at most once."""
    work_type = work_type_for(campaign=campaign, kind=kind)
    fingerprint = _fingerprint(work_type)
    rows = HITType.objects.filter(campaign=campaign, environment=marketplace.environment, fingerprint=fingerprint)
    known = rows.values_list("hit_type_id", flat=True).first()
    if known:
        return known
    hit_type_id = marketplace.work_type_create(work_type)
    try:
        with transaction.atomic():
            HITType.objects.create(
                campaign=campaign,
                kind=kind,
                environment=marketplace.environment,
                fingerprint=fingerprint,
                hit_type_id=hit_type_id,
            )
    except IntegrityError:
        pass  # a concurrent publish recorded it; MTurk returned the same id to both
    return hit_type_id


# ---- HITs --------------------------------------------------------------------------------


def hit_url(task: Task) -> str:
    return f"{settings.SITE_URL}/hit/{task.uuid}/"


def _hit_record(*, task: Task, remote: RemoteHIT, environment: str, channel: str) -> bool:
    """Record the task's HIT; False when a concurrent publish recorded it first (the token made
    the marketplace answer both with the same HIT)."""
    with transaction.atomic():
        _, created = HIT.objects.get_or_create(
            task=task,
            defaults={
                "channel": channel,
                "environment": environment,
                "hit_id": remote.hit_id,
                "hit_type_id": remote.hit_type_id,
                "status": remote.status or HIT.Status.ASSIGNABLE,
                "max_assignments": remote.max_assignments,
                "reward": remote.reward,
                "expires_at": remote.expiration,
            },
        )
    return created


def batch_publish(*, batch_id: int, live: bool = False, dispatch: Dispatch | None = None) -> PublishResult:
    """Publish every task of the batch that has no HIT yet; see the module docstring. With
    `dispatch`, Celery workers take chunks too (crowd.work.chunks)."""
    batch = Batch.objects.select_related("topic__campaign").get(pk=batch_id)
    campaign = batch.topic.campaign
    _publish_check(batch=batch, live=live)
    task_ids = list(unpublished_tasks(batch).values_list("pk", flat=True))
    if not task_ids and batch.status != Batch.Status.CREATED:
        # Out already, and opened: nothing to ask the marketplace.
        return PublishResult(batch_id=batch.pk, published=0, already=batch.tasks.count(), cost=ledger.ZERO)
    marketplace = get_marketplace(campaign)
    try:
        cost = ledger.batch_commit(batch_id=batch.pk)
    except ledger.BudgetExceeded as refused:
        # Held back until the cap is raised: said once, on the batch, not at every attempt.
        if batch_hold(batch_id=batch.pk, reason=refused.message):
            logger.warning("%s is held back: %s", batch, refused.message)
        raise
    try:
        _reachable_check(campaign=campaign, marketplace=marketplace)
    except ApplicationError:
        ledger.batch_commit_withdraw(batch_id=batch.pk)  # nothing was sent: all of it
        raise
    uncertain: list[UUID] | None = None  # None until the HITs' calls are over
    try:
        published = shared = 0
        if task_ids:
            hit_type_ensure(campaign=campaign, kind=batch.kind, marketplace=marketplace)
            chunks = chunks_split(task_ids, floor=CHUNK_FLOOR, ceiling=CHUNK_SIZE, shared=dispatch is not None)
            reports = chunks_work(
                chunks=chunks, now=timezone.now(), work=_until_failure(), dispatch=dispatch, job="publish"
            )
            published = sum(report["published"] for report in reports)
            shared = sum(report.get("chunks_shared", 0) for report in reports)
            uncertain = [UUID(token) for report in reports for token in report["uncertain"]]
            failure = _chunks_failure(reports)
            if failure is not None:
                raise failure
        uncertain = []
        # The marketplace's step for the batch as a whole (a Prolific study); idempotent.
        marketplace.batch_open(batch=batch)
    except ApplicationError as failure:
        _failed_publish_withdraw(batch=batch, failure=failure, uncertain_tasks=uncertain)
        raise
    _batch_published(batch_id=batch.pk)
    already = batch.tasks.filter(hit__isnull=False).count() - published
    return PublishResult(batch_id=batch.pk, published=published, already=already, cost=cost, chunks_shared=shared)


def _until_failure() -> Callable[[list[int]], dict]:
    """The pass's own chunk work: once a chunk failed, the chunks it has yet to do are left
    unpublished (and their commitment withdrawn) instead of meeting the failure again."""
    failed = False

    def work(task_ids: list[int]) -> dict:
        nonlocal failed
        if failed:
            return {"published": 0, "uncertain": [], "error": None}
        report = _chunk_publish(task_ids)
        failed = report["error"] is not None
        return report

    return work


def chunk_publish(*, chunk: Chunk) -> None:
    """A Celery worker's share of a publish (crowd.tasks.publish_chunk): the chunk's tasks,
    unless the publish is over or someone took the chunk; done once each task has its HIT."""
    chunk_work(
        chunk=chunk,
        work=lambda: {**_chunk_publish(chunk.ids), "chunks_shared": 1},
        done=lambda: not Task.objects.filter(pk__in=chunk.ids, hit__isnull=True).exists(),
    )


def _chunk_publish(task_ids: list[int]) -> dict:
    """Publish the chunk's tasks that have no HIT yet, a few calls at once (crowd.work.calls),
    each HIT recorded as its call ends. A report that fits a NOTIFY: HITs recorded, the tasks
    whose request may have reached the marketplace though it failed, the first failure."""
    batch = Batch.objects.select_related("topic__campaign").get(tasks__pk=task_ids[0])
    campaign = batch.topic.campaign
    marketplace = get_marketplace(campaign)
    hit_type_id = hit_type_ensure(campaign=campaign, kind=batch.kind, marketplace=marketplace)  # the pass made it
    tasks = list(unpublished_tasks(batch).filter(pk__in=task_ids))
    report: dict = {"published": 0, "uncertain": [], "error": None}

    def call(task: Task) -> RemoteHIT:
        publication = Publication(
            url=hit_url(task),
            max_assignments=task.assignments_needed,
            lifetime_seconds=campaign.hit_lifetime_seconds,
            token=str(task.uuid),
            annotation=f"salience {campaign.slug} batch {batch.pk} task {task.position}",
        )
        return marketplace.hit_publish(work_type_id=hit_type_id, publication=publication)

    def done(outcome: Outcome[Task, RemoteHIT]) -> None:
        if outcome.error is None:
            assert outcome.result is not None
            recorded = _hit_record(
                task=outcome.item, remote=outcome.result, environment=marketplace.environment, channel=campaign.channel
            )
            report["published"] += int(recorded)
            return
        if stops_run(outcome.error):  # no answer it could trust: the HIT may exist
            report["uncertain"].append(str(outcome.item.uuid))
        if report["error"] is None:
            report["error"] = _failure_dict(outcome.error)

    calls_run(channel=campaign.channel, items=tasks, call=call, done=done, stop=lambda error: True)
    return report


_FAILURES: dict[str, type[MarketplaceError]] = {
    "unavailable": MarketplaceUnavailable,
    "unknown": OutcomeUnknown,
    "refused": MarketplaceError,
}


def _failure_dict(error: MarketplaceError) -> dict:
    kind = next(name for name, cls in _FAILURES.items() if isinstance(error, cls))
    return {"kind": kind, "message": error.message, "marketplace_code": error.marketplace_code}


def _chunks_failure(reports: list[dict]) -> MarketplaceError | None:
    """The first failure the chunks reported, as the error it was."""
    for report in reports:
        if report["error"] is not None:
            failure = report["error"]
            return _FAILURES[failure["kind"]](failure["message"], marketplace_code=failure["marketplace_code"])
    return None


def _reachable_check(*, campaign: Campaign, marketplace: Marketplace) -> None:
    """Ask the marketplace once, quickly, before any HIT is sent: a marketplace that does not
    answer is said in seconds, with what to start, instead of after every retry. One that
    answers but is busy (throttling, a fault: a marketplace code) is left to the retries."""
    try:
        marketplace.reachable_check()
    except MarketplaceUnavailable as unreachable:
        if unreachable.marketplace_code:
            return
        policy = channel_policy(campaign.channel)
        raise MarketplaceUnavailable(
            f"{policy.unreachable_wording(campaign.environment)} Nothing was published or committed. "
            f"({unreachable.message})",
            marketplace_code=unreachable.marketplace_code,
            code="marketplace_unreachable",
        ) from unreachable


def _failed_publish_withdraw(*, batch: Batch, failure: ApplicationError, uncertain_tasks: list[UUID] | None) -> None:
    """Withdraw what the failed run committed for work that never reached the marketplace, and
    say so in the error. A request whose outcome is unknown (no answer, or an answer that says
    it may have taken effect) keeps its commitment: the marketplace may have acted on it. Those
    are `uncertain_tasks` when HITs' calls failed so; otherwise the batch's opening (a
    Prolific study) or the step before the HITs."""
    uncertain = isinstance(failure, (MarketplaceUnavailable, OutcomeUnknown))
    withdrawal = ledger.batch_commit_withdraw(
        batch_id=batch.pk,
        uncertain_tasks=uncertain_tasks or [],
        opening_uncertain=uncertain and not uncertain_tasks,
    )
    policy = channel_policy(batch.topic.campaign.channel)
    note = f"{policy.tasks_wording(batch.tasks.filter(hit__isnull=False).count())} of {batch} are out"
    if withdrawal.withdrawn:
        note += f"; {policy.money_wording(withdrawal.withdrawn)} committed for the rest was withdrawn"
    if withdrawal.kept:
        note += (
            f"; {policy.money_wording(withdrawal.kept)} stays committed for what may have reached {policy.short_name} before the failure: "
            "publish again to find it, or expire the batch to release it"
        )
    logger.warning("publishing %s failed: %s %s.", batch, failure.message, note)
    failure.message = f"{failure.message} {note}."
    failure.args = (failure.message,)


@transaction.atomic
def _batch_published(*, batch_id: int) -> None:
    batch = Batch.objects.select_for_update().get(pk=batch_id)
    batch_hold(batch_id=batch_id, reason="")
    if not batch.tasks.filter(hit__isnull=True).exists():
        batch_status_move(batch_id=batch_id, to=Batch.Status.PUBLISHED)
    # The first published batch makes a draft campaign active (its settings are then fixed).
    campaign_activate(campaign_id=batch.topic.campaign_id)
