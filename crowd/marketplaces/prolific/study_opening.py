"""A Prolific study per batch: its shape (places, session reward, time) and opening it.

One study per published batch (`study_open`, called by the adapter's `batch_open`): its
places are sessions of `tasks_per_session` tasks, the study URL brings the participant to
`/s/prolific/` with Prolific's participant, study and session ids, and the last task
redirects to Prolific's completion URL with the study's completion code. What happens to the
study afterwards (submissions approved or rejected, places topped up, the study stopped)
is crowd/channels/prolific/study_sync.py, a service that uses the session bookkeeping.
"""

import math
import secrets
from decimal import ROUND_HALF_UP

from django.conf import settings
from django.utils import timezone

from annotation.models import Batch, Campaign
from crowd.marketplaces.prolific.client import prolific_client
from crowd.marketplaces.prolific.filters import campaign_prolific_filters
from crowd.marketplaces.prolific.wire import StudySpec
from crowd.marketplaces.prolific.wire import study_url as study_url_with
from crowd.models import Study

# Seconds a participant needs per task, for Prolific's estimated completion time; the
# campaign's channel_settings["prolific"]["seconds_per_task"] overrides it.
DEFAULT_SECONDS_PER_TASK = 45


def study_url() -> str:
    """Where Prolific sends participants: /s/prolific/ with its three ids as placeholders."""
    return study_url_with(f"{settings.SITE_URL}/s/prolific/")


def session_reward_cents(campaign: Campaign, kind: str) -> int:
    """What one session pays: tasks per session at the task's reward."""
    reward = campaign.reward_for(kind)
    return int((reward * campaign.tasks_per_session * 100).to_integral_value(rounding=ROUND_HALF_UP))


def study_places(batch: Batch, tasks_per_session: int) -> int:
    """Sessions the batch needs: its slots over the tasks one participant can do (never the
    same task twice, so at most the batch's number of tasks)."""
    needed = list(batch.tasks.values_list("assignments_needed", flat=True))
    per_session = max(1, min(tasks_per_session, len(needed)))
    return max(1, math.ceil(sum(needed) / per_session))


def seconds_per_task(campaign: Campaign) -> int:
    """The estimate of a task's time (the Channel page's "Seconds per task")."""
    return int(campaign.channel_settings.get("prolific", {}).get("seconds_per_task", DEFAULT_SECONDS_PER_TASK))


def session_minutes(campaign: Campaign) -> int:
    return max(1, math.ceil(campaign.tasks_per_session * seconds_per_task(campaign) / 60))


def study_open(*, batch: Batch, environment: str) -> Study:
    """Create and publish the batch's study, once: our row first (its internal name is the
    idempotency key at Prolific and its completion code is fixed), then the remote study,
    then publication. A re-run after a failure picks up where the last one stopped."""
    campaign = batch.topic.campaign
    prolific_settings = campaign.channel_settings.get("prolific", {})
    study, _ = Study.objects.get_or_create(
        batch=batch,
        defaults={
            "environment": environment,
            "internal_name": f"salience-{campaign.slug}-batch-{batch.pk}",
            "places": study_places(batch, campaign.tasks_per_session),
            "reward_cents": session_reward_cents(campaign, batch.kind),
            "completion_code": secrets.token_hex(4).upper(),
        },
    )
    client = prolific_client(environment=environment)
    if not study.study_id:
        minutes = session_minutes(campaign)
        spec = StudySpec(
            name=prolific_settings.get("title", campaign.title_for(batch.kind)),
            internal_name=study.internal_name,
            description=_study_description(campaign, batch),
            external_study_url=study_url(),
            total_available_places=study.places,
            reward_cents=study.reward_cents,
            estimated_completion_minutes=minutes,
            maximum_allowed_minutes=max(minutes * 3, math.ceil(campaign.assignment_duration_seconds / 60)),
            completion_code=study.completion_code,
            filters=tuple(campaign_prolific_filters(campaign)),
            device_compatibility=tuple(prolific_settings.get("devices", ("desktop", "tablet", "mobile"))),
        )
        remote = client.study_create(spec)
        Study.objects.filter(pk=study.pk).update(study_id=remote.id, status=remote.status)
        study.refresh_from_db()
    if study.published_at is None:
        remote = client.study_publish(study.study_id)
        Study.objects.filter(pk=study.pk).update(status=remote.status, published_at=timezone.now())
        study.refresh_from_db()
    return study


def _study_description(campaign: Campaign, batch: Batch) -> str:
    what = (
        "rate how important short statements are for learning about a topic"
        if batch.kind == Batch.Kind.LIKERT
        else "put short statements in order of importance for learning about a topic"
    )
    return (
        f"You will do {campaign.tasks_per_session} short tasks in a row: in each, {what}. "
        "No documents to read. A progress line shows how many tasks are left; after the last one "
        "you are sent back to Prolific automatically."
    )


def completion_url(study: Study) -> str:
    return prolific_client(environment=study.environment).completion_url(study.completion_code)
