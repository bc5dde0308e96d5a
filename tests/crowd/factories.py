"""Builders for marketplace tests, on top of the shared factories."""

from decimal import Decimal

from annotation.batching import likert_tasks_build
from annotation.models import Batch, Campaign
from tests.factories import CampaignFactory, PropositionFactory, TopicFactory


def likert_batch(*, propositions: int = 10, **campaign_fields) -> Batch:
    """A built Likert batch of a fresh local campaign; no traps unless `trap_rate` is given."""
    campaign = CampaignFactory(**{"trap_rate": 0, **campaign_fields})
    topic = TopicFactory(campaign=campaign)
    PropositionFactory.create_batch(propositions, topic=topic)
    return likert_tasks_build(topic=topic, seed=1)


def session_batch(
    channel: str, *, propositions: int, tasks_per_session: int, assignments: int, **campaign_fields
) -> Batch:
    """A built Likert batch of a fresh campaign on a channel that serves sessions (links,
    Prolific): `propositions / 5` tasks, each wanting `assignments` answers."""
    batch = likert_batch(
        propositions=propositions,
        channel=channel,
        tasks_per_session=tasks_per_session,
        assignments_per_hit=assignments,
        **campaign_fields,
    )
    batch.tasks.update(assignments_needed=assignments)
    return batch


def prolific_batch(*, propositions: int = 15, tasks_per_session: int = 2, assignments: int = 2, **campaign_fields):
    """A Likert batch of a Prolific campaign paying 0.15 a task (2 tasks in ~2 minutes: 9.00 an
    hour); by default 3 tasks × 2 answers, 2 a session: 3 places."""
    return session_batch(
        Campaign.Channel.PROLIFIC,
        propositions=propositions,
        tasks_per_session=tasks_per_session,
        assignments=assignments,
        **{"likert_reward": Decimal("0.15"), **campaign_fields},
    )
