"""Storing a topic's ranks touches the topic's rows only: PostgreSQL's plan for the one UPDATE
(`pipeline._ranks_store`) reaches the score rows through an index, never by a scan of the
whole score table, so a refit costs the same whatever the number of topics (issue 26)."""

import json
import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Proposition
from ranking import pipeline
from ranking.models import PropositionScore
from tests.factories import CampaignFactory, TopicFactory

TOPICS, PROPOSITIONS = 30, 200  # the paper's 30 topics, a few hundred propositions each
SCORE_TABLE = PropositionScore._meta.db_table


def campaign_scored(rng: random.Random):
    """TOPICS topics of PROPOSITIONS scored propositions each, a fifth in the comparisons;
    the tables analysed, as autovacuum would have them."""
    campaign = CampaignFactory()
    topics = [TopicFactory(campaign=campaign) for _ in range(TOPICS)]
    propositions = Proposition.objects.bulk_create(
        Proposition(topic=topic, subject=f"s{index}", normalized=f"s{index}")
        for topic in topics
        for index in range(PROPOSITIONS)
    )
    PropositionScore.objects.bulk_create(
        PropositionScore(
            proposition=proposition,
            likert_mean=rng.uniform(1, 5),
            likert_n=5,
            in_comparisons=rng.random() < 0.2,
            mu=rng.gauss(25, 3),
            sigma=rng.uniform(0.5, 3),
        )
        for proposition in propositions
    )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Proposition._meta.db_table}")
        cursor.execute(f"ANALYZE {SCORE_TABLE}")
    return topics


def plan_nodes(node: dict) -> list[dict]:
    return [node, *(child for sub in node.get("Plans", []) for child in plan_nodes(sub))]


@pytest.mark.django_db(transaction=True)
def test_storing_a_topics_ranks_reaches_its_score_rows_by_an_index():
    if connection.vendor != "postgresql":
        pytest.skip("the plan is PostgreSQL's: run the suite with `make test`")
    topics = campaign_scored(random.Random(26))
    topic = topics[len(topics) // 2]

    with CaptureQueriesContext(connection) as captured:
        pipeline._ranks_store(topic)
    (update,) = [query["sql"] for query in captured.captured_queries if query["sql"].startswith("UPDATE")]
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {update}")
        (plan,) = cursor.fetchone()[0]
    nodes = plan_nodes(plan["Plan"])

    on_scores = [node for node in nodes if node.get("Relation Name") == SCORE_TABLE and "Scan" in node["Node Type"]]
    assert on_scores, "the plan reads the score table"
    # the order's join and the update's target, each by the proposition index
    assert [node["Node Type"] for node in on_scores] == ["Index Scan", "Index Scan"], json.dumps(plan, indent=1)
    assert PropositionScore.objects.filter(proposition__topic=topic, rank__isnull=False).count() == PROPOSITIONS
    assert not PropositionScore.objects.exclude(proposition__topic=topic).filter(rank__isnull=False).exists()
