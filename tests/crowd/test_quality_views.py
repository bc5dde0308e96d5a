"""The worker-quality pages (crowd.qc.views): access, the report, overrides and the CSV."""

import csv
import io

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from crowd.models import WorkerDecision, WorkerQuality
from crowd.qc import report as quality_report
from crowd.qc.worker_quality import campaign_quality_refresh
from tests.crowd.quality_data import TRAPS, TRUTH, LabelBuilder, small_crowd_labels
from tests.factories import CampaignFactory, TopicFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("researcher", password="x")


@pytest.fixture
def crowd(owner):
    campaign = CampaignFactory(owner=owner, qc_max_label_share=0.3, name="Student loans, run 1")
    builder = LabelBuilder(TopicFactory(campaign=campaign, key="loans"))
    builder.likert(small_crowd_labels(), TRAPS)
    campaign_quality_refresh(campaign_id=campaign.pk)
    return builder


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


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
    assert page.count("<svg") == 2
    assert 'aria-label="Leave-one-out correlation per worker.' in page
    assert "excluded up to -1" in page  # rev, r = −1, is the one excluded for correlation
    assert 'aria-label="Bootstrap stability of the ranking by Likert mean.' in page
    for figure in ("1.08", "1.14", "0.80–0.81", "0.73–0.78"):
        assert figure in page
    assert "84 counted Likert labels" in page and "24 from excluded workers" in page
    assert page.count('name="csrfmiddlewaretoken"') == 7 + 1  # an override form per worker, log out


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
    response = owner_client.get(urls(crowd.topic.campaign)["csv"])
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert sorted(row["worker"] for row in rows) == ["careless", "g1", "g2", "g3", "g4", "g5", "rev"]
    rev = next(row for row in rows if row["worker"] == "rev")
    assert (rev["labels"], rev["loo_r"], rev["traps_seen"], rev["status"]) == ("12", "-1.0", "2", "excluded")


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
    monkeypatch.setattr(quality_report, "STABILITY_MAX_ITEMS", 6)
    first = quality_report.campaign_quality_report(crowd.topic.campaign).stability
    # Sizes 1..5: without "rev" and "careless", every item has 5 labels.
    assert [(point.size, point.items) for point in first] == [(size, 6) for size in range(1, 6)]
    assert first == quality_report.campaign_quality_report(crowd.topic.campaign).stability
