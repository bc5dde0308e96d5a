"""A study per round (issue 25): a study belongs to a topic's round (topic, kind) and its batches
are linked through StudyBatch. Each existing study keeps its one batch as its first link, its
places as that batch's."""

import django.db.models.deletion
from django.db import migrations, models


def studies_to_rounds(apps, schema_editor):
    Study = apps.get_model("crowd", "Study")
    StudyBatch = apps.get_model("crowd", "StudyBatch")
    for study in Study.objects.select_related("batch").iterator():
        Study.objects.filter(pk=study.pk).update(topic_id=study.batch.topic_id, kind=study.batch.kind)
        StudyBatch.objects.create(
            study_id=study.pk,
            batch_id=study.batch_id,
            places=study.places,
            places_to=study.places,
            opened_at=study.published_at,
        )


def rounds_to_studies(apps, schema_editor):
    Study = apps.get_model("crowd", "Study")
    StudyBatch = apps.get_model("crowd", "StudyBatch")
    for link in StudyBatch.objects.order_by("study_id", "pk"):
        Study.objects.filter(pk=link.study_id, batch__isnull=True).update(batch_id=link.batch_id)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0010_suitability"),
        ("crowd", "0016_links_codes_idle_release"),
    ]

    operations = [
        migrations.AddField(
            model_name="study",
            name="topic",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.CASCADE, related_name="studies", to="annotation.topic"
            ),
        ),
        migrations.AddField(
            model_name="study",
            name="kind",
            field=models.CharField(
                choices=[("likert", "Likert"), ("comparison", "Comparison")], default="", max_length=16
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="study",
            name="ended_at",
            field=models.DateTimeField(
                blank=True, help_text="When its round ended and it was stopped: no batch joins it after.", null=True
            ),
        ),
        migrations.AlterField(
            model_name="study",
            name="places",
            field=models.PositiveIntegerField(help_text="Places on offer at Prolific: every batch's, and raises."),
        ),
        migrations.CreateModel(
            name="StudyBatch",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("places", models.PositiveIntegerField(help_text="Places this batch adds to the study: its quote.")),
                (
                    "places_to",
                    models.PositiveIntegerField(help_text="The study's places once this batch's are added."),
                ),
                (
                    "opened_at",
                    models.DateTimeField(
                        blank=True,
                        help_text="When Prolific had its places on offer (the study published, or raised).",
                        null=True,
                    ),
                ),
                (
                    "batch",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="study_link", to="annotation.batch"
                    ),
                ),
                (
                    "study",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="batch_links", to="crowd.study"
                    ),
                ),
            ],
            options={"ordering": ["study_id", "places_to", "pk"]},
        ),
        migrations.AlterField(
            model_name="study",
            name="batch",
            field=models.OneToOneField(
                null=True, on_delete=django.db.models.deletion.CASCADE, related_name="study", to="annotation.batch"
            ),
        ),
        migrations.RunPython(studies_to_rounds, rounds_to_studies),
        migrations.RemoveField(model_name="study", name="batch"),
        migrations.AlterField(
            model_name="study",
            name="topic",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="studies", to="annotation.topic"
            ),
        ),
        migrations.AlterField(
            model_name="placesraise",
            name="dropped_at",
            field=models.DateTimeField(
                blank=True,
                help_text="When it was no longer needed: the study's open batches ended before the places were raised.",
                null=True,
            ),
        ),
    ]
