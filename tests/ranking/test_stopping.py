"""Stopping that says why (issue 25): each topic says why its comparison rounds stopped (settled,
or the pair budget spent at ρ = x), the final order beside the Likert-only one with their ρ,
near-equal neighbours marked, a budget extension before the topic is final, and a warning when
a budget buys fewer comparisons per proposition than the method needs to beat its Likert means."""

import random

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from annotation.members import member_set
from annotation.models import Batch, Topic
from ranking import pipeline, workflow
from ranking.budget import topic_pair_budget_extend
from ranking.models import PairBudgetExtension
from ranking.stopping import VOTES_PER_ITEM_NEEDED, budget_warning, near_equal_flags, topic_stopping
from tests.factories import CampaignFactory, PropositionFactory, TopicFactory
from tests.ranking.test_pipeline import answer_batch, make_topic, publish_recorder, start_likert

pytestmark = pytest.mark.django_db


def run_until(topic: Topic, latent, *, capture, steps: int = 30, stop_after: int | None = None) -> list[str]:
    """Steps of the loop on `topic`, answering each batch, until it is done (or `stop_after` steps)."""
    rng = random.Random(7)
    _calls, publish = publish_recorder()
    actions = []
    for _ in range(steps):
        with capture(execute=True):
            step = workflow.topic_step(topic_id=topic.pk, publish=publish)
        actions.append(step.action)
        if step.state == Topic.State.DONE or (stop_after is not None and len(actions) >= stop_after):
            break
        latest = Batch.objects.filter(topic=topic, kind=Batch.Kind.COMPARISON).order_by("-number").first()
        answer_batch(latest, latent, rng)
    return actions


def owned(topic: Topic) -> Topic:
    """The topic's campaign owned by a researcher (the factories make campaigns without one)."""
    campaign = topic.campaign
    campaign.owner = User.objects.create_user(f"owner-{campaign.pk}", password="x")
    campaign.save(update_fields=["owner"])
    return topic


@pytest.fixture
def done_by_budget(django_capture_on_commit_callbacks):
    topic, latent = make_topic()
    owned(topic)
    answer_batch(start_likert(topic), latent, random.Random(7))
    assert run_until(topic, latent, capture=django_capture_on_commit_callbacks)[-1] == "done"
    topic.refresh_from_db()
    return topic


def test_a_topic_done_by_its_budget_says_so_with_its_last_rho(done_by_budget):
    stopping = topic_stopping(done_by_budget)

    assert stopping.reason == "budget" and not stopping.extendable
    asked = pipeline.pairs_asked(done_by_budget)
    assert stopping.pairs_asked == asked and stopping.pair_budget is not None and asked >= stopping.pair_budget
    assert stopping.sentence.startswith(f"Pair budget spent ({asked} of {stopping.pair_budget} pairs) at ρ = ")
    assert f"{stopping.spearman_previous:.3f}" in stopping.sentence
    assert stopping.likert_spearman is not None and -1 <= stopping.likert_spearman <= 1


def test_a_settled_topic_says_it_settled(django_capture_on_commit_callbacks):
    topic, latent = make_topic(pair_budget_fraction=1.0, stop_stable_refits=1, stop_spearman=-1.0)
    answer_batch(start_likert(topic), latent, random.Random(3))

    run_until(topic, latent, capture=django_capture_on_commit_callbacks)
    topic.refresh_from_db()

    stopping = topic_stopping(topic)
    assert topic.state == Topic.State.DONE and stopping.reason == "settled"
    assert stopping.sentence.startswith("Settled: the ranking stopped moving (ρ ≥ -1 for 1 refits; last ρ = ")


def test_the_ranking_page_and_the_api_say_why_and_show_the_likert_order(done_by_budget, client):
    owner = done_by_budget.campaign.owner
    client.force_login(owner)
    slug, key = done_by_budget.campaign.slug, done_by_budget.key

    page = client.get(reverse("ranking:topic-ranking", args=[slug, key])).content.decode()
    body = client.get(reverse("api-topic-ranking", args=[slug, key])).json()

    assert 'data-reason="budget"' in page and "Why it stopped" in page and "Pair budget spent (" in page
    assert "Likert rank" in page and 'id="likert-spearman"' in page
    assert 'id="extend-budget"' not in page  # done: final
    assert body["stopping"]["reason"] == "budget" and body["stopping"]["sentence"].startswith("Pair budget spent")
    assert body["stopping"]["likert_spearman"] == pytest.approx(topic_stopping(done_by_budget).likert_spearman)


def test_an_extension_buys_more_batches_before_the_topic_is_final(django_capture_on_commit_callbacks):
    topic, latent = make_topic()
    owned(topic)
    answer_batch(start_likert(topic), latent, random.Random(7))
    run_until(topic, latent, capture=django_capture_on_commit_callbacks, stop_after=1)  # comparing now
    topic.refresh_from_db()
    before = topic_stopping(topic)
    assert before.reason == "running" and before.extendable

    extension = topic_pair_budget_extend(topic=topic, batches=2, user=topic.campaign.owner)
    assert extension.pairs == 2 * topic.campaign.batch_pairs
    assert topic_stopping(topic).pair_budget == before.pair_budget + extension.pairs

    run_until(topic, latent, capture=django_capture_on_commit_callbacks)
    topic.refresh_from_db()
    stopping = topic_stopping(topic)
    assert topic.state == Topic.State.DONE and stopping.pairs_added == extension.pairs
    assert pipeline.pairs_asked(topic) >= before.pair_budget + extension.pairs


def test_a_done_topic_refuses_an_extension_and_writes_nothing(done_by_budget):
    with pytest.raises(Exception, match="is done: its ranking is final"):
        topic_pair_budget_extend(topic=done_by_budget, batches=1, user=None)

    assert not PairBudgetExtension.objects.exists()


def test_the_extend_button_is_for_editors_and_refuses_a_viewer(
    django_capture_on_commit_callbacks, client, django_user_model
):
    topic, latent = make_topic()
    owned(topic)
    answer_batch(start_likert(topic), latent, random.Random(7))
    run_until(topic, latent, capture=django_capture_on_commit_callbacks, stop_after=1)
    campaign = topic.campaign
    viewer, stranger = (django_user_model.objects.create_user(name, password="x") for name in ("vic", "mallory"))
    member_set(campaign_id=campaign.pk, username="vic", role="view", by=campaign.owner)
    page_url = reverse("ranking:topic-ranking", args=[campaign.slug, topic.key])
    url = reverse("ranking:topic-budget-extend", args=[campaign.slug, topic.key])

    client.force_login(viewer)
    assert 'id="extend-budget"' not in client.get(page_url).content.decode()
    assert client.post(url, {"batches": "3"}).status_code == 403
    client.force_login(stranger)
    assert client.post(url, {"batches": "3"}).status_code == 404
    assert not PairBudgetExtension.objects.exists()

    client.force_login(campaign.owner)
    assert 'id="extend-budget"' in client.get(page_url).content.decode()
    response = client.post(url, {"batches": "3"}, follow=True)
    assert PairBudgetExtension.objects.get().pairs == 3 * campaign.batch_pairs
    assert "extended by 60 pairs (3 batches)" in response.content.decode()


def test_near_equal_neighbours_are_flagged():
    rows = [
        {"mu": 43.48, "sigma": 5.2},
        {"mu": 43.45, "sigma": 5.2},
        {"mu": 43.44, "sigma": 5.2},
        {"mu": 40.0, "sigma": 5.2},
        {"mu": None, "sigma": None},
    ]

    assert near_equal_flags(rows) == [False, True, True, False, False]


def _topic_with(n: int, **options) -> Topic:
    campaign = CampaignFactory(top_k=100, assignments_per_hit=5, **options)
    topic = TopicFactory(campaign=campaign)
    PropositionFactory.create_batch(n, topic=topic)
    return topic


def test_a_budget_too_small_to_beat_the_likert_means_is_warned_of():
    small = _topic_with(60, pair_budget_fraction=0.10)  # 0.10 × 59 × 5 ≈ 30 votes per proposition
    enough = _topic_with(60, pair_budget_fraction=0.25)  # ≈ 74

    warning = budget_warning(small)

    assert warning is not None and "buys about 30 comparison votes per proposition" in warning
    assert f"needed about {VOTES_PER_ITEM_NEEDED}" in warning and "Raise the pair budget share to 21%" in warning
    assert budget_warning(enough) is None


def test_the_publish_page_warns_of_a_small_budget(client):
    topic = owned(_topic_with(60, pair_budget_fraction=0.10))
    topic.description = "a described topic"
    topic.save(update_fields=["description"])
    client.force_login(topic.campaign.owner)

    page = client.get(reverse("dashboard:likert-publish", args=[topic.campaign.slug, topic.key])).content.decode()

    assert 'id="budget-warning"' in page and "buys about 30 comparison votes" in page
