from django.core.management.base import BaseCommand

from crowd.sync import assignments_sync


class Command(BaseCommand):
    help = "Sync assignments of every open HIT now (Celery beat does this every SYNC_INTERVAL_SECONDS)."

    def handle(self, *args, **options):
        report = assignments_sync()
        self.stdout.write(
            f"HITs {report.hits}: verified {report.verified}, recovered {report.recovered}, "
            f"unverified {report.unverified}, approved {report.approved}, completed {report.completed}"
        )
        for error in report.errors:
            self.stderr.write(f"error: {error}")
