"""The map stage (Falke & Gurevych 2017, §5.5–5.6): a topic's revised propositions, the
annotators it is assigned to, and their concept maps — concepts and the relations between
them. State changes go through maps.revision, maps.workbench and maps.draft only."""

from django.conf import settings
from django.db import models
from django.db.models.functions import Greatest, Least

from annotation.models import Proposition, Topic

TARGET_CONCEPTS = 25  # the paper's map size (§5.6)
MAX_SYNTHETIC = 3  # relations with a free label an annotator may add (§5.6)


class RevisedProposition(models.Model):
    """One proposition of a topic's revision (§5.5): kept as the crowd ranked it, one conjunct
    of a split, a span edit, or added by the expert. `position` is its importance order."""

    class Operation(models.TextChoices):
        KEPT = "kept", "Kept"
        SPLIT = "split", "Split from a conjunction"
        SPAN_EDIT = "span_edit", "Span edited"
        ADDED = "added", "Added"

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="revised_propositions")
    subject = models.TextField()
    relation = models.TextField()
    object = models.TextField()
    revised_from = models.ForeignKey(
        Proposition, null=True, blank=True, on_delete=models.PROTECT, related_name="revisions"
    )
    operation = models.CharField(max_length=10, choices=Operation.choices, default=Operation.KEPT)
    position = models.PositiveIntegerField(help_text="Importance order within the topic, 1 first.")
    crowd_rank = models.PositiveIntegerField(null=True, blank=True, help_text="The crowd's rank of the source.")
    tie_rank = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["topic", "position", "id"]
        indexes = [models.Index(fields=["topic", "position"])]

    def __str__(self) -> str:
        return f"{self.subject} | {self.relation} | {self.object}"


class MapAssignment(models.Model):
    """A topic given to an annotator for a map of their own (double annotation: two per topic)."""

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="map_assignments")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="map_assignments")
    assigned_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    assigned_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["topic", "assigned_at", "id"]
        constraints = [models.UniqueConstraint(fields=["topic", "annotator"], name="map_assignment_unique")]


class ConceptMap(models.Model):
    """One concept map of a topic: an annotator's (one per topic and annotator), the automatic
    draft, or one imported as gold or as a system's output."""

    class Kind(models.TextChoices):
        ANNOTATED = "annotated", "Annotator's map"
        AUTOMATIC = "automatic", "Automatic draft"
        GOLD = "gold", "Imported gold map"
        SYSTEM = "system", "Imported system map"

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        FINAL = "final", "Final"

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="concept_maps")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.ANNOTATED)
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="concept_maps"
    )
    name = models.CharField(max_length=200, blank=True, help_text="An imported map's file name.")
    status = models.CharField(max_length=5, choices=Status.choices, default=Status.DRAFT)
    target_concepts = models.PositiveIntegerField(default=TARGET_CONCEPTS)
    active_seconds = models.PositiveIntegerField(default=0)
    version = models.PositiveIntegerField(default=1, help_text="Optimistic concurrency: +1 per change.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["topic", "kind", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["topic", "annotator"],
                condition=models.Q(kind="annotated"),
                name="concept_map_one_per_annotator",
            ),
            models.CheckConstraint(
                condition=~models.Q(kind="annotated") | models.Q(annotator__isnull=False),
                name="concept_map_annotated_has_annotator",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} of {self.topic_id} ({self.annotator_id or self.name})"


class Concept(models.Model):
    """A node: the label kept and the labels merged into it (the label kept among them)."""

    concept_map = models.ForeignKey(ConceptMap, on_delete=models.CASCADE, related_name="concepts")
    label = models.TextField()
    merged_from = models.JSONField(default=list, help_text="Every label this concept stands for.")

    class Meta:
        ordering = ["concept_map", "id"]

    def __str__(self) -> str:
        return self.label


class Relation(models.Model):
    """An edge: from a revised proposition, or synthetic (a free label, at most MAX_SYNTHETIC)."""

    concept_map = models.ForeignKey(ConceptMap, on_delete=models.CASCADE, related_name="relations")
    source = models.ForeignKey(Concept, on_delete=models.CASCADE, related_name="outgoing")
    target = models.ForeignKey(Concept, on_delete=models.CASCADE, related_name="incoming")
    label = models.TextField()
    proposition = models.ForeignKey(
        RevisedProposition, null=True, blank=True, on_delete=models.PROTECT, related_name="relations"
    )
    synthetic = models.BooleanField(default=False)

    class Meta:
        ordering = ["concept_map", "id"]
        constraints = [
            # At most one relation per unordered pair of concepts (the corpus checker's rule).
            models.UniqueConstraint(
                "concept_map", Least("source", "target"), Greatest("source", "target"), name="relation_one_per_pair"
            ),
            models.CheckConstraint(condition=~models.Q(source=models.F("target")), name="relation_not_a_loop"),
        ]

    def __str__(self) -> str:
        return f"{self.source_id} -{self.label}-> {self.target_id}"
