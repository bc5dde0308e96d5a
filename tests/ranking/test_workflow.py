"""The campaign loop's one owner: QC once per campaign per pass, every waiting topic advanced
with that result, batches published after their step, campaigns finished."""

import random

import pytest
from django.urls import reverse

from annotation.campaigns import campaign_resume
from annotation.models import Batch, Campaign, Topic
from crowd.qc import worker_quality
from crowd.work.sync import assignments_sync
from ranking import workflow
from tests.factories import CampaignFactory, PropositionFactory, TopicFactory
from tests.ranking.test_pipeline import answer_batch, publish_recorder, start_likert

pytestmark = pytest.mark.django_db


def campaign_with_topics(n_topics: int, *, propositions: int = 12) -> tuple[Campaign, dict[int, float]]:
    campaign = CampaignFactory(
        status=Campaign.Status.ACTIVE,
        assignments_per_hit=3,
        top_k=6,
        batch_pairs=10,
        pair_budget_fraction=0.5,
        trap_rate=0.0,
        stop_stable_refits=50,
    )
    latent = {}
    for t in range(n_topics):
        topic = TopicFactory(campaign=campaign, key=f"topic-{t}", description=f"topic {t}")
        for index in range(propositions):
            proposition = PropositionFactory(topic=topic, subject=f"s{t} {index}", relation="is", object=f"o {index}")
            latent[proposition.pk] = index / propositions
    return campaign, latent


def quality_counter(monkeypatch) -> list[int]:
    runs: list[int] = []
    real = worker_quality.campaign_quality_refresh

    def counted(*, campaign_id, **kwargs):
        runs.append(campaign_id)
        return real(campaign_id=campaign_id, **kwargs)

    monkeypatch.setattr(workflow, "campaign_quality_refresh", counted)
    return runs


@pytest.mark.parametrize("n_topics", [1, 4])
def test_quality_control_runs_once_per_campaign_per_pass_whatever_the_number_of_topics(monkeypatch, n_topics):
    campaign, latent = campaign_with_topics(n_topics)
    other, other_latent = campaign_with_topics(2)
    rng = random.Random(1)
    for topic in Topic.objects.all():
        answer_batch(start_likert(topic), {**latent, **other_latent}, rng)
    runs = quality_counter(monkeypatch)
    calls, publish = publish_recorder()

    report = workflow.loop_run(publish=publish)

    assert sorted(runs) == sorted([campaign.pk, other.pk]) == sorted(report.quality_runs)
    assert [step["action"] for step in report.steps] == ["likert_done"] * (n_topics + 2)
    assert len(calls) == n_topics + 2  # each topic's first comparison batch, published after its step
    assert set(Topic.objects.values_list("state", flat=True)) == {Topic.State.COMPARISONS}


def test_a_pass_with_nothing_new_runs_no_quality_control(monkeypatch):
    campaign_with_topics(3)
    for topic in Topic.objects.all():
        start_likert(topic)  # published, nobody answered yet
    runs = quality_counter(monkeypatch)

    report = workflow.loop_run(publish=lambda batch_id, live: None)

    assert runs == [] and report.steps == []


def test_sync_reports_what_changed_and_enqueues_nothing(django_capture_on_commit_callbacks):
    campaign, latent = campaign_with_topics(1)
    answer_batch(start_likert(campaign.topics.get()), latent, random.Random(2))

    with django_capture_on_commit_callbacks() as callbacks:
        report = assignments_sync()

    assert callbacks == []
    assert report.campaign_ids == set() and report.topic_ids == set()  # no HIT at a marketplace here


def test_a_campaign_whose_every_topic_is_done_is_finished_and_shows_no_pause(client, django_user_model):
    owner = django_user_model.objects.create_user("owner", password="pw")
    campaign, latent = campaign_with_topics(2, propositions=1)  # one proposition: nothing to compare
    Campaign.objects.filter(pk=campaign.pk).update(owner=owner)
    for topic in campaign.topics.all():
        answer_batch(start_likert(topic), latent, random.Random(3))

    report = workflow.loop_run(publish=lambda batch_id, live: None)

    assert [step["action"] for step in report.steps] == ["done", "done"]
    assert report.finished == [campaign.pk]
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.FINISHED
    client.force_login(owner)
    page = client.get(reverse("dashboard:campaign", args=[campaign.slug])).content.decode()
    assert "Finished" in page and ">Pause<" not in page


def test_a_paused_campaign_is_not_advanced_nor_finished_until_resumed():
    campaign, latent = campaign_with_topics(1, propositions=1)
    answer_batch(start_likert(campaign.topics.get()), latent, random.Random(4))
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.PAUSED)

    report = workflow.loop_run(publish=lambda batch_id, live: None)

    assert report.steps == [] and report.finished == []
    assert Campaign.objects.get(pk=campaign.pk).status == Campaign.Status.PAUSED
    campaign_resume(campaign_id=campaign.pk)
    resumed = workflow.loop_run(publish=lambda batch_id, live: None)
    assert [step["action"] for step in resumed.steps] == ["done"] and resumed.finished == [campaign.pk]


def test_a_topic_whose_publish_fails_is_published_by_the_next_pass():
    campaign, latent = campaign_with_topics(1)
    answer_batch(start_likert(campaign.topics.get()), latent, random.Random(5))

    def refused(batch_id, live):
        from config.errors import ApplicationError

        raise ApplicationError("the marketplace is away", code="away")

    first = workflow.loop_run(publish=refused)
    calls, publish = publish_recorder()
    second = workflow.loop_run(publish=publish)

    assert first.errors == [f"topic {campaign.topics.get().pk}: the marketplace is away"]
    chosen = Batch.objects.get(topic__campaign=campaign, kind=Batch.Kind.COMPARISON)
    assert [step["action"] for step in second.steps] == ["republish"]
    assert calls == [(chosen.pk, False)]
