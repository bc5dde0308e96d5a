"""Workers, HITs, assignments, the labels they produce, and the money they cost."""

from datetime import datetime

from django.conf import settings
from django.db import models

from annotation.models import Batch, Campaign, Proposition, Task, Topic


class Worker(models.Model):
    """A crowdworker on one channel (an MTurk WorkerId, a Prolific participant, a link)."""

    channel = models.CharField(max_length=16, choices=Campaign.Channel.choices, default=Campaign.Channel.MTURK)
    external_id = models.CharField(max_length=64)
    blocked = models.BooleanField(
        default=False,
        help_text="Turned away from every campaign of this site: a superuser's ban. A researcher's block is a "
        "WorkerBlock, which reaches only the campaigns of the blocking campaign's owner.",
    )
    block_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["external_id"]
        constraints = [models.UniqueConstraint(fields=["channel", "external_id"], name="worker_unique_external_id")]

    def __str__(self):
        return self.external_id


class WorkerQualityQuerySet(models.QuerySet):
    def excluded(self) -> "WorkerQualityQuerySet":
        """The one rule of who is excluded: an admin's override decides; without one, quality
        control's computed status. `WorkerQuality.excluded` is the same rule on one row."""
        return self.filter(self._excluded())

    def included(self) -> "WorkerQualityQuerySet":
        """Everyone `excluded` leaves out."""
        return self.exclude(self._excluded())

    @staticmethod
    def _excluded() -> models.Q:
        return models.Q(override_status="excluded") | models.Q(override_status="", computed_status="excluded")


class WorkerQuality(models.Model):
    """Quality-control figures and the exclusion decision for one worker in one campaign."""

    class Status(models.TextChoices):
        OK = "ok", "Included"
        EXCLUDED = "excluded", "Excluded"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="worker_qualities")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="qualities")
    labels = models.PositiveIntegerField(default=0)
    items = models.PositiveIntegerField(default=0)
    loo_r = models.FloatField(null=True, blank=True)
    traps_seen = models.PositiveIntegerField(default=0)
    traps_failed = models.PositiveIntegerField(default=0)
    obvious_traps_seen = models.PositiveIntegerField(default=0)
    obvious_traps_failed = models.PositiveIntegerField(default=0)
    subtle_traps_seen = models.PositiveIntegerField(default=0)
    subtle_traps_failed = models.PositiveIntegerField(default=0)
    votes = models.PositiveIntegerField(default=0)
    comparison_agreement = models.FloatField(null=True, blank=True)
    orderings = models.PositiveIntegerField(default=0, help_text="Comparison HITs submitted, untouched ones included.")
    untouched_orderings = models.PositiveIntegerField(default=0)
    likert_seconds = models.FloatField(null=True, blank=True, help_text="Median seconds per Likert HIT.")
    comparison_seconds = models.FloatField(null=True, blank=True, help_text="Median seconds per comparison HIT.")
    speeder = models.BooleanField(default=False, help_text="Much faster than the campaign's median: a flag to review.")
    computed_status = models.CharField(max_length=16, choices=Status.choices, default=Status.OK)
    computed_reason = models.TextField(blank=True, help_text="Why quality control excluded the worker.")
    override_status = models.CharField(max_length=16, choices=Status.choices, blank=True)
    override_reason = models.TextField(blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)

    objects = WorkerQualityQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "worker qualities"
        constraints = [models.UniqueConstraint(fields=["campaign", "worker"], name="workerquality_unique")]

    @property
    def status(self) -> str:
        return self.override_status or self.computed_status

    @property
    def excluded(self) -> bool:
        return self.status == self.Status.EXCLUDED


class QualityStatistics(models.Model):
    """The crowd-level quality figures of a campaign (no topic) or of one of its topics as the
    QC job last computed them (crowd.qc.statistics): agreement, α, the stability curve, trap
    means, the leave-one-out histogram. The report pages read them and compute nothing."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="quality_statistics")
    topic = models.ForeignKey(Topic, null=True, blank=True, on_delete=models.CASCADE, related_name="quality_statistics")
    figures = models.JSONField(default=dict)
    workers = models.JSONField(default=list, help_text="A topic's workers: ids of those with labels or votes in it.")
    inputs_digest = models.CharField(
        max_length=64, blank=True, help_text="Of the labels the costly figures rest on: unchanged, they are kept."
    )
    likert_part = models.JSONField(
        default=dict,
        blank=True,
        help_text="The campaign's row: what quality control computed from the Likert labels, with a watermark of "
        "them; kept while they do not change (crowd.qc.likert_part).",
    )
    computed_at = models.DateTimeField()

    class Meta:
        verbose_name_plural = "quality statistics"
        constraints = [
            models.UniqueConstraint(fields=["campaign", "topic"], name="qualitystatistics_unique_topic"),
            models.UniqueConstraint(
                fields=["campaign"], condition=models.Q(topic__isnull=True), name="qualitystatistics_unique_campaign"
            ),
        ]


class TopicVotes(models.Model):
    """One topic's counted comparison votes summed per worker, as quality control last read
    them (crowd.qc.vote_part), with a watermark of those votes: while it holds, the next run
    reads none of them. A campaign's rules 3 and 4 add these sums up over its topics."""

    topic = models.OneToOneField(Topic, on_delete=models.CASCADE, primary_key=True, related_name="quality_votes")
    watermark = models.CharField(max_length=64, help_text="Of the topic's counted votes when they were summed.")
    excluded = models.CharField(
        max_length=64, help_text="Of the workers out before rule 4 whom the kept sums leave out."
    )
    workers = models.JSONField(
        default=list,
        help_text="Per worker: [id, votes, ballots, orderings, untouched, agree, countable, "
        "agree kept, countable kept].",
    )
    computed_at = models.DateTimeField()


class WorkerDecision(models.Model):
    """An audit trail: every change of a worker's status, automatic or by an admin."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="worker_decisions")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="decisions")
    action = models.CharField(max_length=32)
    reason = models.TextField(blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]


class WorkerBlockQuerySet(models.QuerySet):
    def reaching(self, campaign: Campaign) -> "WorkerBlockQuerySet":
        """The one rule of a block's reach: a block set in a campaign turns the worker away
        from every campaign of the same owner (only from that campaign when it has no owner),
        never from another owner's. `crowd.hit_page.access` writes the same rule in SQL."""
        if campaign.owner_id is None:
            return self.filter(campaign=campaign)
        return self.filter(models.Q(campaign=campaign) | models.Q(campaign__owner_id=campaign.owner_id))


class WorkerBlock(models.Model):
    """A researcher's block of a worker, set in one of her campaigns (see `reaching`)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="worker_blocks")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="blocks")
    reason = models.TextField()
    at_marketplace = models.BooleanField(
        default=False, help_text="Also blocked at the marketplace's account (crowd.work.review.worker_block)."
    )
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = WorkerBlockQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "worker"], name="workerblock_unique")]

    def __str__(self):
        return f"{self.worker} blocked in {self.campaign}"


class HITType(models.Model):
    """A HIT type created at the marketplace, reused for every HIT with the same settings."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="hit_types")
    kind = models.CharField(max_length=16, choices=Batch.Kind.choices)
    environment = models.CharField(max_length=16, choices=Campaign.Environment.choices)
    fingerprint = models.CharField(max_length=64, help_text="Hash of the parameters the type was created with.")
    hit_type_id = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "HIT type"
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "environment", "fingerprint"], name="hittype_unique_fingerprint"
            )
        ]


class HITQuerySet(models.QuerySet):
    def on_offer(self, now: datetime) -> "HITQuerySet":
        """HITs workers can still take: not complete, not deleted, not expired. What expiring
        a batch stops, and what the dashboard counts as open."""
        return self.filter(deleted=False, complete=False).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now)
        )


class HIT(models.Model):
    """A task published at a marketplace (one per task). On a session channel (Prolific,
    participant links) it is our own record of the task being offered; `hit_id` is local."""

    class Status(models.TextChoices):
        ASSIGNABLE = "Assignable", "Assignable"
        UNASSIGNABLE = "Unassignable", "Unassignable"
        REVIEWABLE = "Reviewable", "Reviewable"
        REVIEWING = "Reviewing", "Reviewing"
        DISPOSED = "Disposed", "Disposed"

    task = models.OneToOneField(Task, on_delete=models.CASCADE, related_name="hit")
    channel = models.CharField(max_length=16, choices=Campaign.Channel.choices, default=Campaign.Channel.MTURK)
    environment = models.CharField(max_length=16, choices=Campaign.Environment.choices)
    hit_id = models.CharField(max_length=64)
    hit_type_id = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ASSIGNABLE)
    max_assignments = models.PositiveSmallIntegerField()
    reward = models.DecimalField(max_digits=6, decimal_places=2)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    complete = models.BooleanField(default=False, help_text="Every assignment collected and reviewed.")
    deleted = models.BooleanField(default=False)
    last_synced_at = models.DateTimeField(null=True, blank=True)

    objects = HITQuerySet.as_manager()

    class Meta:
        verbose_name = "HIT"
        verbose_name_plural = "HITs"
        constraints = [models.UniqueConstraint(fields=["environment", "hit_id"], name="hit_unique_id")]
        indexes = [models.Index(fields=["complete"])]

    def __str__(self):
        return self.hit_id


CONFIRMED = ("verified", "recovered")


def confirmed(prefix: str = "") -> models.Q:
    """Answers their channel confirmed: MTurk listed the assignment for that HIT and worker,
    Prolific listed the participant's submission in that study, or a link participant
    submitted on their own hold (`verified`), or we stored the channel's copy
    (`recovered`). `prefix` reaches an Assignment through a relation ("assignment__")."""
    return models.Q(**{f"{prefix}verification__in": CONFIRMED})


def counted(prefix: str = "") -> models.Q:
    """The one rule of what counts, for quality control, aggregation, export and progress
    alike: a confirmed answer that was not rejected. A `pending` answer (stored by our page,
    not yet confirmed by its channel) is shown as pending and counts nowhere; an
    `unverified` one (its channel never confirmed it) never counts."""
    return confirmed(prefix) & ~models.Q(**{f"{prefix}status": "Rejected"})


def session_confirmed(prefix: str = "") -> models.Q:
    """Sessions whose channel confirmed the participant: a Prolific session once Prolific
    listed its submission (`submission_id`, set on arrival or by sync), a participant-link
    session always (the link and its hold are the proof). Only these hand out tasks, count
    answers or reach the completion step. `prefix` reaches a WorkSession ("session__")."""
    return models.Q(**{f"{prefix}study__isnull": True}) | ~models.Q(**{f"{prefix}submission_id": ""})


class AssignmentQuerySet(models.QuerySet):
    def confirmed(self) -> "AssignmentQuerySet":
        return self.filter(confirmed())

    def counted(self) -> "AssignmentQuerySet":
        return self.filter(counted())

    def pending(self) -> "AssignmentQuerySet":
        return self.filter(verification=Assignment.Verification.PENDING)


class Assignment(models.Model):
    """One worker's answer to one task: stored by our page first, then reconciled with its
    channel. Only `counted` answers count (see `counted`)."""

    class Status(models.TextChoices):
        SUBMITTED = "Submitted", "Submitted"
        APPROVED = "Approved", "Approved"
        REJECTED = "Rejected", "Rejected"

    class Verification(models.TextChoices):
        PENDING = "pending", "Awaiting the marketplace"
        VERIFIED = "verified", "Confirmed by the marketplace"
        RECOVERED = "recovered", "Recovered from the marketplace's copy"
        UNVERIFIED = "unverified", "Not known to the marketplace: never counted"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="assignments")
    hit = models.ForeignKey(HIT, null=True, blank=True, on_delete=models.SET_NULL, related_name="assignments")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="assignments")
    assignment_id = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.SUBMITTED)
    verification = models.CharField(max_length=16, choices=Verification.choices, default=Verification.PENDING)
    answer = models.JSONField(default=dict)
    untouched = models.BooleanField(default=False, help_text="A comparison submitted in the order it was shown.")
    shown_order = models.JSONField(
        default=list,
        db_default=models.Value([], output_field=models.JSONField()),
        blank=True,
        help_text="Proposition ids in the order this worker was shown them, top first: an ordering HIT's own "
        "shuffled starting order (crowd.hit_page.content.start_order).",
    )
    accepted_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField()
    time_on_task_ms = models.PositiveIntegerField(null=True, blank=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    reject_reason = models.TextField(blank=True)

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["submitted_at", "id"]
        constraints = [models.UniqueConstraint(fields=["assignment_id", "worker"], name="assignment_unique_worker")]
        indexes = [
            models.Index(fields=["task", "verification"]),
            # What a sync pass looks for (crowd.work.sync.news.hits_with_news): answers not yet
            # confirmed, and work not yet reviewed — few rows of many.
            models.Index(fields=["task"], condition=models.Q(verification="pending"), name="assignment_pending_task"),
            models.Index(fields=["task"], condition=models.Q(status="Submitted"), name="assignment_submitted_task"),
        ]

    def __str__(self):
        return f"{self.assignment_id} by {self.worker}"


class LikertLabel(models.Model):
    """One 1..5 rating of one proposition (5 = extremely important)."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="likert_labels")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="likert_labels")
    proposition = models.ForeignKey(Proposition, on_delete=models.CASCADE, related_name="likert_labels")
    score = models.PositiveSmallIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["assignment", "proposition"], name="likert_unique_item"),
            models.CheckConstraint(condition=models.Q(score__gte=1, score__lte=5), name="likert_score_range"),
        ]


class Comparison(models.Model):
    """One pairwise vote derived from an ordering: `winner` was placed above `loser`."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="comparisons")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="comparisons")
    winner = models.ForeignKey(Proposition, on_delete=models.CASCADE, related_name="wins")
    loser = models.ForeignKey(Proposition, on_delete=models.CASCADE, related_name="losses")

    class Meta:
        ordering = ["assignment_id", "id"]
        constraints = [models.UniqueConstraint(fields=["assignment", "winner", "loser"], name="comparison_unique_pair")]


class LedgerEntry(models.Model):
    """Money: committed when a HIT is published, spent when an assignment or bonus is paid."""

    class Kind(models.TextChoices):
        COMMITTED = "committed", "Committed"
        RELEASED = "released", "Released (expired, unspent)"
        SPENT = "spent", "Spent"
        BONUS = "bonus", "Bonus"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="ledger")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    amount = models.DecimalField(max_digits=10, decimal_places=2)
    reference = models.CharField(max_length=128, blank=True)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "ledger entries"
        ordering = ["-created_at"]
        constraints = [
            # Each event is money once (crowd/work/ledger.py): the database refuses a second entry.
            models.UniqueConstraint(fields=["campaign", "kind", "reference"], name="ledger_unique_reference")
        ]


class Bonus(models.Model):
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="bonuses")
    amount = models.DecimalField(max_digits=6, decimal_places=2)
    reason = models.TextField()
    token = models.CharField(max_length=64, unique=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    refused_at = models.DateTimeField(null=True, blank=True, help_text="The marketplace refused to pay it.")
    refused_reason = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        verbose_name_plural = "bonuses"


# ---- Sessions: Prolific studies and participant links (crowd/sessions/holds.py) ------------------


class StudyQuerySet(models.QuerySet):
    def of_batch(self, batch: Batch) -> "StudyQuerySet":
        """The study whose places the batch added to (at most one)."""
        return self.filter(batch_links__batch=batch)

    def of_campaign(self, campaign: Campaign) -> "StudyQuerySet":
        return self.filter(topic__campaign=campaign)

    def open_for(self, *, topic: Topic, kind: str) -> "StudyQuerySet":
        """The round's study a new batch joins: not ended, the newest first."""
        return self.filter(topic=topic, kind=kind, ended_at__isnull=True).order_by("-pk")


class Study(models.Model):
    """A Prolific study: one per round of a topic (its Likert round; its comparison stage, every
    comparison batch of it), whose places grow with each batch the round publishes (StudyBatch).
    Its places are sessions of N tasks, handed out from any of its open batches
    (crowd/marketplaces/prolific/study_opening.py)."""

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="studies")
    kind = models.CharField(max_length=16, choices=Batch.Kind.choices)
    environment = models.CharField(max_length=16, choices=Campaign.Environment.choices)
    internal_name = models.CharField(max_length=128, unique=True, help_text="Our idempotency key at Prolific.")
    study_id = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=32, blank=True)
    places = models.PositiveIntegerField(help_text="Places on offer at Prolific: every batch's, and raises.")
    reward_cents = models.PositiveIntegerField()
    completion_code = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(
        null=True, blank=True, help_text="When its round ended and it was stopped: no batch joins it after."
    )

    objects = StudyQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "studies"

    def __str__(self):
        return self.study_id or self.internal_name


class StudyBatch(models.Model):
    """A batch of a study's round: the places it adds to the study (what its publish quoted and
    committed) and when Prolific had them on offer. The link lives here, on the crowd side:
    annotation's Batch knows nothing of studies."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="batch_links")
    batch = models.OneToOneField(Batch, on_delete=models.CASCADE, related_name="study_link")
    places = models.PositiveIntegerField(help_text="Places this batch adds to the study: its quote.")
    places_to = models.PositiveIntegerField(help_text="The study's places once this batch's are added.")
    opened_at = models.DateTimeField(
        null=True, blank=True, help_text="When Prolific had its places on offer (the study published, or raised)."
    )

    class Meta:
        ordering = ["study_id", "places_to", "pk"]

    def __str__(self):
        return f"{self.batch} in study {self.study}"


class PlacesRaise(models.Model):
    """More places for a study than its publish quotes: asked for by sync when answers are still
    missing after every place was used, done only once the researcher said yes
    (crowd/channels/prolific/raises.py). The reason and the figures are what the campaign page shows."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="raises")
    places_from = models.PositiveIntegerField()
    places_to = models.PositiveIntegerField()
    missing = models.PositiveIntegerField(help_text="Answers still missing when it was asked for.")
    cost = models.DecimalField(max_digits=10, decimal_places=2, help_text="Added commitment, fees included.")
    reason = models.TextField()
    requested_at = models.DateTimeField()
    approved_at = models.DateTimeField(null=True, blank=True)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    done_at = models.DateTimeField(null=True, blank=True, help_text="When Prolific raised the places.")
    dropped_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When it was no longer needed: the study's open batches ended before the places were raised.",
    )

    class Meta:
        ordering = ["requested_at", "id"]

    def __str__(self):
        return f"{self.study}: {self.places_from} → {self.places_to} places"


class ParticipantLink(models.Model):
    """A self-managed link: personal (one invited person) or open (asks for a participant code)."""

    class Kind(models.TextChoices):
        PERSONAL = "personal", "Personal (one person)"
        OPEN = "open", "Open (asks for a participant code)"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="participant_links")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.PERSONAL)
    token = models.CharField(max_length=64, unique=True)
    label = models.CharField(max_length=200, blank=True, help_text="Who it is for; only researchers see it.")
    worker = models.OneToOneField(Worker, null=True, blank=True, on_delete=models.PROTECT, related_name="personal_link")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # An open link's participant codes, if the researcher restricts them
    # (crowd.channels.links.codes): a code on the list or matching the pattern is let in.
    codes_allowed = models.TextField(blank=True, help_text="Normalised codes, one per line; empty: no list.")
    code_pattern = models.CharField(max_length=200, blank=True, help_text="A regular expression; empty: none.")

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self):
        return self.label or f"{self.get_kind_display()} link {self.pk}"

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


class WorkSession(models.Model):
    """One participant's visit: a sequence of up to `tasks_target` tasks, then completion."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Working"
        FINISHED = "finished", "Finished"
        ABANDONED = "abandoned", "Returned or timed out"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="work_sessions")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="work_sessions")
    key = models.UUIDField(unique=True, help_text="The secret in the session's address.")
    study = models.ForeignKey(Study, null=True, blank=True, on_delete=models.CASCADE, related_name="sessions")
    link = models.ForeignKey(ParticipantLink, null=True, blank=True, on_delete=models.CASCADE, related_name="sessions")
    external_session_id = models.CharField(max_length=64, blank=True, help_text="Prolific's SESSION_ID.")
    opened_from = models.GenericIPAddressField(
        null=True, blank=True, help_text="The client address that opened it (config.client_address), for the caps."
    )
    tasks_target = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    consented_at = models.DateTimeField(
        null=True, blank=True, help_text="When the participant agreed to the campaign's consent text."
    )
    consent_digest = models.CharField(
        max_length=64,
        blank=True,
        help_text="SHA-256 of the consent text the participant agreed to (crowd.sessions.holds); "
        "a changed text is asked again.",
    )
    # Prolific's side of the session: its submission, and our decision on it.
    submission_id = models.CharField(max_length=64, blank=True)
    submission_status = models.CharField(max_length=32, blank=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["started_at", "id"]
        constraints = [
            # Prolific gives a participant one submission per study.
            models.UniqueConstraint(
                fields=["study", "worker"], condition=models.Q(study__isnull=False), name="worksession_unique_study"
            ),
        ]

    def __str__(self):
        return f"session {self.pk} of {self.worker}"


class TaskHold(models.Model):
    """A task handed to a session. Active until submitted, released, or `expires_at`."""

    session = models.ForeignKey(WorkSession, on_delete=models.CASCADE, related_name="holds")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="holds")
    assignment_id = models.CharField(max_length=64, unique=True, help_text="The assignmentId the HIT page gets.")
    position = models.PositiveSmallIntegerField(help_text="1 for the session's first task.")
    held_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)
    released_by = models.CharField(
        max_length=150, blank=True, help_text="The researcher who released the place (the Channel page), if one did."
    )

    class Meta:
        ordering = ["session_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["session", "position"], name="taskhold_unique_position"),
        ]
        indexes = [models.Index(fields=["task", "submitted_at", "released_at"])]
