from django.core.management.base import BaseCommand

from crowd.tasks import sync_chunks_dispatch
from ranking.workflow import loop_run_exclusive


class Command(BaseCommand):
    help = (
        "One pass of the campaign loop now, as Celery beat runs it every SYNC_INTERVAL_SECONDS: every "
        "channel synced, quality control once per campaign, every waiting topic advanced, new batches "
        "published, finished campaigns marked."
    )

    def handle(self, *args, **options):
        loop = loop_run_exclusive(dispatch=sync_chunks_dispatch)  # chunks shared with workers, if any
        if loop is None:
            self.stdout.write("A pass of the loop is running already (a Celery worker's): nothing done.")
            return
        report = loop.sync
        self.stdout.write(
            f"HITs {report['hits']}: verified {report['verified']}, recovered {report['recovered']}, "
            f"unverified {report['unverified']}, approved {report['approved']}, completed {report['completed']}"
        )
        sessions, studies = report["sessions"], report["prolific"]
        if any(sessions.values()) or studies["studies"]:
            self.stdout.write(
                f"Sessions: {sessions['counted']} answers counted late, {sessions['unverified']} not handed out, "
                f"{sessions['released']} holds released; Prolific studies {studies['studies']}: "
                f"{studies['approved']} approved, {studies['rejected']} rejected, {studies['abandoned']} returned"
            )
        for step in loop.steps:
            self.stdout.write(f"topic {step['topic']}: {step['action']} → {step['state']}")
        for campaign_id in loop.finished:
            self.stdout.write(f"campaign {campaign_id}: finished")
        for error in report["errors"] + loop.errors:
            self.stderr.write(f"error: {error}")
