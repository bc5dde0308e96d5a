"""The worker-quality pages (dashboard.quality_views): access, the report, overrides and the CSV."""

import csv
import io
import re

import pytest
from django.contrib.messages import get_messages
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Batch, Campaign
from crowd.hit_page.answers import LIKERT_SCALE
from crowd.hit_page.params import PREVIEW_ASSIGNMENT_ID
from crowd.models import Assignment, QualityStatistics, WorkerDecision, WorkerQuality
from crowd.qc import report as quality_report
from crowd.qc import statistics
from crowd.qc.policy import MAX_UNTOUCHED_SHARE, TRAP_FAIL_AT
from crowd.qc.worker_quality import campaign_quality_refresh
from tests.crowd.quality_data import TRAPS, TRUTH, LabelBuilder, small_crowd_labels
from tests.factories import (
    BatchFactory,
    CampaignFactory,
    PropositionFactory,
    TaskFactory,
    TopicFactory,
    WorkerFactory,
    WorkerQualityFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def crowd(owner):
    campaign = CampaignFactory(owner=owner, qc_max_label_share=0.3, name="Student loans, run 1")
    builder = LabelBuilder(TopicFactory(campaign=campaign, key="loans"))
    builder.likert(small_crowd_labels(), TRAPS)
    campaign_quality_refresh(campaign_id=campaign.pk)
    return builder


def urls(campaign, worker_id=1) -> dict[str, str]:
    return {
        "page": reverse("crowd:campaign-quality", args=[campaign.slug]),
        "topic": reverse("crowd:topic-quality", args=[campaign.slug, "loans"]),
        "csv": reverse("crowd:campaign-quality-csv", args=[campaign.slug]),
        "override": reverse("crowd:worker-override", args=[campaign.slug, worker_id]),
    }


def test_pages_need_a_login(client, crowd):
    for name, url in urls(crowd.topic.campaign).items():
        response = client.post(url) if name == "override" else client.get(url)
        assert response.status_code == 302 and response.url.startswith("/accounts/login/"), name


def test_another_researchers_campaign_is_not_found(client, crowd, django_user_model):
    client.force_login(django_user_model.objects.create_user("someone-else"))
    careless = crowd.workers["careless"]
    for name, url in urls(crowd.topic.campaign, careless.pk).items():
        response = client.post(url, {"status": "ok", "reason": "mine now"}) if name == "override" else client.get(url)
        assert response.status_code == 404, name
    assert WorkerQuality.objects.get(worker=careless).override_status == ""


def test_campaign_page_shows_the_workers_statistics_and_charts(owner_client, crowd, django_assert_max_num_queries):
    with django_assert_max_num_queries(20):
        response = owner_client.get(urls(crowd.topic.campaign)["page"])
    page = response.content.decode()
    assert response.status_code == 200
    for worker in ("g1", "g5", "rev", "careless"):
        assert f'<th scope="row">{worker}</th>' in page
    # Two charts, each drawn for a wide and a narrow figure (crowd.qc.svg.chart_sizes).
    assert page.count('<div class="chart-sizes">') == 2
    assert page.count('class="chart chart-wide"') == page.count('class="chart chart-narrow"') == 2
    assert 'aria-label="Leave-one-out correlation per worker.' in page
    assert "excluded up to -1" in page  # rev, r = −1, is the one excluded for correlation
    assert 'aria-label="Bootstrap stability of the ranking by Likert mean.' in page
    for figure in ("1.08", "1.14", "0.80–0.81", "0.73–0.78"):
        assert figure in page
    assert "84 counted Likert labels" in page and "24 from excluded workers" in page
    assert page.count('name="csrfmiddlewaretoken"') == 7 + 1  # an override form per worker, log out
    assert "Computed by quality control at" in page and "Not computed yet" not in page
    assert "failed 2 of 2 traps (score ≥ 3)" in page  # why careless is excluded
    assert "obvious&nbsp;1/1<br>subtle&nbsp;1/1" in page  # careless's traps by kind


def test_the_page_states_the_rules_with_the_campaigns_settings(owner_client, crowd):
    campaign = crowd.topic.campaign
    campaign.qc_min_orderings = 4
    campaign.save(update_fields=["qc_min_orderings"])
    page = " ".join(owner_client.get(urls(campaign)["page"]).content.decode().split())
    assert "at least 2 trap statements" in page
    assert "on at least 10 statements shared with others" in page
    assert "a worker with at least 4 orderings, more than 50 % of them untouched, is excluded" in page
    assert "on at least 4 changed orderings" in page
    assert "below 33 % of the campaign's median for that kind" in page
    assert "is flagged for review, never excluded for speed alone" in page


def test_a_campaign_quality_control_has_not_run_for_says_so(owner_client, owner):
    campaign = CampaignFactory(owner=owner)
    TopicFactory(campaign=campaign, key="loans")
    for url in (urls(campaign)["page"], urls(campaign)["topic"]):
        response = owner_client.get(url)
        assert response.status_code == 200
        assert "Not computed yet" in response.content.decode()


def campaign_with_topics(owner, topics: int) -> Campaign:
    """A campaign of `topics` topics, each with the small crowd under its own worker ids
    (so workers grow with topics) and an ordering, its QC run."""
    campaign = CampaignFactory(owner=owner, qc_max_label_share=0.3, slug=f"run-{topics}")
    for number in range(topics):
        builder = LabelBuilder(TopicFactory(campaign=campaign, key="loans" if number == 0 else f"topic-{number}"))
        name = f"{topics}-{number}"
        builder.likert([(f"{worker}-{name}", item, score) for worker, item, score in small_crowd_labels()], TRAPS)
        builder.ordering(f"g1-{name}", ["i0", "i1", "i2", "i3", "i4"])
    Assignment.objects.filter(task__batch__topic__campaign=campaign).update(time_on_task_ms=30_000)
    campaign_quality_refresh(campaign_id=campaign.pk)
    return campaign


def test_report_pages_take_the_same_queries_at_any_number_of_topics_and_workers(owner_client, owner):
    counts = {}
    for topics in (1, 4):
        campaign = campaign_with_topics(owner, topics)
        assert WorkerQuality.objects.filter(campaign=campaign).count() == 7 * topics
        for name in ("page", "topic", "csv"):
            with CaptureQueriesContext(connection) as queries:
                response = owner_client.get(urls(campaign)[name])
            assert response.status_code == 200
            counts[topics, name] = len(queries)
    for name in ("page", "topic", "csv"):
        assert counts[1, name] == counts[4, name], name
    assert counts[1, "page"] <= 12


def test_the_worker_table_is_paginated_searched_and_filtered(owner_client, owner):
    campaign = CampaignFactory(owner=owner)
    for k in range(60):
        WorkerQualityFactory(
            campaign=campaign,
            worker=WorkerFactory(external_id=f"W{k:03d}"),
            loo_r=k / 100,
            speeder=k % 20 == 0,
            computed_status=WorkerQuality.Status.EXCLUDED if k < 3 else WorkerQuality.Status.OK,
        )
    page = urls(campaign)["page"]

    def rows(response) -> list[str]:
        return re.findall(r'<th scope="row">(W\d+)</th>', response.content.decode())

    first = owner_client.get(page)
    assert rows(first) == [f"W{k:03d}" for k in range(50)]  # lowest r first
    assert "Page 1 of 2" in first.content.decode() and "60 workers" in first.content.decode()
    second = owner_client.get(page, {"page": 2})
    assert rows(second) == [f"W{k:03d}" for k in range(50, 60)]
    assert rows(owner_client.get(page, {"page": 99})) == rows(second)  # past the end: the last page
    assert rows(owner_client.get(page, {"worker": "w05"})) == [f"W{k:03d}" for k in range(50, 60)]
    assert rows(owner_client.get(page, {"status": "speeder"})) == ["W000", "W020", "W040"]
    assert rows(owner_client.get(page, {"status": "excluded"})) == ["W000", "W001", "W002"]
    assert len(rows(owner_client.get(page, {"status": "included", "page": 2}))) == 7
    filtered = owner_client.get(page, {"status": "speeder", "worker": "W02"}).content.decode()
    assert rows(owner_client.get(page, {"status": "speeder", "worker": "W02"})) == ["W020"]
    assert "1 worker matches, lowest" in filtered
    # Unknown filters show everyone; links to other pages keep the filter.
    assert len(rows(owner_client.get(page, {"status": "nonsense"}))) == 50
    assert "?status=included&amp;page=2#workers" in owner_client.get(page, {"status": "included"}).content.decode()


def test_topic_page_lists_the_topics_workers(owner_client, crowd):
    response = owner_client.get(urls(crowd.topic.campaign)["topic"])
    assert response.status_code == 200
    assert "topic loans" in response.content.decode()
    missing = reverse("crowd:topic-quality", args=[crowd.topic.campaign.slug, "bees"])
    assert owner_client.get(missing).status_code == 404


def test_override_post_records_the_decision_and_redirects_back(owner_client, owner, crowd):
    campaign, careless = crowd.topic.campaign, crowd.workers["careless"]
    back = urls(campaign)["topic"]
    response = owner_client.post(
        urls(campaign, careless.pk)["override"], {"status": "ok", "reason": "Traps were misworded.", "next": back}
    )
    assert (response.status_code, response.url) == (302, back)
    assert [str(m) for m in get_messages(response.wsgi_request)] == [f"Worker {careless}: Included by override."]
    row = WorkerQuality.objects.get(campaign=campaign, worker=careless)
    assert (row.override_status, row.override_reason) == ("ok", "Traps were misworded.")
    decision = WorkerDecision.objects.get(decided_by=owner)
    assert (decision.action, decision.reason) == ("override_included", "Traps were misworded.")


def test_override_without_a_reason_changes_nothing(owner_client, owner, crowd):
    campaign, careless = crowd.topic.campaign, crowd.workers["careless"]
    response = owner_client.post(
        urls(campaign, careless.pk)["override"], {"status": "ok", "reason": " ", "next": "https://elsewhere.example/"}
    )
    assert (response.status_code, response.url) == (302, urls(campaign)["page"])
    assert "give a reason" in str(next(iter(get_messages(response.wsgi_request))))
    assert WorkerQuality.objects.get(worker=careless).override_status == ""
    assert not WorkerDecision.objects.filter(decided_by=owner).exists()


def test_override_needs_the_csrf_token(owner, crowd):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    careless = crowd.workers["careless"]
    response = client.post(urls(crowd.topic.campaign, careless.pk)["override"], {"status": "ok", "reason": "r"})
    assert response.status_code == 403


def test_csv_has_a_header_and_a_row_per_worker(owner_client, crowd):
    Assignment.objects.update(time_on_task_ms=30_000)
    Assignment.objects.filter(worker=crowd.workers["g5"]).update(time_on_task_ms=3_000)
    crowd.ordering("g1", ["i0", "i1", "i2"], untouched=True)
    campaign_quality_refresh(campaign_id=crowd.topic.campaign_id)
    response = owner_client.get(urls(crowd.topic.campaign)["csv"])
    assert response["Content-Type"].startswith("text/csv")
    rows = {row["worker"]: row for row in csv.DictReader(io.StringIO(response.content.decode()))}
    assert sorted(rows) == ["careless", "g1", "g2", "g3", "g4", "g5", "rev"]
    rev, careless, g1, g5 = rows["rev"], rows["careless"], rows["g1"], rows["g5"]
    assert (rev["labels"], rev["loo_r"], rev["traps_seen"], rev["status"]) == ("12", "-1.0", "2", "excluded")
    assert rev["computed_reason"].startswith("leave-one-out r = -1.00 on 10 items")
    assert [careless[f"{kind}_traps_{what}"] for kind in ("obvious", "subtle") for what in ("seen", "failed")] == [
        "1",
        "1",
        "1",
        "1",
    ]
    assert (g1["orderings"], g1["untouched_orderings"], g1["votes"], g1["comparison_seconds"]) == ("1", "1", "3", "")
    assert (g1["likert_seconds"], g1["speeder"], g5["likert_seconds"], g5["speeder"]) == ("30.0", "0", "3.0", "1")


def test_two_runs_of_a_topic_are_compared(owner_client, owner, crowd, django_user_model):
    second = CampaignFactory(owner=owner, name="Student loans, run 2")
    LabelBuilder(TopicFactory(campaign=second, key="loans")).likert(
        [(f"w{k}", item, t) for k in range(3) for item, t in TRUTH.items()]
    )
    CampaignFactory(owner=django_user_model.objects.create_user("other"), name="Not yours")
    page = urls(crowd.topic.campaign)["page"]

    content = owner_client.get(page).content.decode()
    assert 'value="' + second.slug + '"' in content and "Not yours" not in content
    # Run 1's cleaned means are the importances, like run 2's: r = 1 on the 10 shared texts.
    content = owner_client.get(page, {"compare": second.slug}).content.decode()
    assert "on 10 shared propositions" in content and "Pearson 1.000" in content
    assert owner_client.get(page, {"compare": "not-a-run"}).status_code == 404


def test_stability_curve_uses_a_seeded_subset_of_a_large_campaign(crowd, monkeypatch):
    campaign = crowd.topic.campaign
    monkeypatch.setattr(statistics, "STABILITY_MAX_ITEMS", 6)
    QualityStatistics.objects.all().delete()
    campaign_quality_refresh(campaign_id=campaign.pk)
    first = quality_report.campaign_quality_report(campaign).stability
    # Sizes 1..5: without "rev" and "careless", every item has 5 labels.
    assert [(point.size, point.items) for point in first] == [(size, 6) for size in range(1, 6)]
    QualityStatistics.objects.all().delete()
    campaign_quality_refresh(campaign_id=campaign.pk)
    assert _same(first, quality_report.campaign_quality_report(campaign).stability)


def _same(first, second) -> bool:
    """Equal, NaN equal to NaN (a curve point whose SD is undefined)."""
    return [[None if value != value else value for value in point] for point in first] == [
        [None if value != value else value for value in point] for point in second
    ]


def test_the_hit_instructions_agree_with_quality_control(client):
    """What a worker reads before working is what quality control applies: traps rated at
    TRAP_FAIL_AT ("Moderately important") or higher fail, half or more failed excludes, more
    than MAX_UNTOUCHED_SHARE of orderings untouched excludes, one untouched is allowed."""
    assert (dict(LIKERT_SCALE)[TRAP_FAIL_AT], MAX_UNTOUCHED_SHARE) == ("Moderately important", 0.5)
    topic = TopicFactory()
    pages = {}
    for kind in (Batch.Kind.LIKERT, Batch.Kind.COMPARISON):
        task = TaskFactory(
            batch=BatchFactory(topic=topic, kind=kind), propositions=PropositionFactory.create_batch(5, topic=topic)
        )
        response = client.get(f"/hit/{task.uuid}/", {"assignmentId": PREVIEW_ASSIGNMENT_ID})
        assert response.status_code == 200
        pages[kind] = " ".join(response.content.decode().split())
    assert (
        "If you rate half or more of the checks you see as <em>Moderately important</em> or higher, "
        "your answers are left out." in pages[Batch.Kind.LIKERT]
    )
    assert "you can submit it as it is" in pages[Batch.Kind.COMPARISON]
    assert (
        "if you submit more than half of your orderings unchanged, your answers are left out"
        in pages[Batch.Kind.COMPARISON]
    )
