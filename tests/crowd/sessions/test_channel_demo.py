"""`make demo CHANNEL=...`'s job in its quick variant: a whole campaign on each session
channel, worked in sessions through the real pages, ends in an exported ranking."""

import pytest
from django.core.management import call_command

from annotation.models import Batch, Campaign, Topic
from crowd.models import Assignment, Study, WorkSession
from ranking.export import ranking_rows
from tests.services import free_port

SPEARMAN = r"(\S+): Spearman of the final ranking with the simulated crowd's hidden truth = ([0-9.]+)"


def _run(channel, capsys):
    call_command("demo", "--channel", channel, "--quick", "--no-serve", "--port", str(free_port()))
    return capsys.readouterr().out


def _check_ranking(output):
    import re

    campaign = Campaign.objects.get(slug="demo")
    agreement = dict(re.findall(SPEARMAN, output))
    for topic in campaign.topics.all():
        assert topic.state == Topic.State.DONE
        rows = ranking_rows(topic=topic)
        assert len(rows) == topic.propositions.filter(trap_kind="none").count()
        assert rows[0]["mu"] is not None and rows[0]["rank"] == 1
        assert float(agreement[topic.key]) > 0.2  # the crowd's truth shows through
    # Every counted answer came through a session, each of its own participant.
    counted = Assignment.objects.filter(verification="verified")
    assert counted.exists() and not counted.filter(worker__channel="mturk").exists()
    return campaign


@pytest.mark.e2e
def test_quick_demo_on_participant_links(transactional_db, capsys):
    output = _run("links", capsys)

    campaign = _check_ranking(output)
    assert campaign.channel == "links"
    assert WorkSession.objects.filter(link__isnull=False, status="finished").exists()


@pytest.mark.e2e
@pytest.mark.prolific
def test_quick_demo_on_prolific(transactional_db, capsys):
    output = _run("prolific", capsys)

    campaign = _check_ranking(output)
    assert campaign.channel == "prolific"
    batches = Batch.objects.filter(topic__campaign=campaign).exclude(status="created")
    assert Study.objects.filter(batch__topic__campaign=campaign).count() == batches.count() > 2  # one per batch
    assert set(WorkSession.objects.values_list("submission_status", flat=True)) <= {"APPROVED", "REJECTED", ""}
    assert WorkSession.objects.filter(submission_status="APPROVED").exists()
