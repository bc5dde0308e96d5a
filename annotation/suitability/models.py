"""Suitability filtering's rows, part of the annotation app (imported by annotation.models).

A labelling study per campaign (its sample, stratified by topic), the experts' labels, the
classifier runs and one decision per proposition. A removed proposition is kept: its
decision row says it is removed, why (predicted, expert label, verification) and who
verified it; the Likert round skips it (annotation.suitability.selectors)."""

from django.conf import settings
from django.db import models

DEFAULT_GUIDELINE = """A proposition is SUITABLE when all three hold:
1. It is a correct extraction: the sentence says what the proposition says (no words missing or misplaced that change its meaning).
2. It means something without its sentence: no pronoun or "this/these …" whose referent is outside the proposition ("he became mayor", "it improves readily").
3. Its subject and object are proper concepts: short noun phrases, not clauses ("that he had met him a week before", "to become a banker on the grounds that …").
Otherwise it is UNSUITABLE; give the main reason: pronoun without referent, clause argument, wrong extraction, or other (say what in the note).
When in doubt whether a reader of the topic would understand it alone, choose unsuitable."""


class SuitabilityStudy(models.Model):
    """A campaign's labelling study: n propositions sampled per topic share, with a seed."""

    campaign = models.OneToOneField("annotation.Campaign", on_delete=models.CASCADE, related_name="suitability_study")
    sample_size = models.PositiveIntegerField(default=500)
    seed = models.IntegerField(default=0)
    guideline = models.TextField(default=DEFAULT_GUIDELINE)
    budget_share = models.FloatField(default=0.2, help_text="Share of predicted negatives to verify by hand.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "suitability studies"

    def __str__(self):
        return f"suitability study of {self.campaign}"


class SuitabilityItem(models.Model):
    """A proposition in a study's sample, in the order labellers see it."""

    study = models.ForeignKey(SuitabilityStudy, on_delete=models.CASCADE, related_name="items")
    proposition = models.ForeignKey("annotation.Proposition", on_delete=models.CASCADE, related_name="+")
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["study", "position"]
        constraints = [
            models.UniqueConstraint(fields=["study", "proposition"], name="suitability_item_unique"),
            models.UniqueConstraint(fields=["study", "position"], name="suitability_item_position"),
        ]


class SuitabilityLabel(models.Model):
    """One expert's judgement of one sampled proposition."""

    class Reason(models.TextChoices):
        NONE = "", "—"
        PRONOUN = "pronoun_no_referent", "Pronoun without referent"
        CLAUSE = "clause_argument", "Clause argument"
        WRONG = "wrong_extraction", "Wrong extraction"
        OTHER = "other", "Other"

    study = models.ForeignKey(SuitabilityStudy, on_delete=models.CASCADE, related_name="labels")
    proposition = models.ForeignKey("annotation.Proposition", on_delete=models.CASCADE, related_name="+")
    expert = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    suitable = models.BooleanField()
    reason = models.CharField(max_length=24, choices=Reason.choices, blank=True, default="")
    note = models.TextField(blank=True)
    labelled_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["study", "proposition", "expert"]
        constraints = [
            models.UniqueConstraint(fields=["study", "proposition", "expert"], name="suitability_label_once"),
        ]


class ClassifierRun(models.Model):
    """One training of the classifier on the study's majority labels."""

    study = models.ForeignKey(SuitabilityStudy, on_delete=models.CASCADE, related_name="runs")
    trained_at = models.DateTimeField(auto_now_add=True)
    trained_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    parameters = models.JSONField(default=dict, help_text="Seed, split, weights tried and chosen, the model.")
    metrics = models.JSONField(default=dict, help_text="Held-out precision and recall on negatives, with counts.")

    class Meta:
        ordering = ["-trained_at", "-id"]


class SuitabilityDecision(models.Model):
    """What the filter decided for one proposition; `removed` is what the Likert round obeys
    and is written only by annotation.suitability.decisions.decisions_apply."""

    class Source(models.TextChoices):
        CLASSIFIER = "classifier", "Classifier"
        EXPERT = "expert", "Expert label (study)"
        VERIFIED = "verified", "Verified by hand"

    proposition = models.OneToOneField(
        "annotation.Proposition", on_delete=models.CASCADE, related_name="suitability_decision"
    )
    run = models.ForeignKey(ClassifierRun, on_delete=models.CASCADE, related_name="decisions")
    predicted_suitable = models.BooleanField()
    margin = models.FloatField()
    held_out = models.BooleanField(default=False, help_text="In the run's held-out split.")
    expert_label = models.BooleanField(null=True, blank=True, help_text="The study's majority label, if any.")
    rule = models.CharField(max_length=24, blank=True, help_text="A known-weak type re-checked by hand.")
    verified_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    verified_label = models.BooleanField(null=True, blank=True)
    verified_at = models.DateTimeField(null=True, blank=True)
    final_suitable = models.BooleanField()
    source = models.CharField(max_length=12, choices=Source.choices, default=Source.CLASSIFIER)
    removed = models.BooleanField(default=False)
    applied_at = models.DateTimeField(null=True, blank=True)
    decided_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["run", "predicted_suitable"]), models.Index(fields=["removed"])]
