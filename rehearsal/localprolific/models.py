"""Tables of the local Prolific-compatible endpoint (its own, separate from the app's).

One researcher workspace per API token; studies, submissions and bulk bonuses belong to it.
Participants are simulated: a participant is just the id on their submissions. `Fault`
rows are the switches for injected failures (faults.py). Ids have the shape of Prolific's
(24 lower-case hex digits, a MongoDB ObjectId); a submission's id is also the participant's
SESSION_ID, as at Prolific.
"""

import secrets

from django.db import models


def new_object_id() -> str:
    return secrets.token_hex(12)


class Researcher(models.Model):
    """The workspace behind an API token (stored as its SHA-256, never in clear)."""

    token_digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"researcher {self.pk}"


class StudyStatus(models.TextChoices):
    UNPUBLISHED = "UNPUBLISHED"
    PUBLISHING = "PUBLISHING"
    SCHEDULED = "SCHEDULED"
    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    AWAITING_REVIEW = "AWAITING REVIEW"
    COMPLETED = "COMPLETED"


class Study(models.Model):
    Status = StudyStatus

    study_id = models.CharField(max_length=24, unique=True, default=new_object_id)
    researcher = models.ForeignKey(Researcher, on_delete=models.CASCADE, related_name="studies")
    name = models.CharField(max_length=255)
    internal_name = models.CharField(max_length=255, blank=True)
    description = models.TextField()
    external_study_url = models.TextField()
    prolific_id_option = models.CharField(max_length=32)
    completion_codes = models.JSONField(default=list)
    total_available_places = models.PositiveIntegerField()
    estimated_completion_time = models.PositiveIntegerField(help_text="Minutes.")
    maximum_allowed_time = models.PositiveIntegerField(null=True, blank=True, help_text="Minutes.")
    reward = models.PositiveIntegerField(help_text="Cents of the workspace currency.")
    device_compatibility = models.JSONField(default=list)
    peripheral_requirements = models.JSONField(default=list, blank=True)
    filters = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.UNPUBLISHED)
    stopped = models.BooleanField(default=False, help_text="Stopped by the researcher: final.")
    date_created = models.DateTimeField()
    published_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "studies"
        indexes = [models.Index(fields=["researcher", "internal_name"], name="localprolific_study_name")]

    def __str__(self):
        return self.study_id


class SubmissionStatus(models.TextChoices):
    RESERVED = "RESERVED"
    ACTIVE = "ACTIVE"
    TIMED_OUT = "TIMED-OUT"
    AWAITING_REVIEW = "AWAITING REVIEW"
    APPROVED = "APPROVED"
    # A share of the reward paid, through a completion code set up for it (transition-submission).
    PARTIALLY_APPROVED = "PARTIALLY APPROVED"
    RETURNED = "RETURNED"
    REJECTED = "REJECTED"


# Submissions that hold a place of their study; returned, timed-out and rejected ones free it.
_HOLDING = (
    SubmissionStatus.RESERVED,
    SubmissionStatus.ACTIVE,
    SubmissionStatus.AWAITING_REVIEW,
    SubmissionStatus.APPROVED,
    SubmissionStatus.PARTIALLY_APPROVED,
)
# Submissions paid from the study's reserve (in full here: see charges.py).
_PAID = (SubmissionStatus.APPROVED, SubmissionStatus.PARTIALLY_APPROVED)


class Submission(models.Model):
    Status = SubmissionStatus
    HOLDING = _HOLDING
    PAID = _PAID

    submission_id = models.CharField(max_length=24, unique=True, default=new_object_id)
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="submissions")
    participant_id = models.CharField(max_length=64, db_index=True, help_text="Prolific's are 24 hex digits.")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ACTIVE)
    started_at = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)
    study_code = models.CharField(max_length=64, blank=True)
    rejection_message = models.TextField(blank=True)
    rejection_category = models.CharField(max_length=32, blank=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["study", "participant_id"], name="localprolific_one_submission_each"),
        ]
        indexes = [models.Index(fields=["study", "status"], name="localprolific_sub_status")]

    def __str__(self):
        return self.submission_id


class BulkBonus(models.Model):
    """A bulk bonus set up with POST submissions/bonus-payments/; paid by each pay call."""

    bonus_id = models.CharField(max_length=24, unique=True, default=new_object_id)
    researcher = models.ForeignKey(Researcher, on_delete=models.CASCADE, related_name="bulk_bonuses")
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="bulk_bonuses")
    entries = models.JSONField(help_text='[{"participant_id", "submission_id", "amount": cents}]')
    amount = models.PositiveIntegerField(help_text="Cents.")
    fees = models.PositiveIntegerField(help_text="Cents.")
    created_at = models.DateTimeField()
    pay_requests = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name_plural = "bulk bonuses"


class BonusPayment(models.Model):
    """One participant paid by one pay call: a repeated pay call pays again, as at Prolific."""

    bulk = models.ForeignKey(BulkBonus, on_delete=models.CASCADE, related_name="payments")
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="bonus_payments")
    amount = models.PositiveIntegerField(help_text="Cents.")
    paid_at = models.DateTimeField()


class Fault(models.Model):
    """An injected failure: the next `remaining` matching calls fail or wait (None = until cleared)."""

    class Kind(models.TextChoices):
        THROTTLE = "throttle"  # 429 before anything happens
        SERVICE_FAULT = "service_fault"  # 503 before anything happens
        LOST_RESPONSE = "lost_response"  # the call takes effect, then 504
        LATENCY = "latency"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    remaining = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    retry_after = models.PositiveIntegerField(null=True, blank=True, help_text="Seconds, sent with a 429.")
    operations = models.JSONField(default=list, blank=True, help_text="Operation names; empty = all.")
    created_at = models.DateTimeField(auto_now_add=True)
