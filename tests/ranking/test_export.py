"""The ranking's one order (ranking.export.ranking_order), computed by the database; the raw
labels export."""

import csv
import io
import re
from uuid import UUID

import pytest
from django.core.cache import cache

from annotation.models import Batch, Proposition
from crowd.hit_page.content import ProcessCache
from crowd.models import Assignment
from ranking.export import LABEL_COLUMNS, ranked_propositions, ranking_rows, raw_label_rows, write_rows
from ranking.models import PropositionScore
from tests.factories import BatchFactory, PropositionFactory, TaskFactory, TopicFactory

pytestmark = pytest.mark.django_db


def test_compared_by_mu_then_sigma_then_the_rest_by_likert_mean_unrated_last_ties_by_id():
    topic = TopicFactory()
    p = PropositionFactory.create_batch(10, topic=topic)
    trap = PropositionFactory(topic=topic, trap_kind=Proposition.TrapKind.OBVIOUS)
    scores = {
        p[0]: {"likert_mean": 3.0},
        p[1]: {"in_comparisons": True, "mu": 20.0, "sigma": 2.0},
        p[2]: {"in_comparisons": True, "mu": 20.0, "sigma": 1.0},
        p[3]: {"in_comparisons": True, "mu": 25.0, "sigma": None},  # σ missing reads as 0
        p[4]: {"in_comparisons": True, "mu": 25.0, "sigma": 0.5},
        p[5]: {"likert_mean": 4.5, "mu": 99.0},  # a μ outside the comparisons does not count
        p[6]: {"in_comparisons": True, "likert_mean": 5.0},  # compared but not refit yet: by its mean
        p[7]: {"likert_mean": 3.0},  # tied with p[0]: by id
        trap: {"likert_mean": 5.0, "in_comparisons": True, "mu": 50.0},
    }
    PropositionScore.objects.bulk_create(PropositionScore(proposition=k, **v) for k, v in scores.items())
    # p[8] and p[9] have no score at all: last, by id.

    expected = [p[3], p[4], p[2], p[1], p[6], p[5], p[0], p[7], p[8], p[9]]

    assert list(ranked_propositions(topic=topic)) == expected
    rows = ranking_rows(topic=topic)
    assert [row["id"] for row in rows] == [x.pk for x in expected]
    assert [row["rank"] for row in rows] == list(range(1, 11))
    assert [row["id"] for row in ranking_rows(topic=topic, top=3)] == [x.pk for x in expected[:3]]
    assert (
        rows[1]["conservative"] == 23.5
        and rows[0]["conservative"] is None
        and rows[4]["mu"] is None
        and rows[8]["likert_n"] == 0
    )


def test_the_labels_export_gives_each_vote_the_order_its_worker_was_shown(client):
    cache.clear()
    ProcessCache.clear_all()  # content cached under this fixed uuid by another test
    topic = TopicFactory()
    task = TaskFactory(
        batch=BatchFactory(topic=topic, kind=Batch.Kind.COMPARISON),
        propositions=PropositionFactory.create_batch(5, topic=topic),
        uuid=UUID("5a1e0ce0-0000-4000-8000-0000000000e1"),
    )
    shown = {}
    for worker in ("WORKER1", "WORKER2"):
        page = client.get(f"/hit/{task.uuid}/?assignmentId=A-{worker}&hitId=HIT1&workerId={worker}")
        fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page.content.decode()))
        shown[worker] = [int(pid) for pid in re.findall(r'data-id="(\d+)"', page.content.decode())]
        assert client.post(f"/hit/{task.uuid}/submit/", {**fields, "order": fields["order"]}).status_code == 200
    Assignment.objects.update(verification=Assignment.Verification.VERIFIED)
    assert shown["WORKER1"] != shown["WORKER2"]

    rows = [row for row in raw_label_rows(topic=topic) if row["kind"] == "comparison"]

    assert len(rows) == 20 and all(row["untouched"] for row in rows)
    for row in rows:
        assert row["shown_order"] == " ".join(map(str, shown[row["worker"]]))
    stream = io.StringIO()
    write_rows(rows, "csv", stream, columns=LABEL_COLUMNS)
    exported = list(csv.DictReader(io.StringIO(stream.getvalue())))
    assert [row["shown_order"] for row in exported] == [row["shown_order"] for row in rows]
