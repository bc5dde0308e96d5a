"""Builders for marketplace tests, on top of the shared factories."""

from annotation.batching import likert_tasks_build
from annotation.models import Batch
from tests.factories import CampaignFactory, PropositionFactory, TopicFactory


def likert_batch(*, propositions: int = 10, **campaign_fields) -> Batch:
    """A built Likert batch of a fresh local campaign; no traps unless `trap_rate` is given."""
    campaign = CampaignFactory(**{"trap_rate": 0, **campaign_fields})
    topic = TopicFactory(campaign=campaign)
    PropositionFactory.create_batch(propositions, topic=topic)
    return likert_tasks_build(topic=topic, seed=1)
