from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import transaction

from annotation.campaigns import campaign_create
from annotation.importers import propositions_import
from annotation.models import Campaign

SAMPLES = Path(settings.BASE_DIR) / "samples"


class Command(BaseCommand):
    help = "Set up a sample campaign on the embedded default (SQLite) and serve it."

    def add_arguments(self, parser):
        parser.add_argument("--no-serve", action="store_true", help="Set up and exit without starting the server.")
        parser.add_argument("--port", default="8000")

    def handle(self, *args, no_serve, port, **options):
        call_command("migrate", verbosity=0)
        with transaction.atomic():
            Campaign.objects.filter(slug="sample").delete()
            user = self._demo_user()
            campaign = campaign_create(slug="sample", name="Sample campaign", owner=user)
            with (SAMPLES / "propositions.tsv").open("rb") as props, (SAMPLES / "topics.tsv").open("rb") as topics:
                summary = propositions_import(
                    campaign=campaign, source=props, filename="propositions.tsv",
                    topics_source=topics, topics_filename="topics.tsv",
                )
        for line in summary.lines():
            self.stdout.write(line)
        url = f"http://127.0.0.1:{port}/admin/annotation/campaign/{campaign.pk}/change/"
        self.stdout.write(self.style.SUCCESS(f"Sample campaign ready: {url}  (log in as demo / demo)"))
        if not no_serve:
            call_command("runserver", f"127.0.0.1:{port}")

    def _demo_user(self):
        User = get_user_model()
        user, _ = User.objects.get_or_create(username="demo", defaults={"is_staff": True, "is_superuser": True})
        user.set_password("demo")
        user.save()
        return user
