"""`make demo CHANNEL=...`'s job in its quick variant: a whole campaign on each session
channel, worked in sessions through the real pages, ends in an exported ranking."""

import csv
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from annotation.models import Batch, Campaign, Topic
from crowd.models import Assignment, Study, WorkSession
from ranking.export import ranking_rows
from ranking.stats import spearman
from tests.services import free_port

SPEARMAN = r"(\S+): Spearman of the final ranking with the simulated crowd's hidden truth = (-?[0-9.]+|n/a)"


def _run(channel, capsys):
    call_command("demo", "--channel", channel, "--quick", "--no-serve", "--port", str(free_port()))
    return capsys.readouterr().out


def _check_ranking(output):
    campaign = Campaign.objects.get(slug="demo")
    printed = dict(re.findall(SPEARMAN, output))
    with (Path(settings.BASE_DIR) / "samples" / "demo" / "propositions.tsv").open(encoding="utf-8") as handle:
        truth = {row["id"]: float(row["importance"]) for row in csv.DictReader(handle, delimiter="\t")}
    for topic in campaign.topics.all():
        assert topic.state == Topic.State.DONE
        rows = ranking_rows(topic=topic)
        assert len(rows) == topic.propositions.filter(trap_kind="none").count()
        assert rows[0]["mu"] is not None and rows[0]["rank"] == 1
        assert topic.key in printed  # the demo reports its agreement with the truth
        # The crowd's truth shows through the whole ranking. (The printed figure covers only
        # the dozen near-tied propositions the quick variant compares: too few to judge by.)
        external = dict(topic.propositions.values_list("pk", "external_id"))
        ranks = {row["id"]: -row["rank"] for row in rows}
        assert spearman(ranks, {pid: truth[external[pid]] for pid in ranks}) > 0.5
    # Every counted answer came through a session, each of its own participant.
    counted = Assignment.objects.filter(verification="verified")
    assert counted.exists() and not counted.filter(worker__channel="mturk").exists()
    return campaign


@pytest.mark.slow  # 45 s quiet; the links flow's pages, sessions and loop have their own tests in the suite
@pytest.mark.e2e
def test_quick_demo_on_participant_links(transactional_db, capsys):
    output = _run("links", capsys)

    campaign = _check_ranking(output)
    assert campaign.channel == "links"
    assert WorkSession.objects.filter(link__isnull=False, status="finished").exists()


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.prolific
def test_quick_demo_on_prolific(transactional_db, capsys):
    output = _run("prolific", capsys)

    campaign = _check_ranking(output)
    assert campaign.channel == "prolific"
    batches = Batch.objects.filter(topic__campaign=campaign).exclude(status="created")
    rounds = batches.values("topic", "kind").distinct().count()
    assert Study.objects.of_campaign(campaign).count() == rounds < batches.count()  # one per round, not per batch
    # RETURNED: a participant our page had no task for (excluded by quality control, or the study's
    # tasks all taken) returned the study, as the page asked, and freed its place.
    statuses = set(WorkSession.objects.values_list("submission_status", flat=True))
    assert statuses <= {"APPROVED", "REJECTED", "RETURNED", ""}
    assert WorkSession.objects.values("worker").distinct().count() <= 30  # the same 30 people every round
    assert WorkSession.objects.filter(submission_status="APPROVED").exists()
