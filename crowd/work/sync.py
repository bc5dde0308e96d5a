"""Assignment sync: what the marketplace holds, reconciled with what our HIT pages stored.

A pass (`assignments_sync`; the loop's one owner, ranking.workflow, runs one at a time)
visits only the open HITs with news (`hits_with_news`):

* an answer of ours is pending: our page stored it, its channel has not confirmed it yet;
* work is due for approval (`approval_due`, below);
* the HIT's deadlines passed (it expired, and the last accepted assignment's deadline with
  it): the sweep that collects it;
* the marketplace lists the HIT as reviewable — every slot in, or expired with nothing in
  flight (MTurk's ListReviewableHITs; the session channels have none) — and we hold fewer
  confirmed answers than it has slots: the marketplace holds answers our page never stored.

The HITs go in chunks of CHUNK_SIZE, which the pass and every Celery worker take
(crowd.work.chunks): adding workers shortens a pass. For each chunk (`hits_sync`):

1. Each HIT's assignments are listed at its marketplace (`assignments_by_hit`: MTurk one
   ListAssignmentsForHIT per HIT, every status and page; a session channel one read for the
   chunk). No lock is held across a remote call.
2. In one transaction the chunk's HIT rows, then our answers to their tasks, are locked (a
   query each), and each listed assignment is matched with our answer by (assignment id,
   worker): found → `verified`; missing (the worker's post to us failed) → MTurk's answer XML
   is parsed and stored through the HIT page's own `crowd.hit_page.store.answer_submit`, then
   marked `recovered`; approved or rejected at the marketplace (auto-approval, the requester
   website) → recorded, with its ledger entry. Our answers still `pending` that the
   marketplace does not list become `unverified` (never counted) once the HIT is collected
   or their own deadline and LISTING_GRACE have passed: a forged post, or a worker who never
   submitted to MTurk. The writes are bulk: a few statements for the chunk.
3. Approval policy (`approval_due`): a submitted, confirmed assignment is approved once
   quality control has run for its worker after it was submitted
   (WorkerQuality.computed_at > submitted_at), or when the marketplace's auto-approval is
   less than the channel's approval margin away (its policy's: MTurk
   MTURK_APPROVAL_MARGIN_SECONDS; the session channels approve on our own clock), whichever
   comes first. One marketplace call each, then the outcomes are recorded together.
4. A HIT is *collected* when all its assignments are in (or it expired and the last
   accepted assignment's deadline passed) and no answer of ours is pending; *complete*
   when it is collected and all its work is reviewed. A complete HIT releases the budget
   of slots nobody took, is deleted at the marketplace, and is not synced again.
5. The report says which campaigns and topics had HITs synced; sync enqueues nothing of
   another app's. What happens next (quality control, the pipeline, publishing) is the
   loop's owner's: `ranking.workflow`.

Remote calls come first; the database changes follow in their own transactions, so a failed
call leaves nothing half-written, and a transient failure (MarketplaceUnavailable) aborts
the pass for the Celery task to retry; what was synced so far stays.
"""

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q
from django.utils import timezone

from annotation.models import Campaign
from config.errors import ApplicationError, Conflict
from crowd.hit_page.answers import InvalidAnswer
from crowd.hit_page.content import hit_content_get
from crowd.hit_page.store import answer_submit
from crowd.marketplaces.base import (
    InvalidRemoteAnswer,
    Marketplace,
    MarketplaceError,
    MarketplaceUnavailable,
    NotFoundAtMarketplace,
    RemoteAssignment,
)
from crowd.marketplaces.registry import channel_policy, marketplace_for, policies
from crowd.models import CONFIRMED, HIT, Assignment, WorkerQuality, confirmed
from crowd.work import ledger
from crowd.work.chunks import Chunk, Dispatch, chunk_work, chunks_work
from crowd.work.review import Review, approve_at_marketplace, reviews_record

logger = logging.getLogger(__name__)

Status = Assignment.Status
Verification = Assignment.Verification
# A listing may lag a fresh submission by a few minutes (reference §7.3).
LISTING_GRACE = timedelta(minutes=10)
# HITs per chunk: one transaction for their rows, one Celery task when the pass is shared.
CHUNK_SIZE = 100
REPORTED_ERRORS = 20  # per chunk; the rest are counted (a worker's report fits in a NOTIFY)


@dataclass
class SyncReport:
    hits: int = 0
    verified: int = 0
    recovered: int = 0
    unverified: int = 0
    invalid: int = 0  # marketplace copies that are not a valid answer to their task
    approved: int = 0
    completed: int = 0
    chunks_shared: int = 0  # chunks of the pass that Celery workers did (crowd.work.chunks)
    errors: list[str] = field(default_factory=list)
    campaign_ids: set[int] = field(default_factory=set)  # campaigns whose HITs were synced
    topic_ids: set[int] = field(default_factory=set)

    def add(self, other: "SyncReport") -> None:
        counts = ("hits", "verified", "recovered", "unverified", "invalid", "approved", "completed", "chunks_shared")
        for name in counts:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.errors += other.errors
        self.campaign_ids |= other.campaign_ids
        self.topic_ids |= other.topic_ids

    def as_dict(self) -> dict:
        summary = asdict(self)
        summary["campaign_ids"], summary["topic_ids"] = sorted(self.campaign_ids), sorted(self.topic_ids)
        return summary

    @classmethod
    def from_dict(cls, data: dict) -> "SyncReport":
        values = {item.name: data[item.name] for item in fields(cls) if item.name in data}
        return cls(**{**values, "campaign_ids": set(data["campaign_ids"]), "topic_ids": set(data["topic_ids"])})


def assignments_sync(
    *, hit_ids: Iterable[int] | None = None, now: datetime | None = None, dispatch: Dispatch | None = None
) -> SyncReport:
    """Sync the open HITs with news (or exactly the open ones in `hit_ids`); see the module
    docstring. With `dispatch`, Celery workers take chunks too (crowd.work.chunks)."""
    now = now or timezone.now()
    report = SyncReport()
    open_hits = HIT.objects.filter(complete=False, deleted=False)
    if hit_ids is None:
        visit = hits_with_news(now=now, report=report)
    else:
        visit = list(open_hits.filter(pk__in=list(hit_ids)).order_by("pk").values_list("pk", flat=True))
    chunks = [visit[start : start + CHUNK_SIZE] for start in range(0, len(visit), CHUNK_SIZE)]
    for result in chunks_work(chunks=chunks, now=now, work=lambda chunk: _chunk_sync(chunk, now), dispatch=dispatch):
        report.add(SyncReport.from_dict(result))
    if hit_ids is None:
        report.unverified += pending_sweep(now=now)
    return report


def chunk_sync(*, chunk: Chunk, now: datetime) -> None:
    """A Celery worker's share of a pass (crowd.tasks.sync_chunk): the chunk's HITs, unless
    the pass is over or someone took the chunk; done once its HITs carry the pass's time."""
    chunk_work(
        chunk=chunk,
        work=lambda: {**_chunk_sync(chunk.hit_ids, now), "chunks_shared": 1},
        done=lambda: HIT.objects.filter(pk__in=chunk.hit_ids, last_synced_at=now).exists(),
    )


def _chunk_sync(hit_ids: list[int], now: datetime) -> dict:
    report = hits_sync(hit_ids=hit_ids, now=now)
    if len(report.errors) > REPORTED_ERRORS:
        more = len(report.errors) - REPORTED_ERRORS
        report.errors = [*report.errors[:REPORTED_ERRORS], f"... and {more} more (see the log)"]
    return report.as_dict()


# ---- Which HITs have news ------------------------------------------------------------------------


def hits_with_news(*, now: datetime, report: SyncReport) -> list[int]:
    """The open HITs a pass visits, in primary-key order; see the module docstring."""
    open_hits = HIT.objects.filter(complete=False, deleted=False)
    campaigns = list(
        Campaign.objects.filter(pk__in=open_hits.values("task__batch__topic__campaign_id")).only(
            "pk", "channel", "assignment_duration_seconds", "auto_approval_delay_seconds"
        )
    )
    if not campaigns:
        return []
    pending = Assignment.objects.pending().filter(task__hit__complete=False, task__hit__deleted=False)
    news = set(pending.values_list("task__hit", flat=True).distinct())
    submitted = Assignment.objects.confirmed().filter(
        status=Status.SUBMITTED, task__hit__complete=False, task__hit__deleted=False
    )
    news |= set(submitted.filter(approval_due(now=now, campaigns=campaigns)).values_list("task__hit", flat=True))
    swept = Q(pk__in=[])
    for campaign in campaigns:
        last_deadline = now - timedelta(seconds=campaign.assignment_duration_seconds)
        swept |= Q(task__batch__topic__campaign_id=campaign.pk, expires_at__lte=last_deadline)
    news |= set(open_hits.filter(swept).values_list("pk", flat=True))
    news |= _reviewable_short(open_hits=open_hits, report=report)
    return sorted(news)


def approval_due(*, now: datetime, campaigns: Iterable[Campaign]) -> Q:
    """Which of `campaigns`' submitted, confirmed assignments to approve now: quality control
    has run for the worker since the assignment was submitted, or the channel's auto-approval
    (submitted_at + the campaign's delay) is within the channel's approval margin. Excluded
    workers are paid too: exclusion keeps their labels out of the ranking; only an admin
    rejects."""
    qc_since = WorkerQuality.objects.filter(
        campaign_id=OuterRef("task__batch__topic__campaign_id"),
        worker_id=OuterRef("worker_id"),
        computed_at__gt=OuterRef("submitted_at"),
    )
    near = Q(pk__in=[])
    for campaign in campaigns:
        margin = channel_policy(campaign.channel).approval_margin()  # MTurk: MTURK_APPROVAL_MARGIN_SECONDS
        auto_approved_from = now - timedelta(seconds=campaign.auto_approval_delay_seconds) + margin
        near |= Q(task__batch__topic__campaign_id=campaign.pk, submitted_at__lte=auto_approved_from)
    return Q(Exists(qc_since)) | near


def _reviewable_short(*, open_hits, report: SyncReport) -> set[int]:
    """Open HITs their marketplace lists as reviewable while we hold fewer confirmed answers
    than their slots: the marketplace has answers our page never stored."""
    short: set[int] = set()
    pairs = open_hits.values_list("task__batch__topic__campaign__channel", "environment").distinct()
    for channel, environment in sorted(pairs):
        try:
            reviewable = [
                hit.hit_id for hit in marketplace_for(channel=channel, environment=environment).hits_reviewable()
            ]
        except MarketplaceUnavailable:
            raise
        except ApplicationError as error:
            logger.error("listing reviewable HITs of %s %s failed: %s", channel, environment, error.message)
            report.errors.append(f"{channel} {environment}: {error.message}")
            continue
        if not reviewable:
            continue
        listed = open_hits.filter(environment=environment, hit_id__in=reviewable)
        listed = listed.filter(task__batch__topic__campaign__channel=channel)
        listed.exclude(status=HIT.Status.REVIEWABLE).update(status=HIT.Status.REVIEWABLE)
        held = Count("task__assignments", filter=confirmed("task__assignments__"))
        short |= set(listed.annotate(held=held).filter(held__lt=F("max_assignments")).values_list("pk", flat=True))
    return short


def pending_sweep(*, now: datetime) -> int:
    """Pending answers on HITs sync no longer visits (complete, deleted) or on tasks without
    one, once their deadline and the listing grace have passed: unverified. Their channel can
    no longer confirm them: a post with an invented assignment id ends here, whatever state
    its HIT is in. (Session channels confirm by hold: crowd.sessions.holds.sessions_verify.)"""
    sessions = [policy.channel for policy in policies() if policy.sessions]
    stale = (
        Assignment.objects.pending()
        .filter(Q(task__hit__isnull=True) | Q(task__hit__complete=True) | Q(task__hit__deleted=True))
        .exclude(task__batch__topic__campaign__channel__in=sessions)
    )
    durations = Campaign.objects.filter(pk__in=stale.values("task__batch__topic__campaign_id")).values_list(
        "pk", "assignment_duration_seconds"
    )
    swept = 0
    for campaign_id, seconds in durations:
        cutoff = now - timedelta(seconds=seconds) - LISTING_GRACE
        overdue = Q(accepted_at__lt=cutoff) | Q(accepted_at__isnull=True, submitted_at__lt=cutoff)
        swept += (
            stale.filter(overdue, task__batch__topic__campaign_id=campaign_id)
            .order_by()
            .update(verification=Verification.UNVERIFIED)
        )
    if swept:
        logger.warning("%d stored answer(s) their channel never confirmed marked unverified", swept)
    return swept


# ---- One chunk ---------------------------------------------------------------------------------


@dataclass
class _Visit:
    """One HIT of a chunk: what its marketplace lists, and our answers to its task."""

    hit: HIT
    remote: list[RemoteAssignment]
    ours: list[Assignment] = field(default_factory=list)

    @property
    def campaign(self) -> Campaign:
        return self.hit.task.batch.topic.campaign

    def collected(self, *, now: datetime, pending_ignored: bool = False) -> bool:
        counted = sum(1 for answer in self.ours if answer.verification in CONFIRMED)
        pending = sum(1 for answer in self.ours if answer.verification == Verification.PENDING)
        return _collected(hit=self.hit, counted=counted, pending=0 if pending_ignored else pending, now=now)

    def waiting(self) -> set[tuple[str, str]]:
        """Listed as submitted and not approved (by us) since: still to be reviewed."""
        approved = {(a.assignment_id, a.worker.external_id) for a in self.ours if a.status != Status.SUBMITTED}
        submitted = {(item.assignment_id, item.worker_id) for item in self.remote if item.status == Status.SUBMITTED}
        return submitted - approved


def hits_sync(*, hit_ids: list[int], now: datetime) -> SyncReport:
    """Sync these HITs (a chunk); see the module docstring."""
    report = SyncReport()
    hits = HIT.objects.filter(pk__in=hit_ids, complete=False, deleted=False).order_by("pk")
    groups: dict[tuple[str, str], list[HIT]] = defaultdict(list)
    for hit in hits.select_related("task__batch__topic__campaign"):
        groups[hit.task.batch.topic.campaign.channel, hit.environment].append(hit)
    for (channel, environment), group in groups.items():
        try:
            marketplace = marketplace_for(channel=channel, environment=environment)
        except ApplicationError as error:  # no client for it here, ...
            for hit in group:
                _error(report, hit, error.message)
            continue
        listed = marketplace.assignments_by_hit([hit.hit_id for hit in group])  # MarketplaceUnavailable: retried
        visits, gone = [], []
        for hit in group:
            remote = listed[hit.hit_id]
            if isinstance(remote, MarketplaceError):
                if isinstance(remote, NotFoundAtMarketplace):
                    gone.append(hit.pk)
                _error(report, hit, remote.message)
            else:
                visits.append(_Visit(hit=hit, remote=remote))
        HIT.objects.filter(pk__in=gone).update(status=HIT.Status.DISPOSED, deleted=True, last_synced_at=now)
        if visits:
            _visits_sync(visits=visits, marketplace=marketplace, now=now, report=report)
    return report


def _error(report: SyncReport, hit: HIT, message: str) -> None:
    logger.error("sync of HIT %s failed: %s", hit.hit_id, message)
    report.errors.append(f"{hit.hit_id}: {message}")


def _visits_sync(*, visits: list[_Visit], marketplace: Marketplace, now: datetime, report: SyncReport) -> None:
    with transaction.atomic():
        _hits_lock(visits)
        _listings_apply(visits=visits, now=now, report=report)
        due = approvals_due(visits=visits, now=now)
        HIT.objects.filter(pk__in=[visit.hit.pk for visit in visits]).update(last_synced_at=now)
    reviews, unavailable = _approve(due=due, marketplace=marketplace, report=report)
    with transaction.atomic():
        _hits_lock(visits)
        reviews_record(reviews=reviews)  # what the marketplace did is recorded, even before a failure
        complete = [] if unavailable else _hits_complete(visits=visits, now=now)
    report.approved += sum(1 for review in reviews if review.status == Status.APPROVED)
    if unavailable is not None:
        raise unavailable
    report.completed += len(complete)
    _hits_delete(hits=complete, marketplace=marketplace)
    for visit in visits:
        report.hits += 1
        report.topic_ids.add(visit.hit.task.batch.topic_id)
        report.campaign_ids.add(visit.campaign.pk)


def _approve(
    *, due: list[Assignment], marketplace: Marketplace, report: SyncReport
) -> tuple[list[Review], MarketplaceUnavailable | None]:
    """Approve each at the marketplace (one call each: none approves in bulk); the decisions
    it now holds, and the transient failure that stopped the run, if one did."""
    reviews: list[Review] = []
    for assignment in due:
        try:
            status = approve_at_marketplace(marketplace=marketplace, assignment=assignment)
        except MarketplaceUnavailable as unavailable:
            return reviews, unavailable
        except MarketplaceError as error:
            logger.error("approving assignment %s failed: %s", assignment.assignment_id, error.message)
            report.errors.append(f"assignment {assignment.assignment_id}: {error.message}")
            continue
        if status != Status.SUBMITTED:  # still Submitted: the marketplace is not ready; the next pass
            reviews.append(Review(assignment.pk, status))
            assignment.status = status
    return reviews, None


def _hits_lock(visits: list[_Visit]) -> None:
    """The chunk's HIT rows, in one query. FOR NO KEY UPDATE: it serialises syncs and reviews
    of a HIT, while a worker's answer to it is stored meanwhile (its foreign key only shares
    the row's key)."""
    hits = HIT.objects.select_for_update(no_key=True).filter(pk__in=[visit.hit.pk for visit in visits])
    list(hits.order_by("pk").values("pk"))


def _listings_apply(*, visits: list[_Visit], now: datetime, report: SyncReport) -> None:
    """Match every listed assignment with our answer (recovering it from the channel's copy
    when we have none), record what the marketplace decided, and mark unverified our pending
    answers it can no longer list. Under the HITs' locks; our answers are locked here."""
    channel = visits[0].campaign.channel
    by_task = {visit.hit.task_id: visit for visit in visits}
    listed_ids = {item.assignment_id for visit in visits for item in visit.remote}
    answers = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("worker")
        .filter(Q(task_id__in=list(by_task)) | Q(assignment_id__in=listed_ids, worker__channel=channel))
        .order_by("pk")
    )
    stored: dict[tuple[str, str], Assignment] = {}
    for answer in answers:
        if answer.worker.channel == channel:
            stored[answer.assignment_id, answer.worker.external_id] = answer
        if answer.task_id in by_task:
            by_task[answer.task_id].ours.append(answer)
    verified: list[Assignment] = []
    decided: list[Review] = []
    for visit in visits:
        for item in visit.remote:
            ours = stored.get((item.assignment_id, item.worker_id))
            if ours is None:
                ours = _recover(hit=visit.hit, remote=item, report=report)
                if ours is None:
                    continue
                visit.ours.append(ours)
            elif ours.task_id != visit.hit.task_id:
                logger.error(
                    "assignment %s of worker %s is stored for another task than HIT %s",
                    item.assignment_id,
                    item.worker_id,
                    visit.hit.hit_id,
                )
                report.errors.append(f"{visit.hit.hit_id}: assignment {item.assignment_id} is stored for another task")
                continue
            elif ours.verification not in CONFIRMED:
                ours.verification = Verification.VERIFIED
                verified.append(ours)
            if item.status != Status.SUBMITTED and item.status != ours.status:
                decided.append(Review(ours.pk, item.status, item.feedback))
                ours.status = item.status
    Assignment.objects.filter(pk__in=[answer.pk for answer in verified]).update(verification=Verification.VERIFIED)
    for visit in visits:  # an answer stored before its HIT was recorded
        strays = [answer.pk for answer in visit.ours if answer.hit_id != visit.hit.pk]
        if strays:
            Assignment.objects.filter(pk__in=strays).update(hit=visit.hit)
    report.verified += len(verified)
    reviews_record(reviews=decided)
    report.unverified += _unseen_mark(visits=visits, now=now)


def _recover(*, hit: HIT, remote: RemoteAssignment, report: SyncReport) -> Assignment | None:
    """Store the channel's copy of an answer our page never received (MTurk keeps one);
    None when it is not valid. Rare: one answer at a time."""
    try:
        content = hit_content_get(hit.task.uuid)
        assert content is not None, "the HIT's task exists: the caller holds the HIT's row lock"
        submission = answer_submit(
            content=content,
            assignment_id=remote.assignment_id,
            worker_external_id=remote.worker_id,
            fields=channel_policy(hit.channel).answer_fields(remote.answer_xml),
            accepted_at=remote.accepted_at,
        )
    except (InvalidRemoteAnswer, InvalidAnswer, Conflict) as error:
        logger.warning(
            "HIT %s: the marketplace's copy of assignment %s of worker %s cannot be stored: %s",
            hit.hit_id,
            remote.assignment_id,
            remote.worker_id,
            error.message,
        )
        report.invalid += 1
        return None
    assignment = submission.assignment
    # Stored by our page a moment ago (created=False) is a verified answer, not a recovered one.
    assignment.verification = Verification.RECOVERED if submission.created else Verification.VERIFIED
    assignment.hit = hit
    assignment.submitted_at = remote.submitted_at or assignment.submitted_at
    assignment.save(update_fields=["verification", "hit", "submitted_at"])
    if submission.created:
        report.recovered += 1
    else:
        report.verified += 1
    return assignment


def _unseen_mark(*, visits: list[_Visit], now: datetime) -> int:
    """Our pending answers the marketplace does not list, once it can no longer list them
    (the HIT is collected, or their own deadline and the listing grace passed): unverified."""
    overdue = []
    for visit in visits:
        seen = {(item.assignment_id, item.worker_id) for item in visit.remote}
        collected = visit.collected(now=now, pending_ignored=True)
        duration = timedelta(seconds=visit.campaign.assignment_duration_seconds)
        for answer in visit.ours:
            if answer.verification != Verification.PENDING:
                continue
            late = collected or (answer.accepted_at or answer.submitted_at) + duration + LISTING_GRACE < now
            if late and (answer.assignment_id, answer.worker.external_id) not in seen:
                answer.verification = Verification.UNVERIFIED
                overdue.append(answer)
    if not overdue:
        return 0
    changed = Assignment.objects.filter(pk__in=[a.pk for a in overdue], verification=Verification.PENDING).update(
        verification=Verification.UNVERIFIED
    )
    logger.warning("%d stored answer(s) unknown to the marketplace marked unverified", changed)
    return changed


def approvals_due(*, visits: list[_Visit], now: datetime) -> list[Assignment]:
    """Our submitted, confirmed answers of these HITs that their marketplace lists as
    submitted and that `approval_due` says to approve now — or whose auto-approval the
    marketplace itself puts within the approval margin."""
    listed = {
        (item.assignment_id, item.worker_id): item.auto_approval_at
        for visit in visits
        for item in visit.remote
        if item.status == Status.SUBMITTED
    }
    candidates = {
        answer.pk: (visit, answer)
        for visit in visits
        for answer in visit.ours
        if answer.status == Status.SUBMITTED
        and answer.verification in CONFIRMED
        and (answer.assignment_id, answer.worker.external_id) in listed
    }
    if not candidates:
        return []
    campaigns = {visit.campaign.pk: visit.campaign for visit in visits}.values()
    rule = approval_due(now=now, campaigns=campaigns)
    due = set(Assignment.objects.filter(rule, pk__in=list(candidates)).values_list("pk", flat=True))
    for pk, (visit, answer) in candidates.items():
        auto_at = listed[answer.assignment_id, answer.worker.external_id]
        margin = channel_policy(visit.campaign.channel).approval_margin()
        if auto_at is not None and now >= auto_at - margin:
            due.add(pk)
    return [answer for pk, (_, answer) in sorted(candidates.items()) if pk in due]


def _hits_complete(*, visits: list[_Visit], now: datetime) -> list[HIT]:
    """Mark complete the HITs collected with all their work reviewed, and release the budget
    of their slots nobody took; under the HITs' locks."""
    complete = [visit for visit in visits if visit.collected(now=now) and not visit.waiting()]
    HIT.objects.filter(pk__in=[visit.hit.pk for visit in complete]).update(complete=True)
    ledger.hits_unfilled_released(
        unfilled=[(v.campaign.pk, v.hit, max(0, v.hit.max_assignments - len(v.remote))) for v in complete]
    )
    return [visit.hit for visit in complete]


def _collected(*, hit: HIT, counted: int, pending: int, now: datetime) -> bool:
    """The one rule of a collected HIT, given its confirmed and pending answers."""
    if pending:
        return False
    if counted >= hit.max_assignments:
        return True
    duration = timedelta(seconds=hit.task.batch.topic.campaign.assignment_duration_seconds)
    return hit.expires_at is not None and now >= hit.expires_at + duration


def hit_collected(*, hit: HIT, now: datetime, pending_ignored: bool = False) -> bool:
    """All answers are in: every slot holds a confirmed answer, or the HIT expired and the last
    accepted assignment's deadline passed — and (unless `pending_ignored`) none of our answers
    is still waiting for the marketplace."""
    answers = Assignment.objects.filter(task_id=hit.task_id).aggregate(
        counted=Count("pk", filter=confirmed()),
        pending=Count("pk", filter=Q(verification=Verification.PENDING)),
    )
    pending = 0 if pending_ignored else answers["pending"]
    return _collected(hit=hit, counted=answers["counted"], pending=pending, now=now)


def _hits_delete(*, hits: list[HIT], marketplace: Marketplace) -> None:
    """Delete complete HITs at the marketplace so they stop cluttering listings; best effort."""
    deleted = []
    for hit in hits:
        try:
            marketplace.hit_delete(hit.hit_id)
        except MarketplaceUnavailable:
            raise
        except MarketplaceError as error:
            logger.info("HIT %s is complete but cannot be deleted yet: %s", hit.hit_id, error.message)
            continue
        deleted.append(hit.pk)
    HIT.objects.filter(pk__in=deleted).update(deleted=True, status=HIT.Status.DISPOSED)
