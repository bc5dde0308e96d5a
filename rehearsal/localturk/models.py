"""Tables of the local MTurk-compatible endpoint (its own, separate from the app's).

One requester per access key; HIT types, HITs, assignments, blocks, bonuses, messages
and idempotency tokens belong to a requester. Workers are simulated: a `WorkerProfile`
only exists for a worker configured to differ from the defaults (see qualifications.py).
`Fault` rows are the switches for injected failures (faults.py).

An `Assignment` row is one accept by one worker. Returned and abandoned rows stay, hidden
from the API; their `assignment_id` can be handed to the next worker who accepts the HIT,
as MTurk does, so the id is unique only among live rows.
"""

import secrets
import string
from decimal import Decimal

from django.db import models
from django.db.models import Q

_ID_ALPHABET = string.ascii_uppercase + string.digits


def new_entity_id() -> str:
    """A 30-character [A-Z0-9] id, the shape of MTurk's HIT, HIT type and assignment ids."""
    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(30))


def new_worker_id() -> str:
    """'A' + 13 characters, the shape of MTurk's WorkerIds."""
    return "A" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(13))


class Requester(models.Model):
    """The account behind an access key ("anonymous" for unsigned calls)."""

    access_key = models.CharField(max_length=128, unique=True)
    balance = models.DecimalField(max_digits=14, decimal_places=2, default=Decimal("10000.00"))
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return self.access_key


class HITType(models.Model):
    """Reward, timing and requirements shared by HITs; one row per distinct property set."""

    type_id = models.CharField(max_length=30, unique=True, default=new_entity_id)
    group_id = models.CharField(max_length=30, unique=True, default=new_entity_id)
    requester = models.ForeignKey(Requester, on_delete=models.CASCADE, related_name="hit_types")
    fingerprint = models.CharField(max_length=64)
    title = models.CharField(max_length=128)
    description = models.TextField()
    keywords = models.TextField(blank=True)
    reward = models.DecimalField(max_digits=10, decimal_places=2)
    assignment_duration = models.PositiveIntegerField(help_text="Seconds.")
    auto_approval_delay = models.PositiveIntegerField(help_text="Seconds.")
    qualification_requirements = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "HIT type"
        constraints = [
            models.UniqueConstraint(fields=["requester", "fingerprint"], name="localturk_hittype_unique_properties")
        ]

    def __str__(self):
        return self.type_id


class HIT(models.Model):
    """A HIT. Status and counters are derived by state.hit_refresh, stored for listing."""

    class Status(models.TextChoices):
        ASSIGNABLE = "Assignable"
        UNASSIGNABLE = "Unassignable"
        REVIEWABLE = "Reviewable"
        REVIEWING = "Reviewing"
        DISPOSED = "Disposed"

    hit_id = models.CharField(max_length=30, unique=True, default=new_entity_id)
    requester = models.ForeignKey(Requester, on_delete=models.CASCADE, related_name="hits")
    hit_type = models.ForeignKey(HITType, on_delete=models.PROTECT, related_name="hits")
    question = models.TextField()
    external_url = models.TextField()
    frame_height = models.PositiveIntegerField(default=0)
    requester_annotation = models.CharField(max_length=255, blank=True)
    max_assignments = models.PositiveIntegerField()
    created_at = models.DateTimeField()
    expiration = models.DateTimeField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ASSIGNABLE)
    pending = models.PositiveIntegerField(default=0)
    available = models.PositiveIntegerField(default=0)
    completed = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = "HIT"
        verbose_name_plural = "HITs"
        indexes = [models.Index(fields=["status", "expiration"], name="localturk_hit_status_exp")]

    def __str__(self):
        return self.hit_id


class AssignmentStatus(models.TextChoices):
    ACCEPTED = "Accepted"
    SUBMITTED = "Submitted"
    APPROVED = "Approved"
    REJECTED = "Rejected"
    RETURNED = "Returned"
    ABANDONED = "Abandoned"


# Rows that hold a slot of their HIT; the others are history.
_LIVE = (AssignmentStatus.ACCEPTED, AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)


class Assignment(models.Model):
    """One accept of a HIT by a worker, through submission and review."""

    Status = AssignmentStatus
    LIVE = _LIVE
    # Rows the requester API can see.
    VISIBLE = (Status.SUBMITTED, Status.APPROVED, Status.REJECTED)

    assignment_id = models.CharField(max_length=30, db_index=True)
    hit = models.ForeignKey(HIT, on_delete=models.CASCADE, related_name="assignments")
    worker_id = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACCEPTED)
    accept_time = models.DateTimeField()
    deadline = models.DateTimeField()
    submit_time = models.DateTimeField(null=True, blank=True)
    auto_approval_time = models.DateTimeField(null=True, blank=True)
    approval_time = models.DateTimeField(null=True, blank=True)
    rejection_time = models.DateTimeField(null=True, blank=True)
    answer = models.TextField(blank=True)
    requester_feedback = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["assignment_id"], condition=Q(status__in=_LIVE), name="localturk_assignment_live_id"
            ),
            models.UniqueConstraint(
                fields=["hit", "worker_id"], condition=Q(status__in=_LIVE), name="localturk_assignment_one_per_worker"
            ),
        ]
        indexes = [
            models.Index(fields=["status", "deadline"], name="localturk_asg_status_deadline"),
            models.Index(fields=["status", "auto_approval_time"], name="localturk_asg_status_autoappr"),
        ]

    def __str__(self):
        return f"{self.assignment_id} ({self.worker_id})"


class WorkerBlock(models.Model):
    requester = models.ForeignKey(Requester, on_delete=models.CASCADE, related_name="worker_blocks")
    worker_id = models.CharField(max_length=64)
    reason = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["requester", "worker_id"], name="localturk_block_unique")]


class Bonus(models.Model):
    requester = models.ForeignKey(Requester, on_delete=models.CASCADE, related_name="bonuses")
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="bonuses")
    worker_id = models.CharField(max_length=64)
    amount = models.DecimalField(max_digits=10, decimal_places=2)
    reason = models.TextField()
    granted_at = models.DateTimeField()

    class Meta:
        verbose_name_plural = "bonuses"


class RequestToken(models.Model):
    """A UniqueRequestToken seen for an operation; it counts for 24 hours (idempotency.py)."""

    requester = models.ForeignKey(Requester, on_delete=models.CASCADE, related_name="request_tokens")
    operation = models.CharField(max_length=64)
    token = models.CharField(max_length=64)
    hit = models.ForeignKey(HIT, null=True, blank=True, on_delete=models.CASCADE)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["requester", "operation", "token"], name="localturk_token_unique")
        ]


class Message(models.Model):
    """A NotifyWorkers e-mail, shown on the worker's HIT list."""

    requester = models.ForeignKey(Requester, on_delete=models.CASCADE, related_name="messages")
    worker_id = models.CharField(max_length=64, db_index=True)
    subject = models.CharField(max_length=200)
    text = models.TextField()
    sent_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-sent_at"]


class WorkerProfile(models.Model):
    """Qualification values of a simulated worker that differ from the defaults."""

    worker_id = models.CharField(max_length=64, unique=True)
    qualifications = models.JSONField(default=dict, blank=True)

    def __str__(self):
        return self.worker_id


class Fault(models.Model):
    """An injected failure: the next `remaining` matching calls fail or wait (None = until cleared)."""

    class Kind(models.TextChoices):
        THROTTLE = "throttle"
        SERVICE_FAULT = "service_fault"
        LATENCY = "latency"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    remaining = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    operations = models.JSONField(default=list, blank=True, help_text="Operation names; empty = all.")
    created_at = models.DateTimeField(auto_now_add=True)
