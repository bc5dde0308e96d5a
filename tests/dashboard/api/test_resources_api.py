"""Topics, propositions, batches, HITs, workers, rankings and exports under a campaign."""

import csv
import io
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Batch, Proposition
from crowd.models import HIT, WorkerQuality
from ranking.models import PropositionScore, RankingSnapshot
from tests.dashboard.api.conftest import client_for
from tests.factories import (
    AssignmentFactory,
    BatchFactory,
    HITFactory,
    PropositionFactory,
    TaskFactory,
    TopicFactory,
    WorkerFactory,
    WorkerQualityFactory,
)

pytestmark = pytest.mark.django_db


def nested(name, campaign="loans", **kwargs):
    return reverse(name, kwargs={"campaign_slug": campaign, **kwargs})


@pytest.fixture
def topic(campaign):
    return TopicFactory(campaign=campaign, key="stafford", description="student loans")


@pytest.fixture
def ranked_topic(topic):
    """Three propositions: two went through comparisons, one only through the Likert round."""
    first, second, likert_only = PropositionFactory.create_batch(3, topic=topic)
    PropositionScore.objects.create(
        proposition=first, likert_mean=4.2, likert_n=5, in_comparisons=True, mu=30.0, sigma=1.0, comparisons=12, rank=1
    )
    PropositionScore.objects.create(
        proposition=second, likert_mean=4.6, likert_n=5, in_comparisons=True, mu=27.0, sigma=2.0, comparisons=9, rank=2
    )
    PropositionScore.objects.create(proposition=likert_only, likert_mean=3.0, likert_n=5, rank=3)
    trap = PropositionFactory(topic=topic, trap_kind=Proposition.TrapKind.OBVIOUS)
    PropositionScore.objects.create(proposition=trap, likert_mean=1.1, likert_n=5)
    RankingSnapshot.objects.create(topic=topic, number=1, comparisons_used=100, ranking=[[first.pk, 30.0, 1.0]])
    RankingSnapshot.objects.create(
        topic=topic,
        number=2,
        comparisons_used=200,
        spearman_previous=0.97,
        entered_top=1,
        left_top=1,
        ranking=[[first.pk, 30.0, 1.0]],
    )
    topic.ranked = [first, second, likert_only]
    return topic


# --- Permissions on every nested route ---------------------------------------------------

NESTED_ROUTES = [
    ("api-topic-list", {}),
    ("api-topic-detail", {"topic_key": "stafford"}),
    ("api-proposition-list", {"topic_key": "stafford"}),
    ("api-batch-list", {}),
    ("api-hit-list", {}),
    ("api-worker-list", {}),
    ("api-topic-ranking", {"topic_key": "stafford"}),
    ("api-topic-export", {"topic_key": "stafford"}),
]


@pytest.mark.parametrize(("name", "kwargs"), NESTED_ROUTES)
def test_anonymous_gets_401(topic, name, kwargs):
    response = APIClient().get(nested(name, **kwargs))
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize(("name", "kwargs"), NESTED_ROUTES)
def test_another_researchers_campaign_is_404_everywhere(topic, other_researcher, name, kwargs):
    response = client_for(other_researcher).get(nested(name, **kwargs))
    assert response.status_code == 404


@pytest.mark.parametrize(("name", "kwargs"), NESTED_ROUTES)
def test_superuser_reaches_every_campaign(topic, superuser, name, kwargs):
    assert client_for(superuser).get(nested(name, **kwargs)).status_code == 200


def test_an_unknown_topic_is_404(api, topic):
    assert api.get(nested("api-topic-detail", topic_key="nope")).status_code == 404
    assert api.get(nested("api-proposition-list", topic_key="nope")).status_code == 404


# --- Topics -------------------------------------------------------------------------------


def test_topics_carry_state_and_counts(api, topic):
    PropositionFactory.create_batch(3, topic=topic)
    PropositionFactory(topic=topic, trap_kind=Proposition.TrapKind.OBVIOUS)
    PropositionFactory(topic=topic, trap_kind=Proposition.TrapKind.SUBTLE)
    TopicFactory(campaign=topic.campaign, key="pell")
    body = api.get(nested("api-topic-list")).json()
    assert [row["key"] for row in body["results"]] == ["pell", "stafford"]
    stafford = api.get(nested("api-topic-detail", topic_key="stafford")).json()
    assert (stafford["propositions"], stafford["traps"], stafford["state"]) == (3, 2, "likert")
    assert stafford["description"] == "student loans"


# --- Propositions -------------------------------------------------------------------------


def test_propositions_paginate_by_50(api, topic):
    PropositionFactory.create_batch(60, topic=topic)
    first = api.get(nested("api-proposition-list", topic_key="stafford")).json()
    assert (first["count"], len(first["results"])) == (60, 50)
    second = api.get(first["next"]).json()
    assert len(second["results"]) == 10
    seen = {row["id"] for row in first["results"] + second["results"]}
    assert seen == set(topic.propositions.values_list("id", flat=True))


def test_proposition_list_queries_do_not_grow_with_rows(api, ranked_topic, django_assert_max_num_queries):
    PropositionFactory.create_batch(40, topic=ranked_topic)
    # Token, campaign, topic, page count, page rows with their scores joined.
    with django_assert_max_num_queries(5):
        response = api.get(nested("api-proposition-list", topic_key="stafford"))
    assert response.json()["count"] == 44


def test_propositions_carry_text_and_scores(api, ranked_topic):
    PropositionFactory(topic=ranked_topic, subject="Unscored", relation="has", object="no score")
    rows = {
        row["subject"]: row for row in api.get(nested("api-proposition-list", topic_key="stafford")).json()["results"]
    }
    first = ranked_topic.ranked[0]
    row = rows[first.subject]
    assert row["text"] == first.text
    assert row["score"]["mu"] == 30.0
    assert row["score"]["likert_n"] == 5
    assert rows["Unscored"]["score"] is None
    assert rows["Unscored"]["text"] == "Unscored – has – no score"


def test_propositions_filter_by_trap_kind_and_search(api, topic):
    PropositionFactory(topic=topic, subject="Pell grants", relation="need", object="no repayment")
    PropositionFactory(topic=topic, subject="Banks", relation="require", object="a cosigner")
    PropositionFactory(topic=topic, obvious_trap=True)
    url = nested("api-proposition-list", topic_key="stafford")
    traps = api.get(url, {"trap_kind": "obvious"}).json()["results"]
    assert [row["trap_kind"] for row in traps] == ["obvious"]
    found = api.get(url, {"search": "  PELL   Grants "}).json()["results"]
    assert [row["subject"] for row in found] == ["Pell grants"]
    assert api.get(url, {"search": "cosigner", "trap_kind": "none"}).json()["count"] == 1


def test_an_invalid_filter_is_a_400(api, topic):
    response = api.get(nested("api-proposition-list", topic_key="stafford"), {"trap_kind": "sneaky"})
    assert response.status_code == 400
    assert "trap_kind" in response.json()


# --- Batches and HITs ---------------------------------------------------------------------


@pytest.fixture
def published(topic):
    """A published Likert batch (2 tasks, both HITs, 3 assignments) and a created comparison batch."""
    likert = BatchFactory(topic=topic, kind=Batch.Kind.LIKERT, number=1, status=Batch.Status.PUBLISHED)
    tasks = TaskFactory.create_batch(2, batch=likert)
    open_hit = HITFactory(task=tasks[0])
    done_hit = HITFactory(task=tasks[1], status=HIT.Status.REVIEWABLE, complete=True)
    AssignmentFactory.create_batch(2, task=tasks[0], hit=open_hit)
    AssignmentFactory(task=tasks[1], hit=done_hit)
    comparison = BatchFactory(topic=topic, kind=Batch.Kind.COMPARISON, number=1)
    TaskFactory(batch=comparison)
    return {"open": open_hit, "done": done_hit}


def test_batches_carry_task_hit_and_assignment_counts(api, published):
    rows = api.get(nested("api-batch-list")).json()["results"]
    by_kind = {row["kind"]: row for row in rows}
    assert {k: (v["tasks"], v["hits"], v["assignments"], v["status"]) for k, v in by_kind.items()} == {
        "likert": (2, 2, 3, "published"),
        "comparison": (1, 0, 0, "created"),
    }
    assert by_kind["likert"]["topic"] == "stafford"


def test_the_batch_list_counts_its_pages_tasks_hits_and_answers_at_once(api, published):
    """The counts are one grouped statement each over the page's batches, not a correlated
    subquery per batch: those the planner could run as a scan of every HIT and answer of the
    database per row of the page."""
    with CaptureQueriesContext(connection) as captured:
        api.get(nested("api-batch-list"))

    statements = [query["sql"] for query in captured.captured_queries]
    (page,) = [sql for sql in statements if sql.startswith('SELECT "annotation_batch"."id"')]
    assert '"crowd_hit"' not in page and '"crowd_assignment"' not in page and '"annotation_task"' not in page
    grouped = [sql for sql in statements if "GROUP BY" in sql and "IN (" in sql]
    assert [
        table
        for table in ('FROM "annotation_task"', 'FROM "crowd_hit"', 'FROM "crowd_assignment"')
        if any(table in sql for sql in grouped)
    ] == ['FROM "annotation_task"', 'FROM "crowd_hit"', 'FROM "crowd_assignment"']


def test_batches_filter_by_kind_and_status(api, published):
    url = nested("api-batch-list")
    assert [row["kind"] for row in api.get(url, {"kind": "comparison"}).json()["results"]] == ["comparison"]
    assert [row["kind"] for row in api.get(url, {"status": "published"}).json()["results"]] == ["likert"]
    assert api.get(url, {"topic": "other"}).json()["count"] == 0
    assert api.get(url, {"kind": "bogus"}).status_code == 400


def test_hits_list_with_assignment_counts(api, published):
    rows = {row["hit_id"]: row for row in api.get(nested("api-hit-list")).json()["results"]}
    open_row = rows[published["open"].hit_id]
    assert (open_row["assignments"], open_row["topic"], open_row["kind"], open_row["batch"]) == (
        2,
        "stafford",
        "likert",
        1,
    )
    assert open_row["task"] == str(published["open"].task.uuid)


def test_hits_filter_by_status_and_complete(api, published):
    url = nested("api-hit-list")
    done = published["done"].hit_id
    assert [row["hit_id"] for row in api.get(url, {"complete": "true"}).json()["results"]] == [done]
    assert [row["hit_id"] for row in api.get(url, {"complete": "false"}).json()["results"]] == [
        published["open"].hit_id
    ]
    assert [row["hit_id"] for row in api.get(url, {"status": "Reviewable"}).json()["results"]] == [done]
    assert api.get(url).json()["count"] == 2


def test_hits_of_other_campaigns_are_not_listed(api, published, foreign_campaign):
    HITFactory(task__batch__topic__campaign=foreign_campaign)
    assert api.get(nested("api-hit-list")).json()["count"] == 2


# --- Workers ------------------------------------------------------------------------------


def test_workers_who_worked_in_the_campaign_with_quality(api, published, campaign, foreign_campaign):
    reviewed = WorkerFactory(external_id="AREVIEWED")
    AssignmentFactory.create_batch(2, task=published["open"].task, worker=reviewed, verification="verified")
    WorkerQualityFactory(
        campaign=campaign,
        worker=reviewed,
        labels=10,
        items=10,
        loo_r=0.42,
        traps_seen=2,
        traps_failed=1,
        computed_status=WorkerQuality.Status.OK,
        override_status=WorkerQuality.Status.EXCLUDED,
        override_reason="copy-paste answers",
    )
    WorkerQualityFactory(campaign=foreign_campaign, worker=reviewed, labels=99)
    elsewhere = WorkerFactory(external_id="AELSEWHERE")
    AssignmentFactory(task__batch__topic__campaign=foreign_campaign, worker=elsewhere)

    confirmed = api.get(nested("api-worker-list")).json()["results"]
    assert [(row["external_id"], row["confirmed"]) for row in confirmed] == [("AREVIEWED", True)]
    everyone = api.get(nested("api-worker-list"), {"include": "unconfirmed"}).json()["results"]
    rows = {row["external_id"]: row for row in everyone}
    assert "AELSEWHERE" not in rows
    assert len(rows) == 4  # three from the fixture's pending assignments plus the reviewed one
    assert [key for key, row in rows.items() if row["confirmed"]] == ["AREVIEWED"]
    row = rows["AREVIEWED"]
    assert row["assignments"] == 2 and row["blocked"] is False
    quality = row["quality"]
    assert (quality["labels"], quality["loo_r"], quality["traps_failed"]) == (10, 0.42, 1)
    assert (quality["status"], quality["computed_status"], quality["override_status"]) == ("excluded", "ok", "excluded")
    assert all(rows[key]["quality"] is None for key in rows if key != "AREVIEWED")


# --- Ranking and export -------------------------------------------------------------------


def test_ranking_is_ordered_with_scores_and_snapshots(api, ranked_topic):
    body = api.get(nested("api-topic-ranking", topic_key="stafford")).json()
    assert [row["id"] for row in body["results"]] == [p.pk for p in ranked_topic.ranked]
    assert [row["rank"] for row in body["results"]] == [1, 2, 3]
    top = body["results"][0]
    assert (top["mu"], top["sigma"], top["conservative"], top["comparisons"]) == (30.0, 1.0, 27.0, 12)
    assert top["text"] == ranked_topic.ranked[0].text
    assert body["results"][2]["mu"] is None and body["results"][2]["in_comparisons"] is False
    assert [s["number"] for s in body["snapshots"]] == [1, 2]
    assert body["snapshots"][1]["spearman_previous"] == 0.97
    assert "ranking" not in body["snapshots"][0]
    assert (body["topic"], body["state"]) == ("stafford", "likert")


def test_the_ranking_comes_in_pages_like_the_other_lists(api, ranked_topic):
    url = nested("api-topic-ranking", topic_key="stafford")
    first = api.get(url, {"page_size": 2}).json()
    second = api.get(first["next"]).json()

    assert (first["count"], first["previous"], [row["rank"] for row in first["results"]]) == (3, None, [1, 2])
    assert (second["next"], [row["rank"] for row in second["results"]]) == (None, [3])
    assert [row["id"] for row in first["results"] + second["results"]] == [p.pk for p in ranked_topic.ranked]
    assert second["snapshots"] == first["snapshots"]  # the refits on every page
    assert api.get(url, {"top": 2, "page": 2, "page_size": 1}).json()["results"][0]["rank"] == 2
    assert api.get(url, {"top": 2, "page_size": 1}).json()["count"] == 2
    assert api.get(url, {"page": 3, "page_size": 2}).status_code == 404  # as every list: no such page


def test_ranking_top_n(api, ranked_topic):
    body = api.get(nested("api-topic-ranking", topic_key="stafford"), {"top": 2}).json()
    assert len(body["results"]) == 2
    assert api.get(nested("api-topic-ranking", topic_key="stafford"), {"top": 0}).status_code == 400


def test_export_csv_is_a_download_of_the_ranking(api, ranked_topic):
    response = api.get(nested("api-topic-export", topic_key="stafford"), {"format": "csv", "top": 2})
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="loans-stafford-ranking.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [int(row["id"]) for row in rows] == [p.pk for p in ranked_topic.ranked[:2]]
    assert rows[0]["conservative"] == "27.0"


def test_export_tsv_and_jsonl(api, ranked_topic):
    url = nested("api-topic-export", topic_key="stafford")
    tsv = api.get(url, {"format": "tsv"})
    assert tsv["Content-Type"].startswith("text/tab-separated-values")
    assert tsv.content.decode().splitlines()[0].split("\t")[:3] == ["topic", "rank", "id"]
    jsonl = api.get(url, {"format": "jsonl"})
    rows = [json.loads(line) for line in jsonl.content.decode().splitlines()]
    assert [row["id"] for row in rows] == [p.pk for p in ranked_topic.ranked]


def test_export_answers_whatever_the_accept_header(api, ranked_topic):
    url = nested("api-topic-export", topic_key="stafford")
    response = api.get(url, {"format": "tsv"}, HTTP_ACCEPT="text/tab-separated-values")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/tab-separated-values")
    assert api.get(url, {"format": "jsonl"}, HTTP_ACCEPT="text/csv").status_code == 200


def test_export_defaults_to_csv_and_refuses_unknown_formats_in_json(api, ranked_topic):
    url = nested("api-topic-export", topic_key="stafford")
    assert api.get(url)["Content-Type"] == "text/csv; charset=utf-8"
    response = api.get(url, {"format": "xlsx"})
    assert response.status_code == 400
    assert "format" in response.json()
