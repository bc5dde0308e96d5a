import logging

from django.core.management.base import BaseCommand

from annotation.models import Topic
from crowd.tasks import sync_chunks_dispatch
from ranking.workflow import loop_run_exclusive

# What each step of a topic did, as a researcher reads it (ranking.pipeline.Step.action).
ACTIONS = {
    "waiting": "waiting for answers",
    "paused": "paused with its campaign",
    "likert_done": "Likert round complete; first comparison batch chosen",
    "batch_created": "refit; next comparison batch chosen",
    "republish": "comparison batch published again",
    "refit": "refit",
    "done": "done",
    "idle": "nothing to do",
}


class Command(BaseCommand):
    help = (
        "One pass of the campaign loop now, as Celery beat runs it every SYNC_INTERVAL_SECONDS: every "
        "channel synced, quality control once per campaign, every waiting topic advanced, new batches "
        "published, finished campaigns marked. The loop's log lines show with --verbosity 2."
    )

    def handle(self, *args, verbosity: int = 1, **options):
        previous = logging.root.manager.disable
        if verbosity < 2:
            logging.disable(logging.INFO)  # the summary below says what the log lines would
        try:
            loop = loop_run_exclusive(dispatch=sync_chunks_dispatch)  # chunks shared with workers, if any
        finally:
            logging.disable(previous)
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
        topics = Topic.objects.select_related("campaign").in_bulk([step["topic"] for step in loop.steps])
        for step in loop.steps:
            self.stdout.write(_step_line(step, topics.get(step["topic"])))
        for campaign_id in loop.finished:
            self.stdout.write(f"campaign {campaign_id}: finished")
        for error in report["errors"] + loop.errors:
            self.stderr.write(f"error: {error}")


def _step_line(step: dict, topic: Topic | None) -> str:
    """'compost/loans: refit; next comparison batch chosen (now: Comparison rounds)'."""
    name = f"{topic.campaign.slug}/{topic.key}" if topic is not None else f"topic {step['topic']}"
    action = ACTIONS.get(step["action"], step["action"].replace("_", " "))
    if step.get("reason"):
        action += f" ({step['reason']})"
    state = Topic(state=step["state"]).state_label
    return f"{name}: {action} (now: {state})"
