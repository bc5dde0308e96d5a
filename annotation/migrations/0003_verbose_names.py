"""Names the admin shows: plurals Django cannot guess (batches, ledger entries, bonuses, studies)
and HIT in capitals. Model options only: no change to the database."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0002_campaign_environment"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="batch",
            options={"ordering": ["topic", "kind", "number"], "verbose_name_plural": "batches"},
        ),
    ]
