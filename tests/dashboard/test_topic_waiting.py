"""The campaign page's topic card says what the topic waits for (issue 25, point 5): answers
held by named participants (since, until), answers nobody took yet, the budget cap, or the
loop's next pass (crowd.work.progress.Waiting) — at the same query cost however many places
are held."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.models import Campaign
from crowd.channels.links import links
from ranking.pipeline import topic_start
from tests.crowd.sessions.conftest import links_batch
from tests.crowd.sessions.test_session_pages import _do_task, _start

pytestmark = pytest.mark.django_db


def _world(**batch):
    batch = links_batch(**batch)
    campaign = batch.topic.campaign
    campaign.owner = get_user_model().objects.create_user("ada")
    campaign.save(update_fields=["owner"])
    topic_start(topic_id=batch.topic_id)  # what publishing the Likert round from the page does
    owner = Client()
    owner.force_login(campaign.owner)
    return batch, links.link_create(campaign=campaign, kind="open"), owner


def _card(owner, campaign) -> str:
    page = owner.get(f"/campaigns/{campaign.slug}/").content.decode()
    found = re.search(r'<p class="waiting"[^>]*>(.*?)</p>', page, re.S)
    return re.sub(r"<[^>]+>", "", found.group(1)) if found else ""


def _hold(link, code):
    client = Client()
    client.get(_start(client, link, code=code)["Location"])
    return client


def test_the_card_names_who_holds_the_tasks_and_how_many_nobody_took():
    batch, link, owner = _world(propositions=10, tasks_per_session=2, assignments=2)  # 2 tasks × 2: 4 answers
    _hold(link, "P-017")
    _hold(link, "p-9")

    card = _card(owner, batch.topic.campaign)

    assert re.fullmatch(
        r"Waiting for 4 answers: 2 tasks held by participants p-017 \(since \d\d:\d\d, until \d\d:\d\d\), "
        r"p-9 \(since \d\d:\d\d, until \d\d:\d\d\), 2 not yet taken\.",
        card,
    ), card


def test_when_every_answer_is_in_the_card_says_the_loop_s_next_pass_steps_the_topic():
    batch, link, owner = _world(propositions=5, tasks_per_session=1, assignments=1)
    assert _card(owner, batch.topic.campaign) == "Waiting for 1 answer: 1 not yet taken."
    participant = Client()
    _do_task(participant, _start(participant, link, code="P-017")["Location"])

    assert _card(owner, batch.topic.campaign) == (
        f"All answers are in: waiting for the loop's next pass to step the topic on from Likert batch #{batch.number}."
    )
    Campaign.objects.filter(pk=batch.topic.campaign_id).update(status=Campaign.Status.PAUSED)
    assert _card(owner, batch.topic.campaign).endswith("to run again once the campaign is resumed.")


def test_a_batch_held_back_by_the_budget_says_so_instead():
    batch, _, owner = _world(propositions=5, tasks_per_session=1, assignments=1)
    batch.held_reason = "publishing it would commit $3.00, over the budget cap of $2.00."
    batch.save(update_fields=["held_reason"])

    page = owner.get(f"/campaigns/{batch.topic.campaign.slug}/").content.decode()

    assert "is held back: publishing it would commit $3.00" in page
    assert 'class="waiting"' not in page


def test_the_card_costs_the_same_queries_with_no_place_held_and_with_many():
    batch, link, owner = _world(propositions=25, tasks_per_session=1, assignments=2)
    url = f"/campaigns/{batch.topic.campaign.slug}/"
    owner.get(url)  # the cache's figures kept

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert owner.get(url).status_code == 200
        return len(captured.captured_queries)

    none = queries()
    for n in range(6):
        _hold(link, f"P-{n}")
    assert "6 tasks held by participants" in _card(owner, batch.topic.campaign)
    owner.get(url)
    assert queries() == none
