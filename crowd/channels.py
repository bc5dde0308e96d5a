"""The session channels: Prolific studies and self-managed participant links.

Both hand tasks out in sessions (crowd/sessions.py) instead of letting workers pick HITs,
but to the rest of the app they are marketplaces like MTurk (crowd/marketplace.py):
publishing records one HIT per task, sync lists each HIT's assignments, approval and
rejection go through the same review code, and the ledger counts the money. The
difference is where the "remote" state lives:

* **Participant links** have no remote at all. A HIT is our own record that the task is
  on offer; its assignments are the answers whose hold (TaskHold) was handed to the
  participant who gave them. No money moves, so approvals are bookkeeping only.
* **Prolific** has one study per batch (`batch_open`): its places are sessions of
  `tasks_per_session` tasks, the study URL brings the participant to `/s/prolific/` with
  Prolific's participant, study and session ids, and the last task redirects to
  Prolific's completion URL with the study's completion code. Task-level approvals are
  ours; Prolific pays per submission (one per session), which `studies_sync` approves once
  every answer of the session is reviewed, or rejects when every one was rejected.
  crowd/prolific.py is the only module that talks to Prolific.
"""

import logging
import math
import secrets
from dataclasses import dataclass
from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from annotation.campaigns import campaign_update
from annotation.models import Batch, Campaign
from config.errors import ApplicationError, Conflict
from crowd import sessions
from crowd.marketplace import (
    DuplicateRequest,
    InvalidState,
    MarketplaceError,
    NotFoundAtMarketplace,
    Publication,
    RemoteAssignment,
    RemoteHIT,
    WorkType,
)
from crowd.models import HIT, Assignment, Study, TaskHold, WorkSession

logger = logging.getLogger(__name__)

Channel = Campaign.Channel
HIT_PREFIX = {Channel.PROLIFIC: "P", Channel.LINKS: "L"}
REJECTION_CATEGORY = "LOW_EFFORT"
# Seconds a participant needs per task, for Prolific's estimated completion time; the
# campaign's channel_settings["prolific"]["seconds_per_task"] overrides it.
DEFAULT_SECONDS_PER_TASK = 45
# Prolific's published minimum pay, in the workspace currency per hour.
PROLIFIC_MIN_HOURLY = Decimal("8.00")


class SessionMarketplace:
    """The Marketplace interface for a session channel; see the module docstring."""

    def __init__(self, *, channel: str, environment: str):
        self.channel = channel
        self.environment = environment

    # -- Publishing --

    def work_type_create(self, work_type: WorkType) -> str:
        return f"{self.channel}-work"  # nothing remote: every task is offered the same way

    def hit_publish(self, *, work_type_id: str, publication: Publication) -> RemoteHIT:
        lifetime = timedelta(seconds=publication.lifetime_seconds)
        return RemoteHIT(
            hit_id=HIT_PREFIX[self.channel] + publication.token.replace("-", "").upper(),
            hit_type_id=work_type_id,
            status=HIT.Status.ASSIGNABLE,
            max_assignments=publication.max_assignments,
            reward=Decimal("0.00"),
            expiration=timezone.now() + lifetime,
        )

    def batch_open(self, *, batch: Batch) -> None:
        if self.channel == Channel.PROLIFIC:
            study_open(batch=batch, environment=self.environment)

    # -- Reading --

    def hit_get(self, hit_id: str) -> RemoteHIT:
        hit = HIT.objects.filter(channel=self.channel, environment=self.environment, hit_id=hit_id).first()
        if hit is None:
            raise NotFoundAtMarketplace(f"There is no HIT {hit_id} on {Channel(self.channel).label}.")
        open_ = hit.expires_at is None or hit.expires_at > timezone.now()
        return RemoteHIT(
            hit_id=hit.hit_id,
            hit_type_id=hit.hit_type_id,
            status=hit.status
            if hit.complete or hit.deleted
            else HIT.Status.ASSIGNABLE
            if open_
            else HIT.Status.UNASSIGNABLE,
            max_assignments=hit.max_assignments,
            reward=hit.reward,
            expiration=hit.expires_at,
        )

    def assignments_list(self, hit_id: str) -> list[RemoteAssignment]:
        """The answers that arrived through a hold of the participant who gave them."""
        hit = (
            HIT.objects.select_related("task__batch__topic__campaign")
            .filter(channel=self.channel, environment=self.environment, hit_id=hit_id)
            .first()
        )
        if hit is None:
            raise NotFoundAtMarketplace(f"There is no HIT {hit_id} on {Channel(self.channel).label}.")
        delay = timedelta(seconds=hit.task.batch.topic.campaign.auto_approval_delay_seconds)
        holds = TaskHold.objects.filter(task_id=hit.task_id, submitted_at__isnull=False).select_related(
            "session__worker"
        )
        answers = {(a.assignment_id, a.worker_id): a for a in Assignment.objects.filter(task_id=hit.task_id)}
        listed = []
        for hold in holds:
            answer = answers.get((hold.assignment_id, hold.session.worker_id))
            if answer is None:
                continue
            listed.append(
                RemoteAssignment(
                    assignment_id=hold.assignment_id,
                    worker_id=hold.session.worker.external_id,
                    hit_id=hit.hit_id,
                    status=answer.status,
                    accepted_at=hold.held_at,
                    submitted_at=answer.submitted_at,
                    auto_approval_at=answer.submitted_at + delay,
                    deadline=hold.expires_at,
                    feedback=answer.reject_reason,
                )
            )
        return listed

    def assignment_get(self, assignment_id: str) -> RemoteAssignment:
        hold = (
            TaskHold.objects.select_related("session__worker", "task__hit").filter(assignment_id=assignment_id).first()
        )
        answer = (
            None
            if hold is None
            else Assignment.objects.filter(assignment_id=assignment_id, worker_id=hold.session.worker_id).first()
        )
        if answer is None:
            raise NotFoundAtMarketplace(f"There is no submitted assignment {assignment_id}.")
        return RemoteAssignment(
            assignment_id=assignment_id,
            worker_id=hold.session.worker.external_id,
            hit_id=hold.task.hit.hit_id,
            status=answer.status,
            submitted_at=answer.submitted_at,
        )

    # -- Decisions: ours; Prolific's submission-level ones follow in studies_sync --

    def assignment_approve(self, assignment_id: str, *, feedback: str = "") -> None:
        self._reviewable(assignment_id)

    def assignment_reject(self, assignment_id: str, *, feedback: str) -> None:
        self._reviewable(assignment_id)

    def _reviewable(self, assignment_id: str) -> None:
        answer = Assignment.objects.filter(assignment_id=assignment_id).first()
        if answer is None:
            raise NotFoundAtMarketplace(f"There is no submitted assignment {assignment_id}.")
        if answer.status != Assignment.Status.SUBMITTED:
            raise InvalidState(f"Assignment {assignment_id} is {answer.status} already.")

    def worker_block(self, worker_id: str, *, reason: str) -> None:
        """Nothing remote: the session pages turn blocked workers away (Worker.blocked)."""

    def worker_unblock(self, worker_id: str, *, reason: str) -> None:
        """Nothing remote, as for a block."""

    def bonus_send(self, *, worker_id: str, assignment_id: str, amount: Decimal, reason: str, token: str) -> None:
        if self.channel != Channel.PROLIFIC:
            raise MarketplaceError(
                "Participant links pay nobody: there is no marketplace to send a bonus through.",
                code="no_payments",
            )
        hold = TaskHold.objects.select_related("session__study").filter(assignment_id=assignment_id).first()
        if hold is None or hold.session.study is None or not hold.session.study.study_id:
            raise NotFoundAtMarketplace(f"Assignment {assignment_id} belongs to no Prolific study.")
        if Assignment.objects.filter(assignment_id=assignment_id, bonuses__token=token, bonuses__sent_at__isnull=False):
            raise DuplicateRequest(f"The bonus {token} was paid already.")
        _prolific(self.environment).bonus_pay(study_id=hold.session.study.study_id, bonuses=[(worker_id, amount)])

    def hit_expire(self, hit_id: str) -> None:
        """Nothing remote: sessions stop getting tasks of an expired HIT (crowd.expiry sets
        its expiration); a Prolific study is stopped by studies_sync once its batch ends."""

    def hit_delete(self, hit_id: str) -> None:
        """Nothing remote: the HIT row stays as the record of what was offered."""

    def balance(self) -> Decimal:
        raise MarketplaceError(
            f"{Channel(self.channel).label} shows no account balance here.", code="balance_unavailable"
        )


# ---- Prolific studies ------------------------------------------------------------------------


def _prolific(environment: str):
    from crowd.prolific import prolific_client

    return prolific_client(environment=environment)


def study_url() -> str:
    """Where Prolific sends participants: /s/prolific/ with its three ids as placeholders."""
    from crowd.prolific import study_url

    return study_url(f"{settings.SITE_URL}/s/prolific/")


def session_reward_cents(campaign: Campaign, kind: str) -> int:
    """What one session pays: tasks per session at the task's reward."""
    reward = campaign.likert_reward if kind == Batch.Kind.LIKERT else campaign.comparison_reward
    return int((reward * campaign.tasks_per_session * 100).to_integral_value(rounding=ROUND_HALF_UP))


def study_places(batch: Batch, tasks_per_session: int) -> int:
    """Sessions the batch needs: its slots over the tasks one participant can do (never the
    same task twice, so at most the batch's number of tasks)."""
    needed = list(batch.tasks.values_list("assignments_needed", flat=True))
    per_session = max(1, min(tasks_per_session, len(needed)))
    return max(1, math.ceil(sum(needed) / per_session))


def session_minutes(campaign: Campaign) -> int:
    seconds = int(campaign.channel_settings.get("prolific", {}).get("seconds_per_task", DEFAULT_SECONDS_PER_TASK))
    return max(1, math.ceil(campaign.tasks_per_session * seconds / 60))


def prolific_pay_check(*, campaign: Campaign, kind: str) -> None:
    """Prolific refuses studies that pay less than its hourly minimum: say so before anything
    is committed, with the figures to change."""
    minutes = session_minutes(campaign)
    per_session = Decimal(session_reward_cents(campaign, kind)) / 100
    hourly = (per_session * 60 / minutes).quantize(Decimal("0.01"))
    if hourly < PROLIFIC_MIN_HOURLY:
        reward = campaign.likert_reward if kind == Batch.Kind.LIKERT else campaign.comparison_reward
        needed = (PROLIFIC_MIN_HOURLY * minutes / 60 / campaign.tasks_per_session).quantize(
            Decimal("0.01"), rounding="ROUND_UP"
        )
        raise ApplicationError(
            f"A session of {campaign.tasks_per_session} {kind} tasks at {reward} each pays {per_session} for about "
            f"{minutes} minutes, {hourly} an hour; Prolific's minimum is {PROLIFIC_MIN_HOURLY} an hour. Raise the "
            f"{kind} reward to at least {needed}, or set a shorter time per task in the campaign's channel settings.",
            code="reward_below_minimum",
        )


def study_open(*, batch: Batch, environment: str) -> Study:
    """Create and publish the batch's study, once: our row first (its internal name is the
    idempotency key at Prolific and its completion code is fixed), then the remote study,
    then publication. A re-run after a failure picks up where the last one stopped."""
    campaign = batch.topic.campaign
    prolific_settings = campaign.channel_settings.get("prolific", {})
    study, _ = Study.objects.get_or_create(
        batch=batch,
        defaults={
            "environment": environment,
            "internal_name": f"salience-{campaign.slug}-batch-{batch.pk}",
            "places": study_places(batch, campaign.tasks_per_session),
            "reward_cents": session_reward_cents(campaign, batch.kind),
            "completion_code": secrets.token_hex(4).upper(),
        },
    )
    client = _prolific(environment)
    if not study.study_id:
        from crowd.prolific import StudySpec

        minutes = session_minutes(campaign)
        spec = StudySpec(
            name=prolific_settings.get("title", campaign.hit_title),
            internal_name=study.internal_name,
            description=_study_description(campaign, batch),
            external_study_url=study_url(),
            total_available_places=study.places,
            reward_cents=study.reward_cents,
            estimated_completion_minutes=minutes,
            maximum_allowed_minutes=max(minutes * 3, math.ceil(campaign.assignment_duration_seconds / 60)),
            completion_code=study.completion_code,
            filters=tuple(campaign_prolific_filters(campaign)),
            device_compatibility=tuple(prolific_settings.get("devices", ("desktop", "tablet", "mobile"))),
        )
        remote = client.study_create(spec)
        Study.objects.filter(pk=study.pk).update(study_id=remote.id, status=remote.status)
        study.refresh_from_db()
    if study.published_at is None:
        remote = client.study_publish(study.study_id)
        Study.objects.filter(pk=study.pk).update(status=remote.status, published_at=timezone.now())
        study.refresh_from_db()
    return study


def _study_description(campaign: Campaign, batch: Batch) -> str:
    what = (
        "rate how important short statements are for learning about a topic"
        if batch.kind == Batch.Kind.LIKERT
        else "put short statements in order of importance for learning about a topic"
    )
    return (
        f"You will do {campaign.tasks_per_session} short tasks in a row: in each, {what}. "
        "No documents to read. A progress line shows how many tasks are left; after the last one "
        "you are sent back to Prolific automatically."
    )


@dataclass
class StudiesReport:
    studies: int = 0
    approved: int = 0
    rejected: int = 0
    abandoned: int = 0
    stopped: int = 0


ABANDONED_STATUSES = ("RETURNED", "TIMED-OUT")


def studies_sync(*, now=None) -> StudiesReport:
    """Reconcile every open study with Prolific: returned or timed-out participants free
    their task; a finished session's submission is approved once every answer in it is
    reviewed (rejected only when every answer was rejected); a study whose batch ended is
    stopped."""
    now = now or timezone.now()
    report = StudiesReport()
    studies = Study.objects.exclude(study_id="").exclude(status="COMPLETED").select_related("batch__topic__campaign")
    for study in studies.order_by("pk"):
        client = _prolific(study.environment)
        by_participant = {s.worker.external_id: s for s in study.sessions.select_related("worker")}
        for submission in client.submissions_list(study.study_id):
            session = by_participant.get(submission.participant_id)
            if session is None:
                continue
            _submission_apply(client=client, study=study, session=session, submission=submission, report=report)
        _places_top_up(client=client, study=study, now=now)
        if study.batch.status in (Batch.Status.COMPLETE, Batch.Status.EXPIRED) and study.status != "AWAITING REVIEW":
            try:
                remote = client.study_stop(study.study_id)
                study.status = remote.status
                report.stopped += 1
            except InvalidState:
                pass  # stopped or completed at Prolific already
        study.last_synced_at = now
        study.save(update_fields=["status", "last_synced_at"])
        report.studies += 1
    return report


def _places_top_up(*, client, study: Study, now) -> None:
    """Every place is used, nobody is working, and tasks still need answers (some
    participants were excluded, or did fewer tasks than planned): open more places."""
    if study.batch.status != Batch.Status.PUBLISHED or study.sessions.filter(status=WorkSession.Status.ACTIVE).exists():
        return
    used = study.sessions.count()
    if used < study.places:
        return
    taken = TaskHold.objects.filter(task__batch=study.batch, released_at__isnull=True, submitted_at__isnull=False)
    counted = taken.exclude(
        Exists(Assignment.objects.filter(assignment_id=OuterRef("assignment_id"), status=Assignment.Status.REJECTED))
    ).count()
    missing = sum(study.batch.tasks.values_list("assignments_needed", flat=True)) - counted
    if missing <= 0:
        return
    per_session = max(1, min(study.batch.topic.campaign.tasks_per_session, study.batch.tasks.count()))
    total = study.places + math.ceil(missing / per_session)
    remote = client.study_places_increase(study.study_id, total)
    Study.objects.filter(pk=study.pk).update(places=total, status=remote.status)
    study.places, study.status = total, remote.status
    logger.info("study %s: %d answers still missing, places raised to %d", study.study_id, missing, total)


def _submission_apply(*, client, study: Study, session: WorkSession, submission, report: StudiesReport) -> None:
    status = submission.status
    if session.submission_id != submission.id or session.submission_status != status:
        WorkSession.objects.filter(pk=session.pk).update(submission_id=submission.id, submission_status=status)
    if status in ABANDONED_STATUSES and session.status == WorkSession.Status.ACTIVE:
        sessions.session_abandon(session)
        report.abandoned += 1
        return
    if status in ("APPROVED", "REJECTED") and session.reviewed_at is None:
        # Decided at Prolific (by us in a run that died before recording it, or by hand).
        WorkSession.objects.filter(pk=session.pk).update(reviewed_at=timezone.now())
        return
    if status != "AWAITING REVIEW" or session.reviewed_at is not None:
        return
    answers = Assignment.objects.filter(
        worker_id=session.worker_id,
        assignment_id__in=session.holds.filter(submitted_at__isnull=False).values("assignment_id"),
    )
    statuses = list(answers.values_list("status", flat=True))
    if session.status != WorkSession.Status.FINISHED or not statuses or Assignment.Status.SUBMITTED in statuses:
        return  # wait: the session is unfinished or quality control has not reviewed it yet
    # The remote call first, outside any transaction (a lock held across it would stall
    # everyone else); recording it is idempotent, and a lost record heals at the next sync.
    if all(s == Assignment.Status.REJECTED for s in statuses):
        reasons = sorted(set(answers.exclude(reject_reason="").values_list("reject_reason", flat=True)))
        client.submission_reject(submission.id, message=_rejection_message(reasons), category=REJECTION_CATEGORY)
        report.rejected += 1
        new_status = "REJECTED"
    else:
        client.submission_approve(submission.id)
        report.approved += 1
        new_status = "APPROVED"
    WorkSession.objects.filter(pk=session.pk).update(reviewed_at=timezone.now(), submission_status=new_status)


def _rejection_message(reasons: list[str]) -> str:
    text = "Every task in this session was rejected by quality control. " + " ".join(reasons)
    # Prolific asks for an explanation of at least 100 characters.
    if len(text) < 100:
        text += " The answers did not follow the instructions, for example on the check statements."
    return text[:1000]


def completion_url(study: Study) -> str:
    return _prolific(study.environment).completion_url(study.completion_code)


# ---- Choosing the channel ------------------------------------------------------------------------


def prolific_filters_check(filters) -> list[dict]:
    """Prolific eligibility filters as its API takes them on a study (docs.prolific.com,
    api-reference/filters): a list of objects, each with a "filter_id" and either
    "selected_values" (choice ids, as strings) or "selected_range" ({"lower", "upper"}, either
    may be left out), and optional "weightings" for quotas. Returns them, or raises
    ApplicationError naming every problem by position and field."""
    if not isinstance(filters, list):
        raise ApplicationError("Prolific filters must be a JSON list of filter objects.", code="invalid_filters")
    problems = []
    for number, item in enumerate(filters, start=1):
        where = f"filter {number}"
        if not isinstance(item, dict):
            problems.append(f"{where}: an object is needed, not {type(item).__name__}")
            continue
        filter_id = item.get("filter_id")
        if not isinstance(filter_id, str) or not filter_id.strip():
            problems.append(f'{where}: "filter_id" is missing (a text such as "approval_rate")')
        else:
            where = f"filter {number} ({filter_id})"
        problems += [f"{where}: {problem}" for problem in _filter_problems(item)]
    if problems:
        raise ApplicationError(
            "The Prolific filters are not usable: " + "; ".join(problems) + ".",
            code="invalid_filters",
            details={"problems": problems},
        )
    return filters


def _filter_problems(item: dict) -> list[str]:
    unknown = set(item) - {"filter_id", "selected_values", "selected_range", "weightings"}
    problems = [f'unknown field "{name}"' for name in sorted(unknown)]
    values, bounds = item.get("selected_values"), item.get("selected_range")
    if (values is None) == (bounds is None):
        return problems + ['give either "selected_values" or "selected_range"']
    if values is not None:
        texts = isinstance(values, list) and values and all(isinstance(v, str) and v for v in values)
        if not texts:
            problems.append('"selected_values" must be a non-empty list of choice ids, as texts')
        weightings = item.get("weightings")
        if weightings is not None and not (
            isinstance(weightings, dict)
            and set(weightings) <= set(values if texts else ())
            and all(_number(w) and w > 0 for w in weightings.values())
        ):
            problems.append('"weightings" must map selected values to positive numbers')
        return problems
    if not isinstance(bounds, dict) or not bounds or set(bounds) - {"lower", "upper"}:
        return problems + ['"selected_range" must be an object with "lower", "upper" or both']
    numbers = {key: value for key, value in bounds.items() if _number(value)}
    if len(numbers) != len(bounds):
        problems.append('"selected_range" bounds must be numbers')
    elif "lower" in numbers and "upper" in numbers and numbers["lower"] > numbers["upper"]:
        problems.append(f'"selected_range" lower {numbers["lower"]} is above upper {numbers["upper"]}')
    if "weightings" in item:
        problems.append('"weightings" go with "selected_values" only')
    return problems


def _number(value) -> bool:
    """A JSON number the database can store: not a boolean, not NaN or infinite."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def campaign_prolific_filters(campaign: Campaign) -> list[dict]:
    """The eligibility filters every Prolific study of the campaign is created with."""
    return (campaign.channel_settings or {}).get("prolific", {}).get("filters", [])


@transaction.atomic
def channel_settings_set(
    *,
    campaign: Campaign,
    channel: str,
    environment: str | None = None,
    tasks_per_session: int | None = None,
    prolific_filters: list[dict] | None = None,
) -> Campaign:
    """What the Channel page and the channel API change, all or nothing: the channel and
    environment (`channel_set`), the tasks per session and the Prolific filters (left as they
    are when None). Returns the campaign as stored."""
    channel_set(campaign=campaign, channel=channel, environment=environment)
    if tasks_per_session is not None and tasks_per_session != campaign.tasks_per_session:
        campaign = campaign_update(campaign_id=campaign.pk, changes={"tasks_per_session": tasks_per_session})
    if prolific_filters is not None:
        campaign = prolific_filters_set(campaign=campaign, filters=prolific_filters)
    campaign.refresh_from_db()
    return campaign


def prolific_filters_set(*, campaign: Campaign, filters: list[dict]) -> Campaign:
    """Store the filters every study of the campaign is created with (a draft campaign only,
    as every setting)."""
    prolific_filters_check(filters)
    settings_now = dict(campaign.channel_settings or {})
    settings_now["prolific"] = {**settings_now.get("prolific", {}), "filters": filters}
    if settings_now == (campaign.channel_settings or {}):
        return campaign
    return campaign_update(campaign_id=campaign.pk, changes={"channel_settings": settings_now})


def channel_set(*, campaign: Campaign, channel: str, environment: str | None = None) -> Campaign:
    """Switch the campaign to `channel` (and environment) while nothing is published yet:
    workers already at one marketplace cannot be moved to another."""
    if channel not in Channel.values:
        raise ApplicationError(
            f"{channel!r} is not a channel: choose one of {', '.join(Channel.values)}.", code="invalid_channel"
        )
    environment = environment or campaign.mturk_environment
    if channel == Channel.PROLIFIC and environment == Campaign.Environment.SANDBOX:
        environment = Campaign.Environment.LOCAL  # Prolific has no sandbox; rehearse on the local endpoint
    if (channel, environment) == (campaign.channel, campaign.mturk_environment):
        return campaign
    if HIT.objects.filter(task__batch__topic__campaign=campaign).exists():
        raise Conflict(
            f"Campaign {campaign.slug} has published on {campaign.get_channel_display()} already; its channel "
            "cannot change any more. Create a new campaign for another channel.",
            code="channel_fixed",
        )
    Campaign.objects.filter(pk=campaign.pk).update(channel=channel, mturk_environment=environment)
    campaign.refresh_from_db(fields=["channel", "mturk_environment"])
    return campaign
