"""The campaign loop's one owner: QC once per campaign per pass, every waiting topic advanced
with that result, batches published after their step, campaigns finished."""

import logging
import random
import time
from decimal import Decimal

import psycopg2
import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.campaigns import campaign_resume
from annotation.models import Batch, Campaign, Topic
from crowd.qc import worker_quality
from crowd.tasks import sync_chunks_dispatch
from crowd.work.progress import campaign_progress
from crowd.work.sync import assignments_sync
from ranking import tasks, workflow
from tests.factories import CampaignFactory, PropositionFactory, TopicFactory
from tests.ranking.test_pipeline import answer_batch, publish_recorder, start_likert
from tests.test_architecture import import_graph, project_modules

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


@pytest.mark.django_db(transaction=True)
def test_one_pass_at_a_time_and_the_lock_goes_with_its_holder():
    if connection.vendor != "postgresql":
        pytest.skip("the loop's lock is PostgreSQL's advisory lock (make test runs this)")
    campaign, latent = campaign_with_topics(1)
    answer_batch(start_likert(campaign.topics.get()), latent, random.Random(6))
    holder = psycopg2.connect(**_libpq(connection.settings_dict))
    with holder.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [workflow.LOOP_LOCK_KEY])
        assert cursor.fetchone()[0]

    assert workflow.loop_run_exclusive() is None  # skipped: nothing synced, nothing advanced
    assert campaign.topics.get().state == Topic.State.LIKERT

    holder.close()  # the holder dies: its lock goes with its connection
    _advisory_locks_gone()  # once the server has ended that backend (closing does not wait for it)
    report = workflow.loop_run_exclusive()
    assert report is not None  # it ran: the topic moved on (publishing needs no endpoint to be tested here)
    assert campaign.topics.get().state == Topic.State.COMPARISONS
    with connection.cursor() as cursor:  # and the pass let go of it
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            [workflow.LOOP_LOCK_KEY],
        )
        assert cursor.fetchone()[0] == 0


def _advisory_locks_gone(timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s"
                " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                [workflow.LOOP_LOCK_KEY],
            )
            if cursor.fetchone()[0] == 0:
                return
        assert time.monotonic() < deadline, "the closed holder's lock was never released"
        time.sleep(0.05)


def _libpq(settings_dict: dict) -> dict:
    return {
        "dbname": settings_dict["NAME"],
        "user": settings_dict["USER"],
        "password": settings_dict["PASSWORD"] or None,
        "host": settings_dict["HOST"],
        "port": settings_dict["PORT"],
    }


@pytest.mark.mturk
def test_a_batch_the_budget_cap_holds_back_says_why_once_and_goes_out_when_raised(
    live_server, settings, client, django_user_model, caplog
):
    settings.SITE_URL = live_server.url
    settings.MTURK_LOCAL_ENDPOINT_URL = live_server.url + "/localturk/"
    campaign, latent = campaign_with_topics(1)
    owner = django_user_model.objects.create_user("owner", password="pw")
    Campaign.objects.filter(pk=campaign.pk).update(owner=owner, budget_cap=Decimal("0.01"))
    answer_batch(start_likert(campaign.topics.get()), latent, random.Random(7))

    with caplog.at_level(logging.WARNING, logger="crowd.work.publishing"):
        first, second = workflow.loop_run(), workflow.loop_run()

    assert first.errors == second.errors == [] and len(first.held) == len(second.held) == 1
    assert len([record for record in caplog.records if "is held back" in record.getMessage()]) == 1  # said once
    held = Batch.objects.get(topic__campaign=campaign, kind=Batch.Kind.COMPARISON)
    assert "budget cap of campaign" in held.held_reason and "short" in held.held_reason
    client.force_login(owner)
    page = client.get(reverse("dashboard:campaign", args=[campaign.slug])).content.decode()
    assert "Comparison batch #1 is held back: " in page
    listed = client.get(f"/api/campaigns/{campaign.slug}/batches/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert {row["number"]: row["held_reason"] for row in rows}[1] == held.held_reason

    Campaign.objects.filter(pk=campaign.pk).update(budget_cap=Decimal("100.00"))
    third = workflow.loop_run()
    assert third.held == [] and [step["action"] for step in third.steps] == ["republish"]
    held.refresh_from_db()
    assert held.held_reason == "" and held.status == Batch.Status.PUBLISHED


# ---- The Celery task module is where the loop meets Celery ------------------------------------


def test_the_beat_task_hands_the_loop_the_chunk_dispatch_and_the_loop_imports_no_task(monkeypatch):
    handed = []
    monkeypatch.setattr(tasks, "loop_run_exclusive", lambda **kwargs: handed.append(kwargs))

    assert tasks.run_loop() == {"skipped": "a pass is still running"}
    assert handed == [{"dispatch": sync_chunks_dispatch}]
    assert not {"crowd.tasks", "ranking.tasks"} & import_graph(project_modules())["ranking.workflow"]


def test_advance_topic_steps_with_the_stored_exclusions_and_runs_no_quality_control(monkeypatch):
    campaign, latent = campaign_with_topics(1)
    topic = campaign.topics.get()
    answer_batch(start_likert(topic), latent, random.Random(3))
    worker_quality.campaign_quality_refresh(campaign_id=campaign.pk)  # the loop's last QC, stored
    runs = quality_counter(monkeypatch)
    calls, publish = publish_recorder()
    monkeypatch.setattr(workflow, "_publish", publish)
    result = tasks.advance_topic(topic.pk)

    assert runs == []  # quality control is the loop's, once per campaign
    assert result["action"] == "likert_done" and len(calls) == 1


def test_a_pass_leaves_the_dashboards_figures_of_what_it_changed_in_the_cache():
    """Pages warm (issue 26): the campaign page's counted labels and expected answers are in
    the shared cache once a pass stepped the campaign, so its next page counts nothing again."""
    campaign, latent = campaign_with_topics(2)
    for topic in campaign.topics.all():
        answer_batch(start_likert(topic), latent, random.Random(3))
    cache.clear()
    with CaptureQueriesContext(connection) as cold:
        campaign_progress(campaign)
    cache.clear()

    workflow.loop_run(publish=lambda batch_id, live: None)

    with CaptureQueriesContext(connection) as warm:
        campaign_progress(campaign)
    assert len(warm) < len(cold), (len(warm), len(cold))
