import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction


class Command(BaseCommand):
    help = (
        "Create a researcher's account (a colleague to share a campaign with): prints a first password to hand "
        "over, which they change with `manage.py changepassword USERNAME`. No admin rights."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--email", default="")

    def handle(self, *args, username: str, email: str, **options):
        name = username.strip()
        if not name:
            raise CommandError("Give a user name.")
        users = get_user_model()._default_manager
        password = secrets.token_urlsafe(12)
        with transaction.atomic():
            if users.filter(username=name).exists():
                raise CommandError(f"{name!r} has an account already: add them on the campaign's Settings page.")
            users.create_user(username=name, email=email, password=password)
        self.stdout.write(self.style.SUCCESS(f"Created {name} / {password}"))
        self.stdout.write(
            f"Hand the password over; `python manage.py changepassword {name}` changes it. Share a campaign with "
            "them on its Settings page (Collaborators)."
        )
