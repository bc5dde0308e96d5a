"""A Prolific study per round: its shape (places, session reward, time), opening it, and
growing it with each batch of the round.

Prolific's Studies API rate-limits "researchers launching too many studies with low numbers
of participants" (docs.prolific.com, api-reference/studies), and a comparison batch needs
about five places. So a topic has one study per round (`study_open`, called by the adapter's
`batch_open`): its Likert round, and its whole comparison stage (every comparison batch the
loop publishes). The round's first batch creates and publishes the study; each later batch
adds its places to it (`PATCH studies/{id}/` with the new `total_available_places`: through
the API the total is sent, not the places added, and more places make a completed study
active again — researcher-help, "Increase places"). The places a batch adds are its own
(`study_places`), so its publish quote is still the most it commits (crowd.work.ledger).

A study's places are sessions of `tasks_per_session` tasks, handed out from any of its open
batches (crowd.sessions.holds); the study URL brings the participant to `/s/prolific/` with
Prolific's participant, study and session ids, and the last task redirects to Prolific's
completion URL with the study's completion code. What happens to the study afterwards
(submissions approved or rejected, places topped up, the study stopped when its round ends)
is crowd/channels/prolific/study_sync.py, a service that uses the session bookkeeping.
"""

import math
import secrets
from decimal import ROUND_HALF_UP

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.models import Batch, Campaign, Topic
from crowd.marketplaces.prolific.client import ProlificClient, prolific_client
from crowd.marketplaces.prolific.filters import campaign_prolific_filters
from crowd.marketplaces.prolific.wire import StudySpec
from crowd.marketplaces.prolific.wire import study_url as study_url_with
from crowd.models import Study, StudyBatch

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
    """Put the batch's places on offer in its round's study, once: the round's open study gets
    the batch's places added (the study is created and published by the round's first batch).
    Our rows first (the study's internal name is the idempotency key at Prolific, its
    completion code is fixed; the link fixes the total the batch raises the study to), then
    the remote calls. A re-run after a failure picks up where the last one stopped."""
    campaign = batch.topic.campaign
    with transaction.atomic():
        Topic.objects.select_for_update().filter(pk=batch.topic_id).first()  # one study per round
        link = StudyBatch.objects.select_related("study").filter(batch=batch).first()
        if link is None:
            link = _batch_join(batch=batch, environment=environment)
    study = Study.objects.get(pk=link.study_id)
    client = prolific_client(environment=environment)
    if not study.study_id:
        minutes = session_minutes(campaign)
        prolific_settings = campaign.channel_settings.get("prolific", {})
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
        now = timezone.now()
        Study.objects.filter(pk=study.pk).update(status=remote.status, published_at=now)
        StudyBatch.objects.filter(study=study, places_to__lte=study.places, opened_at__isnull=True).update(
            opened_at=now
        )
        study.refresh_from_db()
        link.refresh_from_db()
    if link.opened_at is None:
        _places_add(client=client, link=link)
        study.refresh_from_db()
    return study


def _batch_join(*, batch: Batch, environment: str) -> StudyBatch:
    """The batch's link to its round's open study (a new study for the round's first batch),
    with the places it adds and the study's total after them. The caller holds the topic's lock."""
    campaign = batch.topic.campaign
    places = study_places(batch, campaign.tasks_per_session)
    study = Study.objects.select_for_update().open_for(topic=batch.topic, kind=batch.kind).first()
    if study is None:
        study = Study.objects.create(
            topic=batch.topic,
            kind=batch.kind,
            environment=environment,
            internal_name=f"salience-{campaign.slug}-{batch.kind}-topic-{batch.topic_id}-batch-{batch.pk}",
            places=places,
            reward_cents=session_reward_cents(campaign, batch.kind),
            completion_code=secrets.token_hex(4).upper(),
        )
        return StudyBatch.objects.create(study=study, batch=batch, places=places, places_to=places)
    total = study.places + places
    if not study.study_id:  # not created at Prolific yet: it is created with every joined batch's places
        Study.objects.filter(pk=study.pk).update(places=total)
    return StudyBatch.objects.create(study=study, batch=batch, places=places, places_to=total)


def _places_add(*, client: ProlificClient, link: StudyBatch) -> None:
    """Raise the open study to the link's total (what the batch's publish committed), under the
    study's lock, which raises of places (crowd.channels.prolific.study_sync) take too. A re-run
    sends the same total (harmless); if a raise went past that total before the batch's places
    were added, they are added on top of it."""
    with transaction.atomic():
        study = Study.objects.select_for_update().get(pk=link.study_id)
        total = link.places_to
        if study.places >= total:
            total = study.places + link.places
            StudyBatch.objects.filter(pk=link.pk).update(places_to=total)
        remote = client.study_places_increase(study.study_id, total)
        Study.objects.filter(pk=study.pk).update(places=total, status=remote.status)
        StudyBatch.objects.filter(pk=link.pk).update(opened_at=timezone.now())


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
