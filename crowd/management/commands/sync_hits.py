from django.core.management.base import BaseCommand

from crowd.sync import channels_sync


class Command(BaseCommand):
    help = "Sync assignments of every open HIT now (Celery beat does this every SYNC_INTERVAL_SECONDS)."

    def handle(self, *args, **options):
        report = channels_sync()
        self.stdout.write(
            f"HITs {report['hits']}: verified {report['verified']}, recovered {report['recovered']}, "
            f"unverified {report['unverified']}, approved {report['approved']}, completed {report['completed']}"
        )
        sessions, studies = report["sessions"], report["studies"]
        if any(sessions.values()) or studies["studies"]:
            self.stdout.write(
                f"Sessions: {sessions['counted']} answers counted late, {sessions['unverified']} not handed out, "
                f"{sessions['released']} holds released; Prolific studies {studies['studies']}: "
                f"{studies['approved']} approved, {studies['rejected']} rejected, {studies['abandoned']} returned"
            )
        for error in report["errors"]:
            self.stderr.write(f"error: {error}")
