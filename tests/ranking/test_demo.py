"""`make demo`'s job, in its quick variant: both topics reach a non-empty ranking."""

import pytest
from django.core.management import call_command

from annotation.models import Campaign, Topic
from ranking.export import ranking_rows
from tests.services import free_port


@pytest.mark.e2e
@pytest.mark.mturk
def test_quick_demo_ends_with_a_ranking_for_both_topics(transactional_db, settings, capsys):
    call_command("demo", "--quick", "--no-serve", "--port", str(free_port()))
    output = capsys.readouterr().out
    campaign = Campaign.objects.get(slug="demo")
    assert campaign.topics.count() == 2
    for topic in campaign.topics.all():
        assert topic.state == Topic.State.DONE
        rows = ranking_rows(topic=topic, top=10)
        assert len(rows) == 10 and rows[0]["mu"] is not None
        assert f"{topic.key}: Spearman of the final ranking" in output
    assert "Dashboard: http://127.0.0.1:" in output
