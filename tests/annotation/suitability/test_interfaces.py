"""The command and the refusals: filtering only before a topic's Likert round is built; label
files that fail say file:line and the field; the API walks the whole filter."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from annotation.batching import likert_tasks_build
from annotation.suitability.decisions import FilterClosed, decisions_apply, verification_record
from annotation.suitability.models import SuitabilityDecision, SuitabilityLabel, SuitabilityStudy
from annotation.suitability.studies import study_sample
from tests.annotation.suitability.test_flow import label_sample

pytestmark = pytest.mark.django_db


def test_filtering_is_refused_once_the_likert_round_is_built(campaign, gold, owner):
    study = study_sample(campaign_id=campaign.pk, size=150, seed=0)
    label_sample(study, gold, owner)
    call_command("suitability", "train", "--campaign", campaign.slug)
    built = campaign.topics.get(key="carb-a")
    likert_tasks_build(topic=built, seed=1)
    before = list(SuitabilityDecision.objects.values_list("id", "removed", "verified_label"))
    with pytest.raises(FilterClosed, match=r"carb-a .*is built already"):
        decisions_apply(campaign_id=campaign.pk, topic_keys=["carb-a"])
    decision = SuitabilityDecision.objects.filter(proposition__topic=built).first()
    with pytest.raises(FilterClosed):
        verification_record(campaign_id=campaign.pk, proposition_id=decision.proposition_id, by=owner, suitable=True)
    assert list(SuitabilityDecision.objects.values_list("id", "removed", "verified_label")) == before
    # The other topics are still open: applying without naming topics filters those only.
    applied = decisions_apply(campaign_id=campaign.pk)
    assert applied.topics == ["carb-b", "carb-c"]
    assert not SuitabilityDecision.objects.filter(proposition__topic=built, removed=True).exists()


def test_the_command_from_sample_to_export(campaign, gold, owner, tmp_path, capsys):
    call_command("suitability", "sample", "--campaign", campaign.slug, "--size", "160", "--seed", "2")
    labels = tmp_path / "labels.tsv"
    study = SuitabilityStudy.objects.get(campaign=campaign)
    lines = ["external_id\tsuitable\treason\tnote"]
    for item in study.items.select_related("proposition"):
        row = gold[item.proposition_id]
        lines.append(f"{row['id']}\t{row['suitable']}\t{row['reason']}\t")
    labels.write_text("\n".join(lines) + "\n")
    call_command("suitability", "label", str(labels), "--campaign", campaign.slug, "--expert", owner.username)
    assert SuitabilityLabel.objects.count() == 160
    call_command("suitability", "train", "--campaign", campaign.slug)
    call_command("suitability", "queue", "--campaign", campaign.slug, "--limit", "3")
    out = capsys.readouterr().out
    assert "precision on negatives" in out and "waiting; budget" in out
    first = next(line for line in out.splitlines() if "\t" in line).split("\t")[0]
    call_command(
        "suitability",
        "verify",
        "--campaign",
        campaign.slug,
        "--proposition",
        first,
        "--suitable",
        "no",
        "--by",
        owner.username,
    )
    call_command("suitability", "apply", "--campaign", campaign.slug)
    target = tmp_path / "decisions.csv"
    call_command("suitability", "export", "--campaign", campaign.slug, "--output", str(target))
    assert len(target.read_text().splitlines()) == len(gold) + 1


def test_a_bad_label_file_names_the_line_and_field_and_writes_nothing(campaign, gold, owner, tmp_path):
    call_command("suitability", "sample", "--campaign", campaign.slug, "--size", "20")
    items = list(SuitabilityStudy.objects.get(campaign=campaign).items.values_list("proposition_id", flat=True))
    bad = tmp_path / "bad.tsv"
    bad.write_text(f"proposition\tsuitable\treason\n{items[0]}\t1\t\n{items[1]}\tmaybe\t\n")
    with pytest.raises(CommandError, match=r"bad.tsv:3: field 'suitable'"):
        call_command("suitability", "label", str(bad), "--campaign", campaign.slug, "--expert", owner.username)
    bad.write_text(f"proposition\tsuitable\treason\n{items[0]}\t0\tbecause\n")
    with pytest.raises(CommandError, match=r"bad.tsv:2: field 'reason'"):
        call_command("suitability", "label", str(bad), "--campaign", campaign.slug, "--expert", owner.username)
    with pytest.raises(CommandError, match="--expert: no user 'nobody'"):
        call_command("suitability", "label", str(bad), "--campaign", campaign.slug, "--expert", "nobody")
    assert not SuitabilityLabel.objects.exists()


def test_the_api_walks_the_filter(campaign, gold, owner):
    client = APIClient()
    client.force_authenticate(owner)
    root = f"/api/campaigns/{campaign.slug}/suitability/"
    assert client.post(root + "sample/", {"size": 150, "seed": 4}, format="json").status_code == 201
    sample = client.get(root + "sample/").json()
    assert "SUITABLE" in sample["guideline"] and len(sample["results"]) == 150
    for item in sample["results"]:
        row = gold[item["proposition"]]
        body = {"proposition": item["proposition"], "suitable": row["suitable"] == "1", "reason": row["reason"]}
        assert client.post(root + "labels/", body, format="json").status_code == 201
    trained = client.post(root + "train/", {"seed": 0}, format="json").json()
    assert trained["held_out"]["n"] == 45
    waiting = client.get(root + "queue/").json()["results"]
    margins = [abs(w["margin"]) for w in waiting if not w["predicted_suitable"]]
    assert margins == sorted(margins)
    verified = client.post(
        root + "verify/", {"proposition": waiting[0]["proposition"], "suitable": True}, format="json"
    ).json()
    assert verified["final_suitable"] is True
    applied = client.post(root + "apply/", {}, format="json").json()
    summary = client.get(root).json()
    assert summary["removed"] == applied["removed"] > 0
    assert summary["share_removed"] == pytest.approx(applied["removed"] / len(gold))
    assert summary["study"]["labelled"] == 150 and summary["study"]["experts"] == 1
