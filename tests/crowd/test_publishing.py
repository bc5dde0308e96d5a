"""Publishing through real boto3 against the local endpoint: exactly once, within budget,
and production only with all three switches."""

from decimal import Decimal as D
from io import StringIO

import pytest
import requests
from django.core.management import CommandError, call_command

from annotation.batching import comparison_tasks_build
from annotation.models import Batch, Campaign, Topic
from config.errors import ApplicationError
from crowd.marketplaces.base import MarketplaceUnavailable
from crowd.models import HIT, HITType, LedgerEntry
from crowd.tasks import expire_batch, publish_batch, sync_open_hits
from crowd.work import ledger, publishing, rounds
from crowd.work.ledger import BudgetExceeded
from crowd.work.publishing import batch_publish
from rehearsal.localturk import faults
from tests.factories import CampaignFactory, PropositionFactory, TopicFactory

from .factories import likert_batch


@pytest.mark.mturk
def test_a_published_batch_reads_back_through_gethit(local_turk):
    batch = likert_batch(propositions=12)

    result = batch_publish(batch_id=batch.pk)

    tasks = list(batch.tasks.order_by("position"))
    assert result.published == len(tasks) == 3 and result.already == 0
    hit_type = HITType.objects.get(campaign=batch.topic.campaign)
    for task in tasks:
        remote = local_turk.client.get_hit(HITId=task.hit.hit_id)["HIT"]
        assert f"<ExternalURL>{local_turk.base_url}/hit/{task.uuid}/</ExternalURL>" in remote["Question"]
        assert "<FrameHeight>0</FrameHeight>" in remote["Question"]
        assert remote["MaxAssignments"] == task.assignments_needed == 5
        assert remote["Reward"] == "0.06"
        assert remote["HITTypeId"] == hit_type.hit_type_id == task.hit.hit_type_id
        assert "QualificationRequirements" not in remote or remote["QualificationRequirements"] == []
    batch.refresh_from_db()
    assert batch.status == Batch.Status.PUBLISHED and batch.published_at is not None
    # 3 HITs × 5 assignments × ($0.06 + $0.01 fee)
    assert ledger.campaign_money(campaign=batch.topic.campaign).committed == D("1.05")


@pytest.mark.mturk
def test_publishing_again_changes_nothing(local_turk):
    batch = likert_batch(propositions=10)
    batch_publish(batch_id=batch.pk)

    again = batch_publish(batch_id=batch.pk)

    assert (again.published, again.already, again.cost) == (0, 2, D("0.00"))
    assert len(local_turk.hits()) == 2
    assert LedgerEntry.objects.filter(kind=LedgerEntry.Kind.COMMITTED).count() == 2


@pytest.mark.mturk
def test_a_concurrent_publish_reports_only_the_hits_it_created(local_turk, monkeypatch):
    batch = likert_batch(propositions=25)  # 5 tasks
    first = batch_publish(batch_id=batch.pk)
    # A second run that read the tasks before the first recorded their HITs (as two runs at
    # once do): MTurk answers its calls with the same HITs (the request token), it records none.
    monkeypatch.setattr(publishing, "unpublished_tasks", lambda batch: batch.tasks.order_by("position"))

    second = batch_publish(batch_id=batch.pk)

    assert (first.published, first.already) == (5, 0)
    assert (second.published, second.already) == (0, 5)
    assert HIT.objects.count() == len(local_turk.hits()) == 5


@pytest.mark.mturk
def test_an_interrupted_publish_run_again_creates_no_second_hit(local_turk, monkeypatch, settings):
    settings.MARKETPLACE_CALLS_PER_PROCESS = 1  # one call after the other: the crash falls on the third
    batch = likert_batch(propositions=25)  # 5 tasks
    record = publishing._hit_record
    calls = []

    def crash_on_third(**kwargs):
        calls.append(kwargs["task"].pk)
        if len(calls) == 3:
            raise RuntimeError("worker killed between MTurk's answer and our commit")
        return record(**kwargs)

    monkeypatch.setattr(publishing, "_hit_record", crash_on_third)
    with pytest.raises(RuntimeError):
        batch_publish(batch_id=batch.pk)
    assert HIT.objects.count() == 2
    assert len(local_turk.hits()) == 3  # the third exists at MTurk, unrecorded
    monkeypatch.setattr(publishing, "_hit_record", record)

    result = batch_publish(batch_id=batch.pk)

    assert (result.published, result.already) == (3, 2)
    remote_ids = sorted(hit["HITId"] for hit in local_turk.hits())
    assert len(remote_ids) == 5
    assert sorted(HIT.objects.values_list("hit_id", flat=True)) == remote_ids
    # Committed once per task, though two runs went through the budget check.
    assert LedgerEntry.objects.filter(kind=LedgerEntry.Kind.COMMITTED).count() == 5


@pytest.mark.mturk
def test_over_the_budget_cap_nothing_is_published(local_turk):
    batch = likert_batch(propositions=20, budget_cap=D("1.00"))  # 4 HITs × $0.35 = $1.40
    campaign = batch.topic.campaign
    LedgerEntry.objects.create(
        campaign=campaign, kind=LedgerEntry.Kind.COMMITTED, amount=D("0.10"), reference="earlier"
    )

    with pytest.raises(BudgetExceeded) as refused:
        batch_publish(batch_id=batch.pk)

    error = refused.value
    assert error.code == "budget_exceeded"
    assert error.details == {
        "cost": "1.40",
        "committed": "0.10",
        "pending_bonuses": "0.00",
        "cap": "1.00",
        "shortfall": "0.50",
    }
    for figure in ("$1.40", "$0.10", "$1.00", "$0.50 short"):
        assert figure in error.message
    assert local_turk.hits() == []
    assert not HIT.objects.exists() and not HITType.objects.exists()
    assert LedgerEntry.objects.count() == 1


@pytest.mark.django_db
def test_a_topic_without_description_blocks_publishing():
    batch = likert_batch(propositions=5)
    Topic.objects.filter(pk=batch.topic_id).update(description="  ")

    with pytest.raises(ApplicationError) as refused:
        batch_publish(batch_id=batch.pk)
    assert refused.value.code == "topic_description_missing"
    assert "description" in refused.value.message
    assert not LedgerEntry.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "deployment, switch, live, missing",
    [
        ("sandbox", True, True, "MTURK_ENVIRONMENT=production"),
        ("production", False, True, "production_enabled"),
        ("production", True, False, "--live"),
    ],
)
def test_production_needs_all_three_switches(settings, deployment, switch, live, missing):
    settings.MTURK_ENVIRONMENT = deployment
    settings.SITE_URL = "https://salience.example.org"
    batch = likert_batch(propositions=5, environment="production", production_enabled=switch)

    with pytest.raises(ApplicationError) as refused:
        batch_publish(batch_id=batch.pk, live=live)

    assert refused.value.code == "production_guard"
    assert missing in refused.value.message
    assert refused.value.details and len(refused.value.details) == 1
    assert not LedgerEntry.objects.exists() and not HIT.objects.exists()


@pytest.mark.django_db
def test_production_guard_passes_with_all_three_switches(settings):
    settings.MTURK_ENVIRONMENT = "production"
    campaign = CampaignFactory(environment="production", production_enabled=True)
    publishing.production_guard_check(campaign=campaign, live=True)  # no call to MTurk is made


@pytest.mark.django_db
def test_real_mturk_needs_an_https_site_url(settings):
    settings.SITE_URL = "http://127.0.0.1:8000"
    batch = likert_batch(propositions=5, environment="sandbox")

    with pytest.raises(ApplicationError) as refused:
        batch_publish(batch_id=batch.pk)
    assert refused.value.code == "site_url_not_https"


@pytest.mark.django_db
def test_qualification_requirements_follow_the_campaign_and_none_locally():
    sandbox = CampaignFactory(environment="sandbox", min_approval_percent=97)
    assert [
        (r.type_id, r.comparator, r.integers, r.countries) for r in publishing.requirements_for(campaign=sandbox)
    ] == [
        ("00000000000000000071", "EqualTo", (), ("US",)),
        ("000000000000000000L0", "GreaterThanOrEqualTo", (97,), ()),
    ]
    open_to_all = CampaignFactory(environment="sandbox", require_us_locale=False, min_approval_percent=0)
    assert publishing.requirements_for(campaign=open_to_all) == ()
    assert publishing.requirements_for(campaign=CampaignFactory(environment="local")) == ()


@pytest.mark.mturk
def test_hit_type_is_created_once_per_set_of_parameters(local_turk):
    first = likert_batch(propositions=5)
    topic = TopicFactory(campaign=first.topic.campaign)
    PropositionFactory.create_batch(5, topic=topic)
    batch_publish(batch_id=first.pk)
    second = rounds.topic_publish(topic=topic, kind=Batch.Kind.LIKERT)

    assert second[0].published == 1
    assert HITType.objects.count() == 1
    assert len({hit["HITTypeId"] for hit in local_turk.hits()}) == 1


@pytest.mark.mturk
def test_transient_faults_are_retried_by_botocore(local_turk):
    batch = likert_batch(propositions=10)
    local_turk.inject(throttle=1, service_fault=1, operations=["CreateHITWithHITType"])

    result = batch_publish(batch_id=batch.pk)

    assert result.published == 2
    assert len(local_turk.hits()) == 2
    assert faults.active() == []  # both faults were met, and retried


def test_the_tasks_retry_transient_marketplace_errors_with_backoff():
    for task in (publish_batch, sync_open_hits, expire_batch):
        assert task.autoretry_for == (MarketplaceUnavailable,)
        assert task.retry_backoff is True and task.retry_jitter is True
        assert task.max_retries == 8


@pytest.mark.mturk
def test_faults_outlasting_botocore_are_retried_by_the_celery_task(local_turk, monkeypatch, settings):
    settings.MARKETPLACE_CALLS_PER_PROCESS = 1  # one call after the other: no HIT out before the retry
    monkeypatch.setattr("crowd.marketplaces.mturk.client.MAX_ATTEMPTS", 0)  # no retries inside botocore
    # Eager Celery re-runs a retried task at once, unless it propagates errors (the dev default).
    monkeypatch.setitem(publish_batch.app.conf, "task_eager_propagates", False)
    batch = likert_batch(propositions=15)
    local_turk.inject(throttle=1, service_fault=1, operations=["CreateHITWithHITType"])

    outcome = publish_batch.delay(batch.pk)

    assert outcome.get()["published"] == 3
    assert faults.active() == []
    assert len(local_turk.hits()) == 3
    assert HIT.objects.count() == 3


@pytest.mark.mturk
def test_publish_command_dry_run_prints_count_and_cost_and_writes_nothing(local_turk):
    campaign = CampaignFactory(slug="demo", trap_rate=0)
    topic = TopicFactory(campaign=campaign, key="loans", state=Topic.State.IMPORTING)
    PropositionFactory.create_batch(23, topic=topic)
    out = StringIO()

    call_command("publish", campaign="demo", dry_run=True, stdout=out)

    assert "5 HITs" in out.getvalue() and "$1.75" in out.getvalue()
    assert not Batch.objects.exists() and not LedgerEntry.objects.exists()
    assert local_turk.hits() == []


@pytest.mark.mturk
def test_publish_command_builds_the_likert_batch_and_publishes_it(local_turk):
    campaign = CampaignFactory(slug="demo", trap_rate=0)
    topic = TopicFactory(campaign=campaign, key="loans", state=Topic.State.IMPORTING)
    PropositionFactory.create_batch(23, topic=topic)
    out = StringIO()

    call_command("publish", campaign="demo", topic="loans", kind="likert", stdout=out)

    assert "published 5 HITs" in out.getvalue()
    assert len(local_turk.hits()) == 5
    topic.refresh_from_db()
    assert topic.state == Topic.State.LIKERT


@pytest.mark.django_db
def test_publish_command_reports_a_refusal_as_a_command_error(settings):
    settings.MTURK_ENVIRONMENT = "sandbox"
    campaign = CampaignFactory(slug="live", environment="production", production_enabled=True)
    PropositionFactory.create_batch(5, topic=TopicFactory(campaign=campaign))

    with pytest.raises(CommandError, match="MTURK_ENVIRONMENT=production"):
        call_command("publish", campaign="live", live=True)


@pytest.mark.mturk
def test_first_publish_makes_a_draft_campaign_active(local_turk):
    batch = likert_batch(propositions=5)
    campaign = batch.topic.campaign
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.DRAFT)
    batch_publish(batch_id=batch.pk)
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.ACTIVE


@pytest.mark.mturk
def test_likert_and_ordering_hits_carry_their_own_title_and_description(local_turk):
    likert = likert_batch(propositions=5)
    topic = likert.topic
    ids = list(topic.propositions.values_list("pk", flat=True))
    ordering = comparison_tasks_build(topic=topic, groups=[ids], number=1)
    batch_publish(batch_id=likert.pk)
    batch_publish(batch_id=ordering.pk)

    remote = {
        kind: local_turk.client.get_hit(HITId=batch.tasks.get().hit.hit_id)["HIT"]
        for kind, batch in (("likert", likert), ("comparison", ordering))
    }
    assert remote["likert"]["Title"] == "Rate how important short statements are for a topic"
    assert remote["likert"]["Description"].startswith("Read 5 short statements about a topic and rate")
    assert remote["comparison"]["Title"] == "Put short statements about a topic in order of importance"
    assert remote["comparison"]["Description"].startswith("Put 5 short statements about a topic in order")
    assert HITType.objects.filter(campaign=topic.campaign).count() == 2
    # As workers see them in their list of work on the local worker site.
    listed = requests.get(
        f"{local_turk.base_url}/localturk/worker/", params={"workerId": "AWORKER", "format": "json"}, timeout=10
    ).json()["hits"]
    assert sorted(hit["title"] for hit in listed) == [
        "Put short statements about a topic in order of importance",
        "Rate how important short statements are for a topic",
    ]


@pytest.mark.mturk
def test_a_campaigns_own_titles_are_used(local_turk):
    likert = likert_batch(
        propositions=5, hit_title="Wie wichtig sind diese Aussagen?", comparison_hit_title="Aussagen ordnen"
    )
    ids = list(likert.topic.propositions.values_list("pk", flat=True))
    ordering = comparison_tasks_build(topic=likert.topic, groups=[ids], number=1)
    batch_publish(batch_id=likert.pk)
    batch_publish(batch_id=ordering.pk)

    titles = {hit["HITId"]: hit["Title"] for hit in local_turk.hits()}
    assert titles[likert.tasks.get().hit.hit_id] == "Wie wichtig sind diese Aussagen?"
    assert titles[ordering.tasks.get().hit.hit_id] == "Aussagen ordnen"
