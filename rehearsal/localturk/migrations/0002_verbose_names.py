"""Names the admin shows: plurals Django cannot guess (batches, ledger entries, bonuses, studies)
and HIT in capitals. Model options only: no change to the database."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("localturk", "0001_initial"),
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
    ]
