"""Campaigns, topics, propositions and the content of HITs (batches of tasks)."""

import uuid
from decimal import Decimal

from django.conf import settings
from django.db import models

from annotation.text import proposition_text
from annotation.url_keys import url_key_is_safe, url_key_validator

DEFAULT_QUESTION = (
    "Imagine you want to learn something about {topic}. How useful would the following statements be for you?"
)
DEFAULT_OBVIOUS_TRAPS = [
    "This sentence is not important",
    "Please rate this statement as not important at all",
]


def default_obvious_traps():
    return list(DEFAULT_OBVIOUS_TRAPS)


class Campaign(models.Model):
    """One annotation campaign: its topics share rewards, policies and a budget cap."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        ACTIVE = "active", "Active"
        PAUSED = "paused", "Paused"
        FINISHED = "finished", "Finished"

    class Environment(models.TextChoices):
        """Every channel's environments; which ones a channel has, and what it calls them, is
        its policy's (crowd.marketplaces: Prolific has no sandbox, participant links only
        this server)."""

        LOCAL = "local", "Local endpoint"
        SANDBOX = "sandbox", "Sandbox"
        PRODUCTION = "production", "Production"

    class Channel(models.TextChoices):
        MTURK = "mturk", "Amazon Mechanical Turk"
        PROLIFIC = "prolific", "Prolific"
        LINKS = "links", "Participant links"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="campaigns"
    )
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=80, unique=True)
    description = models.TextField(blank=True)
    question_template = models.TextField(
        default=DEFAULT_QUESTION, help_text="{topic} is replaced by the topic description."
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    created_at = models.DateTimeField(auto_now_add=True)

    # HIT shape and rewards (the paper's defaults).
    likert_group_size = models.PositiveSmallIntegerField(default=5)
    comparison_group_size = models.PositiveSmallIntegerField(default=5)
    assignments_per_hit = models.PositiveSmallIntegerField(default=5)
    likert_reward = models.DecimalField(max_digits=6, decimal_places=2, default=Decimal("0.06"))
    comparison_reward = models.DecimalField(max_digits=6, decimal_places=2, default=Decimal("0.05"))

    # Ranking loop.
    top_k = models.PositiveIntegerField(default=100)
    pair_budget_fraction = models.FloatField(default=0.10, help_text="Share of all pairs among the top-k to compare.")
    batch_pairs = models.PositiveIntegerField(default=100, help_text="Pairs per comparison batch.")
    stop_spearman = models.FloatField(
        default=0.99, help_text="Stop when Spearman with the previous refit stays above this."
    )
    stop_stable_refits = models.PositiveSmallIntegerField(default=2)

    # Traps and quality control.
    trap_rate = models.FloatField(
        default=0.05,
        help_text="The least share of Likert tasks carrying one trap; 0: no traps. More carry one when needed for "
        "every trap kind to be shown and every worker to meet qc_min_traps (annotation.batching.trap_share).",
    )
    obvious_traps = models.JSONField(default=default_obvious_traps, blank=True)
    qc_max_label_share = models.FloatField(default=0.05)
    # The least evidence on which quality control excludes a worker (crowd.quality.exclusion_reasons).
    qc_min_items = models.PositiveIntegerField(
        default=10, help_text="Likert items shared with other workers before a low correlation can exclude a worker."
    )
    qc_min_traps = models.PositiveSmallIntegerField(
        default=2, help_text="Trap answers seen before failing half of them excludes a worker."
    )
    qc_min_orderings = models.PositiveSmallIntegerField(
        default=3,
        help_text="Orderings submitted before comparisons can exclude a worker (one ordering is one judgement).",
    )
    qc_block_excluded = models.BooleanField(default=False)
    qc_reject_failed_traps = models.BooleanField(default=False)

    # Marketplace. Participant links by default: they need no account, no credentials and no
    # money, and MTurk closed for good on 2026-09-30 (kept for rehearsal and existing access).
    channel = models.CharField(
        max_length=16, choices=Channel.choices, default=Channel.LINKS, help_text="Where workers come from."
    )
    environment = models.CharField(max_length=16, choices=Environment.choices, default=Environment.LOCAL)
    production_enabled = models.BooleanField(default=False, help_text="The campaign's own switch for real money.")
    budget_cap = models.DecimalField(max_digits=10, decimal_places=2, default=Decimal("100.00"))
    require_us_locale = models.BooleanField(default=True)
    min_approval_percent = models.PositiveSmallIntegerField(default=95)
    hit_title = models.CharField(
        max_length=128,
        default="Rate how important short statements are for a topic",
        help_text="The title of Likert HITs (and Prolific studies) as workers see it in their list of work.",
    )
    comparison_hit_title = models.CharField(
        max_length=128,
        default="Put short statements about a topic in order of importance",
        help_text="The title of ordering (comparison) HITs and studies.",
    )
    hit_keywords = models.CharField(max_length=200, default="importance, rating, text, summarization")
    hit_lifetime_seconds = models.PositiveIntegerField(default=7 * 24 * 3600)
    assignment_duration_seconds = models.PositiveIntegerField(default=30 * 60)
    auto_approval_delay_seconds = models.PositiveIntegerField(default=3 * 24 * 3600)
    tasks_per_session = models.PositiveSmallIntegerField(
        default=10, help_text="Sessions (Prolific, links): tasks per participant visit."
    )
    channel_settings = models.JSONField(default=dict, blank=True)
    link_idle_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Participant links: a held task's place is released after this long without a sign of life "
        "from its page. Empty: the deployment's LINK_IDLE_RELEASE_SECONDS. May change at any time.",
    )

    # What participants read and agree to before their first task (Prolific, participant links).
    consent_text = models.TextField(
        blank=True,
        help_text="The information and consent page shown before a session's first task; participants must "
        "agree before any task is handed to them. Empty: no consent step.",
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return self.name

    def question_for(self, topic) -> str:
        return self.question_template.replace("{topic}", topic.description or topic.key)

    def title_for(self, kind: str) -> str:
        """The title workers see for a task of `kind` (a Batch.Kind) in their list of work."""
        return self.hit_title if kind == Batch.Kind.LIKERT else self.comparison_hit_title

    def reward_for(self, kind: str) -> Decimal:
        """What one task of `kind` (a Batch.Kind) pays a worker, before any channel's fee."""
        return self.likert_reward if kind == Batch.Kind.LIKERT else self.comparison_reward


class Topic(models.Model):
    """A document cluster's propositions; the unit the ranking pipeline advances."""

    class State(models.TextChoices):
        IMPORTING = "importing", "Importing"
        LIKERT = "likert", "Likert round"
        COMPARISONS = "comparisons", "Comparison rounds"
        DONE = "done", "Done"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="topics")
    key = models.CharField(
        max_length=100,
        validators=[url_key_validator],
        help_text="Part of the topic's web addresses: letters, digits, '-', '_' and '.' only.",
    )
    description = models.TextField(
        blank=True, help_text="What workers see, e.g. 'students loans without credit history'."
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.IMPORTING)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["campaign", "key"]
        constraints = [models.UniqueConstraint(fields=["campaign", "key"], name="topic_unique_key")]

    def __str__(self):
        return f"{self.campaign.slug}/{self.key}"

    @property
    def state_label(self) -> str:
        """The state as pages say it: a topic stays `importing` until its Likert round is
        published, which a researcher reads as "Not published" (nothing is being imported)."""
        return "Not published" if self.state == self.State.IMPORTING else self.get_state_display()

    @property
    def url_safe(self) -> bool:
        """Whether the key can go into the topic's URLs; pages link the topic only then."""
        return url_key_is_safe(self.key)


class Proposition(models.Model):
    """A subject – relation – object tuple from Open IE, or a trap shown among them."""

    class TrapKind(models.TextChoices):
        NONE = "none", "Not a trap"
        OBVIOUS = "obvious", "Obvious trap"
        SUBTLE = "subtle", "Subtle trap"

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="propositions")
    subject = models.TextField()
    relation = models.TextField(blank=True)
    object = models.TextField(blank=True)
    normalized = models.TextField(help_text="Lower-cased, white-space-folded text; unique per topic.")
    confidence = models.FloatField(null=True, blank=True)
    source = models.TextField(blank=True, help_text="Source document or sentence.")
    external_id = models.CharField(max_length=200, blank=True)
    trap_kind = models.CharField(max_length=8, choices=TrapKind.choices, default=TrapKind.NONE)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["topic", "id"]
        constraints = [models.UniqueConstraint(fields=["topic", "normalized"], name="proposition_unique_text")]
        indexes = [models.Index(fields=["topic", "trap_kind"])]

    def __str__(self):
        return self.text

    @property
    def text(self) -> str:
        return proposition_text(self.subject, self.relation, self.object)


class Batch(models.Model):
    """A set of tasks of one kind published together; comparison batches are numbered."""

    class Kind(models.TextChoices):
        LIKERT = "likert", "Likert"
        COMPARISON = "comparison", "Comparison"

    class Status(models.TextChoices):
        CREATED = "created", "Created"
        PUBLISHED = "published", "Published"
        COMPLETE = "complete", "Complete"
        EXPIRED = "expired", "Expired"

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="batches")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    number = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CREATED)
    created_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    held_reason = models.TextField(
        blank=True,
        help_text="Why publishing the batch is held back (the budget cap, ...); empty when nothing holds it.",
    )

    class Meta:
        verbose_name_plural = "batches"
        ordering = ["topic", "kind", "number"]
        constraints = [models.UniqueConstraint(fields=["topic", "kind", "number"], name="batch_unique_number")]

    def __str__(self):
        return f"{self.topic} {self.kind} #{self.number}"


class Task(models.Model):
    """One HIT's content: an ordered list of propositions to rate or to order."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="tasks")
    kind = models.CharField(max_length=16, choices=Batch.Kind.choices)
    position = models.PositiveIntegerField(default=0)
    assignments_needed = models.PositiveSmallIntegerField(default=5)
    propositions = models.ManyToManyField(Proposition, through="TaskItem", related_name="tasks")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["batch", "position"]

    def __str__(self):
        return f"{self.kind} task {self.uuid}"


class TaskItem(models.Model):
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="items")
    proposition = models.ForeignKey(Proposition, on_delete=models.CASCADE, related_name="task_items")
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["task", "position"]
        constraints = [
            models.UniqueConstraint(fields=["task", "position"], name="taskitem_unique_position"),
            models.UniqueConstraint(fields=["task", "proposition"], name="taskitem_unique_proposition"),
        ]


class ImportRecord(models.Model):
    """What one import did: kept for the campaign's history and the dashboard."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="imports")
    filename = models.CharField(max_length=255)
    format = models.CharField(max_length=16)
    summary = models.JSONField(default=dict)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]


class CampaignMember(models.Model):
    """A collaborator on a campaign someone else owns. A viewer sees every page and download of
    it; an editor also changes it, except its members and its money, which stay with the owner
    (annotation.campaigns: `campaigns_visible_to`, `campaigns_editable_by`, `campaigns_owned_by`)."""

    class Role(models.TextChoices):
        VIEW = "view", "View"
        EDIT = "edit", "Edit"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="members")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="campaign_memberships")
    role = models.CharField(max_length=8, choices=Role.choices, default=Role.VIEW)
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["campaign", "added_at", "id"]
        constraints = [models.UniqueConstraint(fields=["campaign", "user"], name="campaign_member_unique_user")]

    def __str__(self):
        return f"{self.user} ({self.get_role_display().lower()}) on {self.campaign}"


# Suitability filtering's rows live in their package; importing them here registers them.
from annotation.suitability.models import (  # noqa: E402, F401
    ClassifierRun,
    SuitabilityDecision,
    SuitabilityItem,
    SuitabilityLabel,
    SuitabilityStudy,
)
