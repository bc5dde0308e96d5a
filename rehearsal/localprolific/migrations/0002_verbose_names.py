"""Names the admin shows: plurals Django cannot guess (batches, ledger entries, bonuses, studies)
and HIT in capitals. Model options only: no change to the database."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("localprolific", "0001_initial"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="bulkbonus",
            options={"verbose_name_plural": "bulk bonuses"},
        ),
        migrations.AlterModelOptions(
            name="study",
            options={"verbose_name_plural": "studies"},
        ),
    ]
