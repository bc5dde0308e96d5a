"""The Marketplace interface for the session channels (Prolific, participant links).

Both hand tasks out in sessions (crowd/sessions/holds.py) instead of letting workers pick HITs,
but to the rest of the app they are marketplaces like MTurk: publishing records one HIT per
task, sync lists each HIT's assignments, approval and rejection go through the same review
code. The "remote" state is ours: a HIT is our own record that the task is on offer, and
its assignments are the answers whose hold (TaskHold) was handed to the participant who
gave them. Task-level approvals are ours; what a channel adds (a Prolific study per round,
its submissions and bonuses) is in its own package, which subclasses `SessionMarketplace`.
"""

from collections.abc import Sequence
from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from annotation.models import Batch
from crowd.marketplaces.base import (
    InvalidState,
    MarketplaceError,
    NotFoundAtMarketplace,
    Publication,
    RemoteAssignment,
    RemoteHIT,
    WorkType,
)
from crowd.models import HIT, Assignment, TaskHold, session_confirmed


class SessionMarketplace:
    """The Marketplace interface for a session channel; see the module docstring."""

    channel = ""
    label = ""
    hit_prefix = ""

    def __init__(self, *, environment: str):
        self.environment = environment

    # -- Publishing --

    def work_type_create(self, work_type: WorkType) -> str:
        return f"{self.channel}-work"  # nothing remote: every task is offered the same way

    def hit_publish(self, *, work_type_id: str, publication: Publication) -> RemoteHIT:
        lifetime = timedelta(seconds=publication.lifetime_seconds)
        return RemoteHIT(
            hit_id=self.hit_prefix + publication.token.replace("-", "").upper(),
            hit_type_id=work_type_id,
            status=HIT.Status.ASSIGNABLE,
            max_assignments=publication.max_assignments,
            reward=Decimal("0.00"),
            expiration=timezone.now() + lifetime,
        )

    def batch_open(self, *, batch: Batch) -> None:
        """Nothing to open for the batch as a whole (a channel with studies overrides it)."""

    def reachable_check(self) -> None:
        """Nothing remote to reach (a channel with a remote overrides it)."""

    # -- Reading --

    def hit_get(self, hit_id: str) -> RemoteHIT:
        hit = HIT.objects.filter(channel=self.channel, environment=self.environment, hit_id=hit_id).first()
        if hit is None:
            raise NotFoundAtMarketplace(f"There is no HIT {hit_id} on {self.label}.")
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
        """The answers that arrived through a hold of the participant who gave them, in a session
        its channel confirmed and did not withdraw (crowd.sessions.holds)."""
        listed = self.assignments_by_hit([hit_id])[hit_id]
        if isinstance(listed, MarketplaceError):
            raise listed
        return listed

    def assignments_by_hit(self, hit_ids: Sequence[str]) -> dict[str, list[RemoteAssignment] | MarketplaceError]:
        """`assignments_list` of every HIT in three reads, whatever their number."""
        hits = {
            hit.task_id: hit
            for hit in HIT.objects.select_related("task__batch__topic__campaign").filter(
                channel=self.channel, environment=self.environment, hit_id__in=list(hit_ids)
            )
        }
        holds = (
            TaskHold.objects.filter(task_id__in=list(hits), submitted_at__isnull=False, released_at__isnull=True)
            .filter(session_confirmed("session__"))
            .select_related("session__worker")
        )
        answers = {
            (a.task_id, a.assignment_id, a.worker_id): a for a in Assignment.objects.filter(task_id__in=list(hits))
        }
        listed: dict[str, list[RemoteAssignment]] = {hit.hit_id: [] for hit in hits.values()}
        for hold in holds:
            answer = answers.get((hold.task_id, hold.assignment_id, hold.session.worker_id))
            if answer is None:
                continue
            hit = hits[hold.task_id]
            delay = timedelta(seconds=hit.task.batch.topic.campaign.auto_approval_delay_seconds)
            listed[hit.hit_id].append(
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
        unknown = {
            hit_id: NotFoundAtMarketplace(f"There is no HIT {hit_id} on {self.label}.")
            for hit_id in hit_ids
            if hit_id not in listed
        }
        return {**listed, **unknown}

    def hits_reviewable(self) -> list[RemoteHIT]:
        """None: every answer reaches us through its session first."""
        return []

    def assignment_get(self, assignment_id: str) -> RemoteAssignment:
        hold = (
            TaskHold.objects.select_related("session__worker", "task__hit").filter(assignment_id=assignment_id).first()
        )
        answer = (
            None
            if hold is None
            else Assignment.objects.filter(assignment_id=assignment_id, worker_id=hold.session.worker_id).first()
        )
        if hold is None or answer is None:
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

    def assignments_approve_all(self, assignment_ids: Sequence[str]) -> dict[str, str]:
        """`assignment_approve` of them all in one read (a sync approves a chunk's answers)."""
        statuses = Assignment.objects.filter(assignment_id__in=list(assignment_ids)).values_list(
            "assignment_id", "status"
        )
        return {
            assignment_id: Assignment.Status.APPROVED if status == Assignment.Status.SUBMITTED else status
            for assignment_id, status in statuses
        }

    def assignment_reject(self, assignment_id: str, *, feedback: str) -> None:
        self._reviewable(assignment_id)

    def _reviewable(self, assignment_id: str) -> None:
        # the status alone, not the answer
        status = Assignment.objects.filter(assignment_id=assignment_id).values_list("status", flat=True).first()
        if status is None:
            raise NotFoundAtMarketplace(f"There is no submitted assignment {assignment_id}.")
        if status != Assignment.Status.SUBMITTED:
            raise InvalidState(f"Assignment {assignment_id} is {status} already.")

    def worker_block(self, worker_id: str, *, reason: str) -> None:
        """Nothing remote: the session pages turn blocked workers away (Worker.blocked)."""

    def worker_unblock(self, worker_id: str, *, reason: str) -> None:
        """Nothing remote, as for a block."""

    def bonus_send(self, *, worker_id: str, assignment_id: str, amount: Decimal, reason: str, token: str) -> None:
        raise MarketplaceError(
            f"{self.label} pay nobody: there is no marketplace to send a bonus through.", code="no_payments"
        )

    def hit_expire(self, hit_id: str) -> None:
        """Nothing remote: sessions stop getting tasks of an expired HIT (crowd.work.expiry sets
        its expiration); a Prolific study is stopped by crowd.channels.prolific.study_sync once its batch ends."""

    def hit_delete(self, hit_id: str) -> None:
        """Nothing remote: the HIT row stays as the record of what was offered."""

    def balance(self) -> Decimal:
        raise MarketplaceError(f"{self.label} shows no account balance here.", code="balance_unavailable")
