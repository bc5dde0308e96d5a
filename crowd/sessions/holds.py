"""Sessions: a participant arrives once and works through a sequence of tasks.

MTurk pays per HIT and lets workers pick HITs; Prolific and self-managed participant links
work in sessions instead. This module hands tasks out to sessions, one at a time:

* A session works on the tasks of its *pool*: a Prolific study's batch, or, for a
  participant link, every published batch of the campaign that still needs answers.
* `hold_next` gives the session a task that still needs assignments: never one its
  participant already did or holds, never more holders than assignments needed (active
  holds plus submitted ones), first come first served in batch and task order — on a
  Prolific study, the task with the most free slots first, and a new session is sized to
  the answers left (`study_session_share`), so its places match its answers. Choosing
  and recording the hold happen under a lock on the campaign row, so two participants
  arriving at once never take the last slot twice.
* A hold is active until its answer arrives, until it is released, or until
  `expires_at` (the campaign's assignment duration): an abandoned hold frees its slot.
* The task is done on the ordinary HIT page, with the hold's `assignmentId`, the
  participant's `workerId` and `turkSubmitTo` = the session's address, so the page posts
  the answer's copy back to the session (`hold_submit`), the way it posts to MTurk. Quality
  control, traps and the ranking loop see exactly the labels an MTurk HIT would give.
* A campaign with a consent text hands a session no task before its participant agreed to it
  (`session_consent`, which records when and the text's `consent_digest`); `hold_next`
  refuses with `ConsentRequired`. A text changed after they agreed is asked again before
  their next task (`consent_due`), and an answer given before they agreed again counts
  nowhere: its hold is released (`answer_consented`, in `hold_submit` and `sessions_verify`).
* An answer stored by the page counts only when it belongs to a hold of its participant in a
  session its channel confirmed (crowd.models.session_confirmed: a Prolific session is opened
  only for a submission Prolific lists) — `hold_submit`, or `sessions_verify` when the copy
  never arrived; any other answer on a session channel is marked unverified and never
  counted. A session Prolific never listed is withdrawn (`session_withdraw`): its holds are
  freed and its answers unverified, whatever they were.
"""

import hashlib
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.models import Batch, Campaign, Task
from config.errors import ApplicationError, Conflict, Gone, NotFound, TooBusy
from crowd.marketplaces.registry import policies
from crowd.models import (
    Assignment,
    ParticipantLink,
    Study,
    TaskHold,
    Worker,
    WorkerBlock,
    WorkerQuality,
    WorkSession,
    session_confirmed,
)
from crowd.work.events import task_answered

Verification = Assignment.Verification
# A submitted hold that was released: its session was withdrawn, its answer counts nowhere.
WITHDRAWN = Q(submitted_at__isnull=False, released_at__isnull=False)


@dataclass(frozen=True)
class SessionProgress:
    done: int  # tasks submitted in this session
    target: int  # tasks the session asks for
    current: int | None  # the position of the task in hand ("task 3 of 10"), if any

    @property
    def finished(self) -> bool:
        return self.done >= self.target


# ---- Who may work ------------------------------------------------------------------------


class ConsentRequired(ApplicationError):
    """The campaign asks for consent and this session's participant has not given it."""

    code = "consent_required"
    http_status = 403


def consent_digest(text: str) -> str:
    """The consent text's version: SHA-256 of the text as participants read it (line endings
    and the white space around it do not count); empty for no consent step."""
    text = text.replace("\r\n", "\n").strip()
    return hashlib.sha256(text.encode("utf-8")).hexdigest() if text else ""


def consent_due(session: WorkSession, campaign: Campaign | None = None) -> bool:
    """The campaign has a consent text and the participant has not agreed to this text in
    this session (never, or to a text the researcher changed since)."""
    current = consent_digest((campaign or session.campaign).consent_text)
    return bool(current) and session.consent_digest != current


def answer_consented(session: WorkSession, answer: Assignment, campaign: Campaign | None = None) -> bool:
    """The one rule of consent for an answer: it counts only if its participant had agreed to
    the text in force when it was given — no consent step, or agreement to the current text
    recorded before the answer was stored. After a change of text, an answer given before the
    participant agreed again counts nowhere (so is one whose copy arrives after the change:
    when the text changed is not kept, and the safe side is not to count)."""
    if not consent_digest((campaign or session.campaign).consent_text):
        return True
    if consent_due(session, campaign):
        return False
    return session.consented_at is not None and answer.submitted_at >= session.consented_at


def _answer_refused_for_consent(*, hold: TaskHold, answer: Assignment, now: datetime) -> None:
    """Free the hold's place for someone else and mark the answer unverified: it counts nowhere."""
    TaskHold.objects.filter(pk=hold.pk, submitted_at__isnull=True, released_at__isnull=True).update(released_at=now)
    Assignment.objects.filter(pk=answer.pk).update(verification=Verification.UNVERIFIED)


CONSENT_CHANGED_ANSWER = (
    "The study information changed after you agreed to it, so this answer was not counted. "
    "Please read the new information; if you agree, you will get your next task."
)


def session_consent(session: WorkSession, *, digest: str | None = None, now: datetime | None = None) -> WorkSession:
    """The participant agreed to the consent text whose `consent_digest` is `digest` (the page
    they read; None: the campaign's text now): recorded with the time, once per text (a second
    agreement, from a page opened twice, keeps the first time). An agreement to a text changed
    since records nothing: the session is asked again."""
    now = now or timezone.now()
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().get(pk=session.campaign_id)
        current = consent_digest(campaign.consent_text)
        if current and (digest is None or digest == current):
            digest = current
            WorkSession.objects.filter(pk=session.pk).exclude(consent_digest=digest).update(
                consented_at=now, consent_digest=digest
            )
    session.refresh_from_db(fields=["consented_at", "consent_digest"])
    session.campaign = campaign  # the text just compared with, for the caller's consent_due
    return session


def worker_turned_away(*, campaign: Campaign, worker: Worker) -> bool:
    """Banned, blocked by this campaign's owner, or excluded by quality control in this
    campaign (an override wins)."""
    return worker.blocked or Worker.objects.filter(turned_away(campaign, worker=""), pk=worker.pk).exists()


def turned_away(campaign: Campaign, *, worker: str = "worker") -> Q:
    """Who `worker_turned_away` turns away, as a condition on rows whose `worker` field is the
    worker ("": rows of Worker itself)."""
    prefix, row = (f"{worker}__", OuterRef(worker)) if worker else ("", OuterRef("pk"))
    return (
        Q(**{f"{prefix}blocked": True})
        | Q(Exists(WorkerBlock.objects.reaching(campaign).filter(worker=row)))
        | Q(Exists(WorkerQuality.objects.excluded().filter(campaign=campaign, worker=row)))
    )


def session_worker(*, channel: str, external_id: str) -> Worker:
    worker, _ = Worker.objects.get_or_create(channel=channel, external_id=external_id)
    return worker


# ---- Opening a session -------------------------------------------------------------------


def study_session_open(*, study: Study, worker: Worker, submission_id: str, submission_status: str) -> WorkSession:
    """The participant's one session on a Prolific study, opened on first arrival, confirmed by
    the submission Prolific listed for them (crowd.channels.prolific.study_sync.study_arrive asks first;
    its id is the SESSION_ID)."""
    campaign = study.topic.campaign
    confirmed = {
        "external_session_id": submission_id,
        "submission_id": submission_id,
        "submission_status": submission_status,
    }
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).first()  # shares are counted one arrival at a time
        session, created = WorkSession.objects.select_for_update().get_or_create(
            study=study,
            worker=worker,
            defaults={
                "campaign": campaign,
                "key": uuid.uuid4(),
                "tasks_target": study_session_share(study=study, tasks_per_session=campaign.tasks_per_session),
                **confirmed,
            },
        )
        if not created and session.submission_id != submission_id:
            # The participant returned the study and took it again: Prolific made a new submission.
            WorkSession.objects.filter(pk=session.pk).update(**confirmed)
            for field, value in confirmed.items():
                setattr(session, field, value)
    return session


def study_tasks(study: Study):
    """The tasks of the study's open batches: what its sessions are handed, from any of them."""
    return Task.objects.filter(batch__study_link__study=study, batch__status=Batch.Status.PUBLISHED)


def study_session_share(*, study: Study, tasks_per_session: int) -> int:
    """How many tasks a new session of the study is given: a full session while answers are
    left for one, the remainder for the last place, so the study's places match its answers
    (crowd.marketplaces.prolific.study_opening.study_places, per batch) and nobody is sized for
    tasks no one can give them. Answers counted or promised to the sessions working now are not
    left, but for sessions of participants turned away (`turned_away`). Counted over the
    study's open batches: those its sessions are handed tasks from."""
    tasks = study_tasks(study)
    needed = sum(tasks.values_list("assignments_needed", flat=True))
    counted = TaskHold.objects.filter(task__in=tasks, submitted_at__isnull=False, released_at__isnull=True)
    # A participant turned away (blocked, or excluded by quality control) gets no more tasks
    # and is asked to return the study: their share is left, before sync sees the return.
    working = study.sessions.filter(status=WorkSession.Status.ACTIVE).exclude(turned_away(study.topic.campaign))
    promised = (
        sum(working.values_list("tasks_target", flat=True))
        - TaskHold.objects.filter(session__in=working, submitted_at__isnull=False).count()
    )
    left = needed - counted.count() - max(0, promised)
    return max(1, min(tasks_per_session, tasks.count(), left))


def study_slots_free(*, study: Study, now: datetime | None = None) -> int:
    """Answers the study's sessions can still be handed: free slots of its tasks still on offer
    (a task whose HIT collected all it will get, rejected answers included, offers none)."""
    now = now or timezone.now()
    taken = (
        TaskHold.objects.filter(_active(now), task=OuterRef("pk")).values("task").annotate(n=Count("pk")).values("n")
    )
    tasks = study_tasks(study).filter(hit__isnull=False, hit__complete=False, hit__deleted=False)
    slots = tasks.annotate(taken=Coalesce(Subquery(taken), 0)).values_list("assignments_needed", "taken")
    return sum(max(0, needed - held) for needed, held in slots)


def link_session_open(*, link: ParticipantLink, worker: Worker, address: str | None = None) -> WorkSession:
    """The participant's unfinished session through this link, or a new one. A new session on
    an open link from `address` (config.client_address) is refused (`TooBusy`) while that
    address has LINK_SESSIONS_PER_ADDRESS live sessions on the link, or the link has
    LINK_SESSIONS_PER_LINK: invented codes cannot take every place (issue 24, N3)."""
    if link.revoked:
        raise Gone("This link was withdrawn by the researcher.", code="link_revoked")
    with transaction.atomic():
        session = (
            WorkSession.objects.select_for_update()
            .filter(link=link, worker=worker, status=WorkSession.Status.ACTIVE)
            .first()
        )
        if session is None:
            if address is not None and link.kind == ParticipantLink.Kind.OPEN:
                _link_caps_check(link=link, address=address)
            session = WorkSession.objects.create(
                campaign=link.campaign,
                worker=worker,
                link=link,
                key=uuid.uuid4(),
                tasks_target=link.campaign.tasks_per_session,
                opened_from=address,
            )
    return session


def live_sessions(*, now: datetime | None = None):
    """Sessions holding a task's place now: what an open link's caps count (a session with
    nothing to do, or whose place was released for idleness, hoards nothing)."""
    now = now or timezone.now()
    holding = TaskHold.objects.filter(
        session=OuterRef("pk"), submitted_at__isnull=True, released_at__isnull=True, expires_at__gt=now
    )
    return WorkSession.objects.filter(status=WorkSession.Status.ACTIVE).filter(Exists(holding))


def _link_caps_check(*, link: ParticipantLink, address: str, session: WorkSession | None = None) -> None:
    """Checked when a session opens and again when it takes a place, under the campaign's
    row lock (which hands out the places too): sessions opened first and loaded later cannot
    get past the caps together."""
    Campaign.objects.select_for_update().filter(pk=link.campaign_id).first()
    live = live_sessions().filter(link=link)
    if session is not None:
        live = live.exclude(pk=session.pk)
    per_address, per_link = settings.LINK_SESSIONS_PER_ADDRESS, settings.LINK_SESSIONS_PER_LINK
    if per_address and live.filter(opened_from=address).count() >= per_address:
        raise TooBusy(
            f"{per_address} sessions are already open on this link from your network. Finish one, or try again "
            "in a few minutes.",
            code="link_sessions_per_address",
        )
    if per_link and live.count() >= per_link:
        raise TooBusy(
            "This link has as many participants working as it allows right now. Please try again in a few minutes.",
            code="link_sessions_per_link",
        )


def participant_name(link: ParticipantLink | None, external_id: str) -> str:
    """Who a session's participant is, for researchers: a personal link's label, the code an
    open link's participant typed, or the marketplace's id (a Prolific PID)."""
    if link is None:
        return external_id
    return link.label if link.kind == ParticipantLink.Kind.PERSONAL else external_id.split("-", 1)[-1]


def session_is_confirmed(session: WorkSession) -> bool:
    """Its channel confirmed the participant (crowd.models.session_confirmed)."""
    return WorkSession.objects.filter(session_confirmed(), pk=session.pk).exists()


def completion_due(session: WorkSession) -> bool:
    """The channel's completion step (Prolific's completion code) is for a confirmed session
    that finished with work done, and for nobody else."""
    return session.status == WorkSession.Status.FINISHED and _done(session) > 0 and session_is_confirmed(session)


def session_get(key) -> WorkSession:
    try:
        key = uuid.UUID(str(key))
    except ValueError:
        raise NotFound("There is no such session. Open the link you were given again.") from None
    session = WorkSession.objects.select_related("campaign", "worker", "study", "link").filter(key=key).first()
    if session is None:
        raise NotFound("There is no such session. Open the link you were given again.")
    return session


# ---- Handing out tasks ---------------------------------------------------------------------


def _active(now: datetime) -> Q:
    """Holds that keep a slot: submitted, or neither released nor expired."""
    return Q(released_at__isnull=True) & (Q(submitted_at__isnull=False) | Q(expires_at__gt=now))


def _pool(session: WorkSession):
    """The tasks this session may work on, in the order they are handed out."""
    tasks = Task.objects.filter(hit__isnull=False, hit__complete=False, hit__deleted=False)
    if session.study_id is not None:
        # Any open batch of the session's study, and only those: its round's batches, which
        # are the study's campaign's (crowd.marketplaces.prolific.study_opening links them).
        tasks = tasks.filter(batch__study_link__study_id=session.study_id)
    else:
        tasks = tasks.filter(batch__topic__campaign_id=session.campaign_id)
    tasks = tasks.filter(batch__status=Batch.Status.PUBLISHED)
    return tasks.order_by("batch__published_at", "batch_id", "position")


def hold_current(session: WorkSession, *, now: datetime | None = None) -> TaskHold | None:
    """The task in the session's hands: held, not submitted, not released, not expired."""
    now = now or timezone.now()
    return (
        session.holds.select_related("task__hit")  # the session page shows the task's HIT page
        .filter(submitted_at__isnull=True, released_at__isnull=True, expires_at__gt=now)
        .order_by("-position")
        .first()
    )


def hold_next(session: WorkSession, *, now: datetime | None = None) -> TaskHold | None:
    """The session's current task, or a new hold on the next task that needs answers;
    None when the pool has nothing left for this participant."""
    now = now or timezone.now()
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().get(pk=session.campaign_id)
        session.refresh_from_db(fields=["status", "consented_at", "consent_digest"])
        if consent_due(session, campaign):
            raise ConsentRequired("Please read the study information and agree to it before your next task.")
        current = hold_current(session, now=now)
        if current is not None:
            hold_keep(current, session=session, campaign=campaign, now=now)
            return current
        if session.status != WorkSession.Status.ACTIVE or _done(session) >= session.tasks_target:
            return None
        task = _task_free_for(session, now=now)
        if task is None:
            return None
        if session.link_id is not None and session.opened_from:
            assert session.link is not None, "link_id is set"
            if session.link.kind == ParticipantLink.Kind.OPEN:
                _link_caps_check(link=session.link, address=session.opened_from, session=session)
        position = (session.holds.order_by("-position").values_list("position", flat=True).first() or 0) + 1
        return TaskHold.objects.create(
            session=session,
            task=task,
            assignment_id="S" + uuid.uuid4().hex.upper(),
            position=position,
            held_at=now,
            expires_at=_hold_expiry(session, campaign=campaign, held_at=now, now=now),
        )


def link_idle_seconds(campaign: Campaign) -> int:
    """How long a participant link's held place outlives the last sign of life of its page: the
    campaign's own window (the Channel page), else the deployment's LINK_IDLE_RELEASE_SECONDS
    (0 there, and no window of the campaign's: places last the assignment duration)."""
    if campaign.link_idle_seconds:
        return campaign.link_idle_seconds
    return max(0, settings.LINK_IDLE_RELEASE_SECONDS)


def _hold_expiry(session: WorkSession, *, campaign: Campaign, held_at: datetime, now: datetime) -> datetime:
    """The campaign's assignment duration from when it was held; on a participant link, no
    more than the idle window (`link_idle_seconds`) from the page's last sign of life."""
    end = held_at + timedelta(seconds=campaign.assignment_duration_seconds)
    idle = link_idle_seconds(campaign)
    if session.link_id is None or idle <= 0:
        return end
    return min(end, now + timedelta(seconds=idle))


IDLE_MINUTES_MIN, IDLE_MINUTES_MAX = 2, 24 * 60


def link_idle_set(*, campaign: Campaign, minutes: int | None) -> Campaign:
    """The campaign's idle window, in whole minutes (None: back to the deployment's). Any time,
    published or not: places held now keep their deadline until their page's next sign of life."""
    if minutes is not None and not IDLE_MINUTES_MIN <= minutes <= IDLE_MINUTES_MAX:
        raise ApplicationError(
            f"{minutes} minutes: an idle window is {IDLE_MINUTES_MIN} to {IDLE_MINUTES_MAX} minutes (24 hours), "
            "or empty for the deployment's.",
            code="invalid_idle_window",
            details={"field": "idle_minutes"},
        )
    with transaction.atomic():
        Campaign.objects.select_for_update().filter(pk=campaign.pk).update(
            link_idle_seconds=None if minutes is None else minutes * 60
        )
    campaign.refresh_from_db(fields=["link_idle_seconds"])
    return campaign


def hold_keep(hold: TaskHold, *, session: WorkSession, campaign: Campaign, now: datetime) -> None:
    """The session's page is open (shown, or its heartbeat): keep the task's place for another
    idle window, never beyond the assignment duration."""
    expires = _hold_expiry(session, campaign=campaign, held_at=hold.held_at, now=now)
    if expires > hold.expires_at:
        TaskHold.objects.filter(pk=hold.pk).update(expires_at=expires)
        hold.expires_at = expires


def session_alive(session: WorkSession, *, now: datetime | None = None) -> bool:
    """The heartbeat of the session's page: keep the place of the task in hand. False when
    there is none (released for idleness, answered, or the session is over)."""
    now = now or timezone.now()
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().get(pk=session.campaign_id)
        current = hold_current(session, now=now)
        if current is None or session.status != WorkSession.Status.ACTIVE:
            return False
        hold_keep(current, session=session, campaign=campaign, now=now)
    return True


def session_next(session: WorkSession, *, now: datetime | None = None) -> TaskHold | None:
    """The task to show the participant next. None when the session is over — finished here
    if it did any work — or when there is nothing for it to do yet (it stays active)."""
    hold = hold_next(session, now=now)
    if hold is None and session.status == WorkSession.Status.ACTIVE and _done(session) > 0:
        session_finish(session, now=now)
    return hold


def _task_free_for(session: WorkSession, *, now: datetime) -> Task | None:
    """The first task of the pool with a free slot that this participant neither did nor holds."""
    # A place a researcher released is not handed back to its participant, who may still send its answer.
    worker_holds = TaskHold.objects.filter(task=OuterRef("pk"), session__worker_id=session.worker_id).filter(
        Q(submitted_at__isnull=False) | Q(released_at__isnull=True) | ~Q(released_by="")
    )
    worker_answers = Assignment.objects.filter(task=OuterRef("pk"), worker_id=session.worker_id)
    taken = (
        TaskHold.objects.filter(_active(now), task=OuterRef("pk")).values("task").annotate(n=Count("pk")).values("n")
    )
    free = (
        _pool(session)
        .exclude(Exists(worker_holds))
        .exclude(Exists(worker_answers))
        .annotate(taken=Coalesce(Subquery(taken), 0))
        .filter(taken__lt=F("assignments_needed"))
        # what the session page shows of the task it hands out: its page, HIT and kind
        .select_related("hit")
        .only("pk", "assignments_needed", "uuid", "kind", "hit__id", "hit__hit_id")
    )
    if session.study_id is not None:
        # A study's sessions take the tasks with the most slots free first, so the slots left
        # stay spread over many tasks and the last sessions can still be given theirs in full
        # (first in task order, five sessions would fill the first ten tasks and leave the
        # sixth three).
        free = free.annotate(free=F("assignments_needed") - F("taken")).order_by("-free", "position")
    return free.first()


def _done(session: WorkSession) -> int:
    return session.holds.filter(submitted_at__isnull=False).count()


def progress(session: WorkSession, *, now: datetime | None = None) -> SessionProgress:
    current = hold_current(session, now=now)
    done = _done(session)
    return SessionProgress(done=done, target=session.tasks_target, current=None if current is None else done + 1)


# ---- Answers -----------------------------------------------------------------------------


def hold_submit(*, session: WorkSession, assignment_id: str, now: datetime | None = None) -> TaskHold:
    """The HIT page stored the answer of `assignment_id` and sent its copy here: count it.

    Idempotent. Refuses an assignment that was not handed to this session, one whose
    answer is not stored (nothing to count), and one given without agreement to the consent
    text in force (`answer_consented`): its hold is released and its answer counts nowhere."""
    now = now or timezone.now()
    refused = released = False
    with transaction.atomic():
        Campaign.objects.select_for_update().filter(pk=session.campaign_id).first()  # places change hands under it
        hold = session.holds.select_for_update().filter(assignment_id=assignment_id).first()
        if hold is None:
            raise Conflict(
                "This task was not handed to you in this session, so its answer cannot be counted.",
                code="task_not_held",
            )
        if not session_is_confirmed(session) or (hold.submitted_at is not None and hold.released_at is not None):
            raise Conflict(
                "Your place in this study was not confirmed by Prolific, so this answer cannot be counted.",
                code="session_not_confirmed",
            )
        answer = Assignment.objects.filter(
            assignment_id=assignment_id, worker_id=session.worker_id, task_id=hold.task_id
        ).first()
        if answer is None:
            raise ApplicationError(
                "Your answer to this task was not saved. Go back to the task and submit it again.",
                code="answer_missing",
            )
        session.refresh_from_db(fields=["consented_at", "consent_digest"])
        if hold.submitted_at is None and not answer_consented(session, answer):
            _answer_refused_for_consent(hold=hold, answer=answer, now=now)
            refused = True
        elif hold.submitted_at is None and not released_answer_fits(hold, now=now):
            Assignment.objects.filter(pk=answer.pk).update(verification=Verification.UNVERIFIED)
            released = True
        else:
            _hold_count(hold=hold, answer=answer, now=now)
            if _done(session) >= session.tasks_target:
                session_finish(session, now=now)
    if refused:  # after the commit: the release and the refusal stay
        raise ConsentRequired(CONSENT_CHANGED_ANSWER)
    if released:
        raise Conflict(RELEASED_ANSWER, code="hold_released")
    task_answered(task_id=hold.task_id)  # confirmed on its hold: it may complete its batch
    return hold


RELEASED_ANSWER = (
    "The researcher released this task while you had it, and it has all the answers it needs now, so this "
    "answer was not counted (it is kept, and counts nowhere). Your next task is ready."
)


def released_answer_fits(hold: TaskHold, *, now: datetime) -> bool:
    """The one rule for an answer to a task whose place a researcher released (hold_release):
    it counts if the task still needs it — its counted answers and the places others hold now
    leave room, and its participant has no other answer to the task counted — and otherwise
    counts nowhere (the participant is told). An answer to a place released for idleness or
    expiry counts as before. Called under the campaign's row lock."""
    if not hold.released_by:
        return True
    others = TaskHold.objects.filter(_active(now), task_id=hold.task_id).exclude(pk=hold.pk)
    twice = TaskHold.objects.filter(
        task_id=hold.task_id, session__worker_id=hold.session.worker_id, submitted_at__isnull=False
    ).exclude(WITHDRAWN)
    return others.count() < hold.task.assignments_needed and not twice.exists()


def hold_release(*, campaign: Campaign, hold_id: int, by: str, now: datetime | None = None) -> TaskHold:
    """A researcher frees a participant link's held place now (the Channel page): the task is
    handed to the next participant who asks. The participant's page learns it at its next
    heartbeat; an answer they still send is judged by `released_answer_fits`. Refuses a hold
    of another campaign or of no link (NotFound), and one already answered, released or
    expired (Conflict), writing nothing."""
    now = now or timezone.now()
    with transaction.atomic():
        Campaign.objects.select_for_update().filter(pk=campaign.pk).first()  # places are handed out under it
        hold = (
            TaskHold.objects.select_for_update()
            .filter(pk=hold_id, session__campaign_id=campaign.pk, session__link__isnull=False)
            .first()
        )
        if hold is None:
            raise NotFound("There is no such held place in this campaign.", code="hold_not_found")
        if hold.submitted_at is not None:
            raise Conflict("This task was answered before the release: nothing to release.", code="hold_answered")
        if hold.released_at is not None or hold.expires_at <= now:
            raise Conflict("This place was released already: the task is free for others.", code="hold_released")
        TaskHold.objects.filter(pk=hold.pk).update(released_at=now, released_by=by[:150])
    hold.refresh_from_db(fields=["released_at", "released_by"])
    return hold


def _hold_count(*, hold: TaskHold, answer: Assignment, now: datetime) -> None:
    if hold.submitted_at is None:
        hold.submitted_at = answer.submitted_at or now
        hold.released_at = None  # an answer that arrives after the hold expired still counts
        hold.save(update_fields=["submitted_at", "released_at"])
    if answer.verification == Verification.PENDING:
        Assignment.objects.filter(pk=answer.pk).update(verification=Verification.VERIFIED)


def session_finish(session: WorkSession, *, now: datetime | None = None) -> None:
    """No more tasks for this session: it did its share, or the pool ran dry."""
    now = now or timezone.now()
    WorkSession.objects.filter(pk=session.pk, status=WorkSession.Status.ACTIVE).update(
        status=WorkSession.Status.FINISHED, finished_at=now
    )
    session.refresh_from_db(fields=["status", "finished_at"])
    session.holds.filter(submitted_at__isnull=True, released_at__isnull=True).update(released_at=now)


def session_abandon(session: WorkSession, *, now: datetime | None = None) -> int:
    """The participant returned the study or timed out: free the task in their hands."""
    now = now or timezone.now()
    WorkSession.objects.filter(pk=session.pk, status=WorkSession.Status.ACTIVE).update(
        status=WorkSession.Status.ABANDONED, finished_at=now
    )
    return session.holds.filter(submitted_at__isnull=True, released_at__isnull=True).update(released_at=now)


def session_withdraw(session: WorkSession, *, now: datetime | None = None) -> int:
    """Its channel never confirmed the participant (Prolific does not list them in the study):
    end the session, free every task it held, submitted or not, and mark its answers
    unverified whatever they were, so they count nowhere. The answers newly unverified."""
    now = now or timezone.now()
    with transaction.atomic():
        WorkSession.objects.filter(pk=session.pk).update(
            status=WorkSession.Status.ABANDONED, finished_at=Coalesce(F("finished_at"), now)
        )
        session.holds.filter(released_at__isnull=True).update(released_at=now)
        answers = Assignment.objects.filter(
            worker_id=session.worker_id, assignment_id__in=session.holds.values("assignment_id")
        ).exclude(verification=Verification.UNVERIFIED)
        return answers.update(verification=Verification.UNVERIFIED)


def session_channels() -> list[str]:
    """The channels that hand tasks out in sessions (their policies say so)."""
    return [policy.channel for policy in policies() if policy.sessions]


# ---- Bookkeeping (crowd.work.sync runs it with every sync) -----------------------------------


@dataclass
class VerifyReport:
    counted: int = 0  # answers whose copy never reached the session, counted from their hold
    unverified: int = 0  # answers on a session channel that no hold of a confirmed session covers
    released: int = 0  # expired holds released


def sessions_verify(*, campaign_ids=None, now: datetime | None = None) -> VerifyReport:
    """Count answers whose hold never heard of them, refuse answers no hold of a confirmed
    session covers, and release expired holds."""
    now = now or timezone.now()
    report = VerifyReport()
    pending = Assignment.objects.filter(
        verification=Verification.PENDING, task__batch__topic__campaign__channel__in=session_channels()
    )
    if campaign_ids is not None:
        pending = pending.filter(task__batch__topic__campaign_id__in=list(campaign_ids))
    for answer in pending.select_related("worker", "task__batch__topic"):
        with transaction.atomic():
            # The campaign's row first, as hold_submit and hold_next take it: one lock order, no deadlock.
            Campaign.objects.select_for_update().filter(pk=answer.task.batch.topic.campaign_id).first()
            hold = (
                TaskHold.objects.select_for_update()
                .filter(assignment_id=answer.assignment_id, task_id=answer.task_id, session__worker_id=answer.worker_id)
                .filter(session_confirmed("session__"))
                .exclude(WITHDRAWN)
                .select_related("session__campaign", "task")
                .first()
            )
            if hold is not None and hold.submitted_at is None and not answer_consented(hold.session, answer):
                _answer_refused_for_consent(hold=hold, answer=answer, now=now)
                report.unverified += 1
                continue
            if hold is None or (hold.submitted_at is None and not released_answer_fits(hold, now=now)):
                Assignment.objects.filter(pk=answer.pk).update(verification=Verification.UNVERIFIED)
                report.unverified += 1
                continue
            _hold_count(hold=hold, answer=answer, now=now)
            report.counted += 1
            session = hold.session
            if session.status == WorkSession.Status.ACTIVE and _done(session) >= session.tasks_target:
                session_finish(session, now=now)
    expired = TaskHold.objects.filter(submitted_at__isnull=True, released_at__isnull=True, expires_at__lte=now)
    if campaign_ids is not None:
        expired = expired.filter(session__campaign_id__in=list(campaign_ids))
    report.released = expired.update(released_at=now)
    return report
