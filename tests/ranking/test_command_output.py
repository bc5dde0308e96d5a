"""What `publish --dry-run` and `sync_hits` print (issue 25, point 7): a dry run plans every topic
it can and says why another cannot; a pass of the loop names each topic and what happened in
words, with no log lines in between (they show with --verbosity 2)."""

import logging
from io import StringIO
from types import SimpleNamespace

import pytest
from django.core.management import call_command

from annotation.models import Campaign
from ranking.management.commands import sync_hits
from tests.factories import CampaignFactory, PropositionFactory, TopicFactory

pytestmark = pytest.mark.django_db


def test_a_dry_run_plans_each_topic_and_names_the_one_without_a_description():
    campaign = CampaignFactory(slug="study", channel=Campaign.Channel.LINKS, trap_rate=0)
    for key, description in (("bees", "honey bees in winter"), ("loans", "")):
        PropositionFactory.create_batch(10, topic=TopicFactory(campaign=campaign, key=key, description=description))
    out = StringIO()

    call_command("publish", campaign="study", dry_run=True, stdout=out, stderr=StringIO())

    lines = out.getvalue().splitlines()
    assert any(line.startswith("study/bees likert") and "2 tasks" in line for line in lines), lines
    assert any(line.startswith("study/loans: not publishable: ") and "description" in line for line in lines), lines
    assert lines[-1].startswith("Dry run: 2 tasks") and lines[-1].endswith(
        "1 topic(s) above cannot be published until their problem is fixed."
    )


def _loop(topic) -> SimpleNamespace:
    logging.getLogger("crowd.work.sync").info("synced 3 HITs")  # what the loop logs on its way
    sync = {
        "hits": 0,
        "verified": 0,
        "recovered": 0,
        "unverified": 0,
        "approved": 0,
        "completed": 0,
        "errors": [],
        "sessions": {"counted": 0, "unverified": 0, "released": 0},
        "prolific": {"studies": 0},
    }
    steps = [
        {"topic": topic.pk, "action": "batch_created", "state": "comparisons", "snapshot": 2},
        {"topic": topic.pk, "action": "done", "state": "done", "reason": "pair budget spent"},
    ]
    return SimpleNamespace(sync=sync, steps=steps, finished=[], errors=[])


@pytest.mark.parametrize("verbosity, logged", [(1, False), (2, True)])
def test_sync_hits_names_topics_and_steps_in_words_without_log_lines(monkeypatch, caplog, verbosity, logged):
    topic = TopicFactory(campaign=CampaignFactory(slug="study"), key="loans")
    monkeypatch.setattr(sync_hits, "loop_run_exclusive", lambda **_: _loop(topic))
    out = StringIO()

    with caplog.at_level(logging.INFO):
        call_command("sync_hits", stdout=out, verbosity=verbosity)

    assert out.getvalue().splitlines()[1:] == [
        "study/loans: refit; next comparison batch chosen (now: Comparison rounds)",
        "study/loans: done (pair budget spent) (now: Done)",
    ]
    assert ("synced 3 HITs" in caplog.text) is logged
    assert logging.root.manager.disable == logging.NOTSET  # logging is back as it was
