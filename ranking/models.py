"""Scores per proposition and one snapshot per TrueSkill refit."""

from django.conf import settings
from django.db import models

from annotation.models import Proposition, Topic


class PropositionScore(models.Model):
    """The current estimates for one proposition: Likert mean, TrueSkill μ and σ, rank."""

    proposition = models.OneToOneField(Proposition, on_delete=models.CASCADE, related_name="score")
    likert_mean = models.FloatField(null=True, blank=True)
    likert_n = models.PositiveIntegerField(default=0)
    in_comparisons = models.BooleanField(default=False)
    mu = models.FloatField(null=True, blank=True)
    sigma = models.FloatField(null=True, blank=True)
    comparisons = models.PositiveIntegerField(default=0)
    rank = models.PositiveIntegerField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["rank"]


class RankingSnapshot(models.Model):
    """One refit of a topic: what it used and how much the ranking moved."""

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="snapshots")
    number = models.PositiveIntegerField()
    comparisons_used = models.PositiveIntegerField()
    spearman_previous = models.FloatField(null=True, blank=True)
    entered_top = models.PositiveIntegerField(default=0)
    left_top = models.PositiveIntegerField(default=0)
    ranking = models.JSONField(default=list, help_text="[[proposition id, mu, sigma], ...] best first.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["topic", "number"]
        constraints = [models.UniqueConstraint(fields=["topic", "number"], name="snapshot_unique_number")]


class PairBudgetExtension(models.Model):
    """More pairs for one topic's comparison rounds than its campaign's share gives, added by a
    researcher before the topic is done (ranking/budget.py): each is kept, with who and when."""

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="budget_extensions")
    pairs = models.PositiveIntegerField()
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["topic", "created_at"]


class StepRequest(models.Model):
    """A topic whose current batch may hold every answer it needs (crowd.work.events): the
    event path (ranking.workflow.step_requests_run) confirms the batch's answers with their
    channel once `due_at` has come, steps the topic if they count, and deletes the request;
    one per topic, so a burst of answers asks for one step. A pass of the loop takes what is
    due before it lets go of its lock, so a request made while a pass runs is not lost."""

    topic = models.OneToOneField(Topic, on_delete=models.CASCADE, primary_key=True, related_name="step_request")
    requested_at = models.DateTimeField(auto_now_add=True)
    due_at = models.DateTimeField()  # debounced; pushed back while the channel has not confirmed
    attempts = models.PositiveSmallIntegerField(default=0)  # confirmations tried so far
