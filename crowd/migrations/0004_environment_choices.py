"""The environments' labels became channel-neutral (annotation 0002): each channel's policy
names them (crowd.marketplaces)."""

from django.db import migrations, models

CHOICES = [("local", "Local endpoint"), ("sandbox", "Sandbox"), ("production", "Production")]


class Migration(migrations.Migration):
    dependencies = [("crowd", "0003_ledger_unique_reference"), ("annotation", "0002_campaign_environment")]

    operations = [
        migrations.AlterField(
            model_name="hittype", name="environment", field=models.CharField(choices=CHOICES, max_length=16)
        ),
        migrations.AlterField(
            model_name="hit", name="environment", field=models.CharField(choices=CHOICES, max_length=16)
        ),
        migrations.AlterField(
            model_name="study", name="environment", field=models.CharField(choices=CHOICES, max_length=16)
        ),
    ]
