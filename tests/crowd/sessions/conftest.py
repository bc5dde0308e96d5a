"""Builders for session tests: a campaign on participant links with a published batch."""

import pytest
from django.core.cache import cache

from annotation.models import Campaign
from crowd.channels.links import links
from crowd.work.publishing import batch_publish
from tests.crowd.factories import session_batch


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()  # HIT content is cached per task uuid


def links_batch(*, propositions: int = 25, tasks_per_session: int = 3, assignments: int = 2, **fields):
    """A published Likert batch of a links campaign: `propositions / 5` tasks."""
    batch = session_batch(
        Campaign.Channel.LINKS,
        propositions=propositions,
        tasks_per_session=tasks_per_session,
        assignments=assignments,
        **fields,
    )
    batch_publish(batch_id=batch.pk)
    batch.refresh_from_db()
    return batch


@pytest.fixture
def open_link(db):
    batch = links_batch()
    return links.link_create(campaign=batch.topic.campaign, kind="open", label="lab volunteers")
