"""maps.report and the maps page: two annotators' agreement (maps.agreement), the maps'
statistics (maps.statistics), evaluation map against map (maps.evaluation), the decisions CSV."""

import csv
import io

import pytest
from django.urls import reverse

from annotation.models import CampaignMember
from maps import workbench
from maps.decisions import map_decisions
from maps.models import ConceptMap
from maps.report import topic_maps_report
from tests.maps.builders import WORDS, chain_topic, map_built

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair(campaign, owner, django_user_model):
    topic = chain_topic(campaign=campaign, length=10)
    second = django_user_model.objects.create_user("second")
    CampaignMember.objects.create(campaign=campaign, user=second, role=CampaignMember.Role.EDIT)
    a = map_built(topic=topic, annotator=owner, relations=6)
    b = map_built(topic=topic, annotator=second, relations=4)
    keep, merge = b.concepts.get(label=WORDS[0]), b.concepts.get(label=WORDS[4])
    b = workbench.concepts_merge(
        map_id=b.pk, user=second, version=b.version, keep_id=keep.pk, merge_id=merge.pk, label=WORDS[4]
    )
    return topic, a, b


def test_the_decisions_are_the_papers_three_sets(pair):
    _, a, b = pair
    decisions = map_decisions(a, b)
    assert len(decisions.selection) == 10
    assert sum(x for _, x, _ in decisions.selection) == 6 and sum(y for _, _, y in decisions.selection) == 4
    labels = 7  # apple..grape in A; B's five labels are among them
    assert len(decisions.labels) == 5 and len(decisions.merges) == labels * (labels - 1) // 2
    assert [item for item, x, y in decisions.merges if x != y] == [f"{WORDS[0]} | {WORDS[4]}"]
    assert ("apple", True, False) in decisions.labels  # B kept "elder" for the merged concept


def test_the_report_has_agreement_statistics_and_evaluation(pair):
    topic, a, b = pair
    report = topic_maps_report(topic=topic, maps=[a, b])
    selection, merges, kept = (row["figures"] for row in report.agreement)
    assert selection.n == 10 and selection.percent == pytest.approx(0.8) and selection.f1_positive == pytest.approx(0.8)
    assert merges.n == 21 and merges.percent == pytest.approx(20 / 21) and merges.f1_positive == 0
    assert kept.n == 5 and kept.percent == pytest.approx(4 / 5)  # the labels both maps hold
    assert set(report.clustering) == {"singletons", "bucket"} and "baseline" in report.clustering["bucket"]
    assert [row["figures"].concepts for row in report.statistics] == [7, 4]
    assert report.collection["maps"] == 2 and report.collection["relations"]["mean"] == 5
    (evaluation,) = report.evaluation
    assert evaluation["map"] == b and report.reference == a
    # B's relations: three of A's as they are, one now from "elder" (merged) to "banana": 3 of 4 match.
    assert (evaluation["strict"].p, evaluation["strict"].r) == (pytest.approx(0.75), pytest.approx(0.5))


def test_the_page_shows_them_and_the_csv_recomputes_them(pair, owner_client):
    topic = pair[0]
    page = owner_client.get(reverse("maps:topic-maps", args=[topic.campaign.slug, topic.key])).content.decode()
    for part in ('id="agreement"', 'id="clustering"', 'id="statistics"', 'id="evaluation"', "84 % (κ 0.66)"):
        assert part in page
    rows = list(
        csv.DictReader(
            io.StringIO(
                owner_client.get(reverse("maps:decisions", args=[topic.campaign.slug, topic.key])).content.decode()
            )
        )
    )
    selection = [row for row in rows if row["decision"] == "selection"]
    assert len(selection) == 10 and sum(row["a"] == row["b"] for row in selection) == 8
    assert {row["annotator_a"] for row in rows} == {"researcher"}


def test_decisions_need_two_maps(campaign, owner, owner_client):
    topic = chain_topic(campaign=campaign, length=3)
    map_built(topic=topic, annotator=owner, relations=1)
    response = owner_client.get(reverse("maps:decisions", args=[topic.campaign.slug, topic.key]), follow=True)
    assert "two annotators" in response.content.decode()
    assert ConceptMap.objects.count() == 1
