"""Publishing tells the truth (crowd.work.publishing, the `publish` command, the dashboard):
a marketplace that does not answer is said at once, with what to start, and nothing is
committed; a failure half-way withdraws what never reached the marketplace; a repeated
publish says what is out. Real boto3 and the real Prolific client over HTTP: against the
local endpoints on the live server, or against a closed port."""

from decimal import Decimal as D
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import Campaign, Topic
from crowd.marketplaces.base import MarketplaceUnavailable
from crowd.models import HIT, HITType, LedgerEntry, Study
from crowd.work import ledger
from crowd.work.publishing import batch_publish
from rehearsal.localturk import faults
from tests.factories import CampaignFactory, PropositionFactory, TopicFactory
from tests.services import free_port

from .factories import likert_batch


def _topic(**campaign_fields) -> Topic:
    """A draft campaign `loans` with one topic of 23 propositions: five Likert HITs."""
    campaign = CampaignFactory(slug="loans", trap_rate=0, status=Campaign.Status.DRAFT, **campaign_fields)
    topic = TopicFactory(campaign=campaign, key="student-loans", state=Topic.State.IMPORTING)
    PropositionFactory.create_batch(23, topic=topic)
    return topic


def _nothing_written(topic: Topic) -> None:
    assert not LedgerEntry.objects.exists()
    assert not HIT.objects.exists() and not HITType.objects.exists() and not Study.objects.exists()
    topic.refresh_from_db()
    assert topic.state == Topic.State.IMPORTING
    assert Campaign.objects.get(pk=topic.campaign_id).status == Campaign.Status.DRAFT


@pytest.fixture
def closed_port(settings):
    """Every local endpoint at a port nobody listens on: the web server is not running."""
    url = f"http://127.0.0.1:{free_port()}"
    settings.MTURK_ENVIRONMENT = "local"
    settings.SITE_URL = url
    settings.MTURK_LOCAL_ENDPOINT_URL = f"{url}/localturk/"
    settings.PROLIFIC_ENVIRONMENT = "local"
    settings.PROLIFIC_API_URL = f"{url}/localprolific/api/v1/"
    return url


# ---- The endpoint is down --------------------------------------------------------------------------


@pytest.mark.mturk
@pytest.mark.django_db
def test_publish_without_the_local_mturk_endpoint_says_what_to_start_and_commits_nothing(closed_port):
    topic = _topic()

    with pytest.raises(CommandError) as refused:
        call_command("publish", campaign="loans")

    message = str(refused.value)
    assert message.startswith(f"The local MTurk endpoint ({closed_port}/localturk/) does not answer.")
    assert "start it with `make serve`" in message and "Nothing was published or committed." in message
    _nothing_written(topic)


@pytest.mark.mturk
@pytest.mark.django_db
def test_the_service_refuses_before_the_budget_is_touched_with_a_retriable_error(closed_port):
    batch = likert_batch(propositions=10)

    with pytest.raises(MarketplaceUnavailable) as refused:
        batch_publish(batch_id=batch.pk)

    assert refused.value.code == "marketplace_unreachable"  # Celery's publish task retries this class
    assert ledger.campaign_money(campaign=batch.topic.campaign).committed == D("0.00")
    assert not HIT.objects.exists()


@pytest.mark.mturk
@pytest.mark.django_db
def test_the_dashboard_shows_what_to_start_and_commits_nothing(closed_port, client, django_user_model):
    topic = _topic()
    owner = django_user_model.objects.create_user("researcher", password="x")
    Campaign.objects.filter(pk=topic.campaign_id).update(owner=owner)
    client.force_login(owner)

    response = client.post(reverse("dashboard:likert-publish", args=["loans", "student-loans"]))

    page = response.content.decode()
    assert response.status_code == 200 and 'role="alert"' in page
    assert "The local MTurk endpoint" in page and "make serve" in page and "Published" not in page
    _nothing_written(topic)


@pytest.mark.prolific
@pytest.mark.django_db
def test_publish_without_the_local_prolific_endpoint_says_what_to_start_and_commits_nothing(closed_port):
    topic = _topic(channel=Campaign.Channel.PROLIFIC, likert_reward="0.12", comparison_reward="0.12")

    with pytest.raises(CommandError) as refused:
        call_command("publish", campaign="loans")

    assert str(refused.value).startswith(f"The local Prolific endpoint ({closed_port}/localprolific/api/v1/)")
    assert "make serve" in str(refused.value)
    _nothing_written(topic)


@pytest.mark.django_db
def test_participant_links_publish_without_any_endpoint(closed_port):
    topic = _topic(channel=Campaign.Channel.LINKS)
    out = StringIO()

    call_command("publish", campaign="loans", stdout=out)

    assert out.getvalue().strip() == (
        "Likert round of topic student-loans: published 5 tasks to Participant links (This server), $0.00 committed. "
        "Next: create participant links on the campaign's Channel page and hand them out."
    )
    assert HIT.objects.filter(task__batch__topic=topic).count() == 5


# ---- A failure half-way ------------------------------------------------------------------------------


@pytest.mark.mturk
def test_a_failure_half_way_withdraws_what_never_reached_mturk_and_a_rerun_commits_it_again(
    local_turk, monkeypatch, settings
):
    settings.MARKETPLACE_CALLS_PER_PROCESS = (
        1  # one call after the other (crowd.work.calls); in parallel: test_publish_parallel
    )
    monkeypatch.setattr("crowd.marketplaces.mturk.client.MAX_ATTEMPTS", 0)  # no retry: the fault is final
    batch = likert_batch(propositions=15)  # three HITs at $0.35 each
    campaign = batch.topic.campaign
    local_turk.inject(service_fault=1, operations=["CreateHITWithHITType"])

    with pytest.raises(MarketplaceUnavailable) as failed:
        batch_publish(batch_id=batch.pk)

    # The first HIT's request got no answer it could trust: it may exist at MTurk, so its
    # commitment stays; the two never sent are withdrawn.
    assert failed.value.message.endswith(
        f"0 HITs of {batch} are out; $0.70 committed for the rest was withdrawn; $0.35 stays committed for what may "
        "have reached MTurk before the failure: publish again to find it, or expire the batch to release it."
    )
    assert ledger.campaign_money(campaign=campaign).committed == D("0.35")
    assert not HIT.objects.exists()

    result = batch_publish(batch_id=batch.pk)

    assert (result.published, result.already) == (3, 0)
    assert ledger.campaign_money(campaign=campaign).committed == D("1.05")  # each task committed once
    assert LedgerEntry.objects.filter(kind=LedgerEntry.Kind.COMMITTED).count() == 3
    assert len(local_turk.hits()) == 3 and faults.active() == []


# ---- Publishing again ----------------------------------------------------------------------------------


@pytest.mark.mturk
def test_a_repeated_publish_says_what_is_out_on_the_command_line(local_turk):
    _topic()
    first, again = StringIO(), StringIO()

    call_command("publish", campaign="loans", stdout=first)
    call_command("publish", campaign="loans", stdout=again)

    assert first.getvalue().strip() == (
        "Likert round of topic student-loans: published 5 HITs to Amazon Mechanical Turk (Local MTurk endpoint), "
        "$1.75 committed. Workers find the HITs on MTurk's worker site (on the local endpoint: /localturk/worker/)."
    )
    assert again.getvalue().strip() == (
        "Likert round of topic student-loans already published: 5 HITs on Amazon Mechanical Turk "
        "(Local MTurk endpoint); nothing new to publish."
    )
    assert len(local_turk.hits()) == 5
    assert ledger.campaign_money(campaign=Campaign.objects.get(slug="loans")).committed == D("1.75")


@pytest.mark.mturk
def test_a_repeated_publish_in_the_dashboard_is_not_a_success(local_turk, client, django_user_model):
    topic = _topic()
    owner = django_user_model.objects.create_user("researcher", password="x")
    Campaign.objects.filter(pk=topic.campaign_id).update(owner=owner)
    client.force_login(owner)
    url = reverse("dashboard:likert-publish", args=["loans", "student-loans"])

    first = client.post(url, follow=True)
    again = client.post(url, follow=True)
    preview = client.get(url)

    said = [(m.level_tag, m.message) for m in first.context["messages"]]
    assert said == [
        (
            "success",
            "Likert round of topic student-loans: published 5 HITs to Amazon Mechanical Turk (Local MTurk "
            "endpoint), $1.75 committed. Workers find the HITs on MTurk's worker site (on the local endpoint: "
            "/localturk/worker/).",
        )
    ]
    out = (
        "Likert round of topic student-loans already published: 5 HITs on Amazon Mechanical Turk (Local MTurk "
        "endpoint); nothing new to publish."
    )
    assert [(m.level_tag, m.message) for m in again.context["messages"]] == [("info", out)]
    assert out in preview.content.decode() and "Publish 0" not in preview.content.decode()
    assert len(local_turk.hits()) == 5
