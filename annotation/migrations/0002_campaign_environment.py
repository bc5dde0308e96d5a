"""Campaign.mturk_environment becomes the channel-neutral Campaign.environment."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("annotation", "0001_initial")]

    operations = [
        migrations.RenameField(model_name="campaign", old_name="mturk_environment", new_name="environment"),
        migrations.AlterField(
            model_name="campaign",
            name="environment",
            field=models.CharField(
                choices=[("local", "Local endpoint"), ("sandbox", "Sandbox"), ("production", "Production")],
                default="local",
                max_length=16,
            ),
        ),
    ]
