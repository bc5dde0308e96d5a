"""Why a refit used fewer comparisons than the campaign page counts (ranking.refit_votes): the
page's figure, the refit's and the difference, checked against the votes the pipeline fits
(`ranking.pipeline._votes`) and the votes the campaign page counts (crowd.work.progress)."""

import re
from html import unescape

import pytest
from django.urls import reverse

from annotation.models import Batch, Topic
from crowd.models import Assignment, Comparison, WorkerQuality
from crowd.qc.worker_quality import excluded_worker_ids
from crowd.work.progress import campaign_progress
from ranking.models import RankingSnapshot
from ranking.pipeline import _votes
from ranking.refit_votes import refit_votes
from tests.factories import (
    AssignmentFactory,
    BatchFactory,
    CampaignFactory,
    PropositionFactory,
    TopicFactory,
    WorkerFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def topic(owner):
    topic = TopicFactory(
        campaign=CampaignFactory(owner=owner, slug="votes"), key="loans", state=Topic.State.COMPARISONS
    )
    PropositionFactory.create_batch(4, topic=topic)
    return topic


def ordering(topic, worker, **fields) -> None:
    """An ordering of three propositions: three votes."""
    fields.setdefault("verification", Assignment.Verification.VERIFIED)
    assignment = AssignmentFactory(
        task__batch=BatchFactory(topic=topic, kind=Batch.Kind.COMPARISON), worker=worker, **fields
    )
    a, b, c = topic.propositions.order_by("pk")[:3]
    Comparison.objects.bulk_create(
        Comparison(assignment=assignment, worker=worker, winner=winner, loser=loser)
        for winner, loser in ((a, b), (a, c), (b, c))
    )


@pytest.fixture
def crowd(topic):
    """Two orderings of an included worker, one of an excluded one, one pending, one rejected."""
    included, excluded = WorkerFactory(external_id="AIN"), WorkerFactory(external_id="AOUT")
    WorkerQuality.objects.create(campaign=topic.campaign, worker=included)
    WorkerQuality.objects.create(campaign=topic.campaign, worker=excluded, computed_status="excluded")
    ordering(topic, included)
    ordering(topic, included)
    ordering(topic, excluded)
    ordering(topic, WorkerFactory(), verification=Assignment.Verification.PENDING)
    ordering(topic, WorkerFactory(), status=Assignment.Status.REJECTED)
    return included, excluded


def refit(topic) -> RankingSnapshot:
    """A snapshot of what a refit now would use: the pipeline's own votes."""
    used = len(_votes(topic, excluded_worker_ids(topic.campaign_id)))
    number = topic.snapshots.count() + 1
    return RankingSnapshot.objects.create(topic=topic, number=number, comparisons_used=used, ranking=[])


def sentence(client, topic) -> str:
    page = client.get(reverse("ranking:topic-ranking", args=[topic.campaign.slug, topic.key])).content.decode()
    found = re.search(r'<p class="muted" id="refit-votes">(.*?)</p>', page, re.S).group(1)
    return " ".join(unescape(found).split())


def test_the_difference_is_the_excluded_workers_votes(client, owner, topic, crowd):
    snapshot = refit(topic)

    votes = refit_votes(topic=topic, snapshot=snapshot)

    shown = campaign_progress(topic.campaign)[0].comparison_votes.done
    assert (votes.counted, votes.excluded, votes.excluded_workers, votes.used) == (shown, 3, 1, 6) == (9, 3, 1, 6)
    assert votes.since == 0
    client.force_login(owner)
    assert sentence(client, topic) == (
        "Of the topic's 9 counted comparison votes (the campaign page's “Comparison votes”), 3 are votes of 1 worker"
        " excluded by quality control: kept in the raw labels, marked excluded, and used by no refit."
        " Refit #1 used every counted vote of the included workers."
        " Answers awaiting their channel's confirmation are in neither figure, and no vote pairs a proposition with"
        " itself."
    )


def test_votes_counted_after_the_refit_wait_for_the_next_one(client, owner, topic, crowd):
    included, _excluded = crowd
    refit(topic)
    ordering(topic, included)
    client.force_login(owner)

    assert (
        "3 votes of included workers were counted after refit #1 ran (or their workers were included since):"
        " the next refit uses them; refits run when a comparison batch is complete." in sentence(client, topic)
    )

    Topic.objects.filter(pk=topic.pk).update(state=Topic.State.DONE)
    assert "the topic is done, so no refit uses them." in sentence(client, topic)


def test_votes_of_a_worker_excluded_after_the_refit_are_named(client, owner, topic, crowd):
    included, _excluded = crowd
    refit(topic)
    WorkerQuality.objects.filter(worker=included).update(override_status="excluded", override_reason="spam")
    client.force_login(owner)

    text = sentence(client, topic)

    assert "Of the topic's 9 counted comparison votes" in text and "9 are votes of 2 workers excluded" in text
    assert "Refit #1 used 6 votes of workers excluded since: the next refit leaves them out." in text
    assert len(_votes(topic, excluded_worker_ids(topic.campaign_id))) == 0  # as the pipeline would fit now


def test_without_a_refit_there_is_nothing_to_explain(client, owner, topic, crowd):
    assert refit_votes(topic=topic, snapshot=None) is None
    client.force_login(owner)
    page = client.get(reverse("ranking:topic-ranking", args=[topic.campaign.slug, topic.key])).content.decode()
    assert 'id="refit-votes"' not in page and "No TrueSkill refit yet" in page
