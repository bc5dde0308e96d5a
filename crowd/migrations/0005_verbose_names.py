"""Names the admin shows: plurals Django cannot guess (batches, ledger entries, bonuses, studies)
and HIT in capitals. Model options only: no change to the database."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("crowd", "0004_environment_choices"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="bonus",
            options={"verbose_name_plural": "bonuses"},
        ),
        migrations.AlterModelOptions(
            name="hit",
            options={"verbose_name": "HIT", "verbose_name_plural": "HITs"},
        ),
        migrations.AlterModelOptions(
            name="hittype",
            options={"verbose_name": "HIT type"},
        ),
        migrations.AlterModelOptions(
            name="ledgerentry",
            options={"ordering": ["-created_at"], "verbose_name_plural": "ledger entries"},
        ),
        migrations.AlterModelOptions(
            name="study",
            options={"verbose_name_plural": "studies"},
        ),
        migrations.AlterModelOptions(
            name="workerquality",
            options={"verbose_name_plural": "worker qualities"},
        ),
    ]
