"""The researcher's dashboard (dashboard.views, crowd.work.progress): access,
the create form, uploads, publishing with its preview, pause/resume, expiry, and the
progress figures with their query counts."""

import re
from decimal import Decimal as D

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Batch, Campaign, ImportRecord, Proposition, Topic
from crowd.models import HIT, Assignment, Bonus, Comparison, LedgerEntry, LikertLabel
from crowd.work.progress import Progress, campaign_progress
from rehearsal.localturk import faults
from tests.factories import (
    AssignmentFactory,
    BatchFactory,
    CampaignFactory,
    HITFactory,
    PropositionFactory,
    TaskFactory,
    TopicFactory,
    WorkerFactory,
)

# The balance comes from a port nobody listens on; tests that need the figure use `local_endpoint`.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("unreachable_endpoint")]

GOOD_TSV = (
    "topic\tsubject\trelation\tobject\tconfidence\n"
    + "".join(f"loans\tlender {n}\toffers\tloans to students, variant {n}\t0.9\n" for n in range(10))
).encode()
TOPICS_TSV = b"key\tdescription\nloans\tstudent loans without credit history\n"
# The create form filled in with the defaults it shows: all but the name and the slug.
CREATE_FORM = {
    "environment": "local",
    "budget_cap": "100",
    "likert_reward": "0.06",
    "comparison_reward": "0.05",
    "assignments_per_hit": "5",
    "top_k": "100",
    "pair_budget_fraction": "0.1",
    "batch_pairs": "100",
    "trap_rate": "0.05",
}
BAD_TSV = (
    b"topic\tsubject\trelation\tobject\tconfidence\n"
    b"loans\tlender 1\toffers\tloans to students\t0.9\n"
    b"loans\tlender 2\toffers\t\thigh\n"
)


@pytest.fixture
def campaign(owner):
    return CampaignFactory(owner=owner, slug="loans-run", name="Student loans", trap_rate=0)


@pytest.fixture
def topic(campaign):
    topic = TopicFactory(campaign=campaign, key="loans", state=Topic.State.IMPORTING)
    PropositionFactory.create_batch(10, topic=topic)
    return topic


@pytest.fixture
def local_endpoint(live_server, settings):
    """Publishing and the balance go to the local MTurk endpoint on the live server."""
    settings.MTURK_ENVIRONMENT = "local"
    settings.SITE_URL = live_server.url
    settings.MTURK_LOCAL_ENDPOINT_URL = f"{live_server.url}/localturk/"
    return live_server


def page_urls(campaign, topic, batch) -> dict[str, str]:
    slug = campaign.slug
    return {
        "campaign": reverse("dashboard:campaign", args=[slug]),
        "settings": reverse("dashboard:campaign-settings", args=[slug]),
        "import": reverse("dashboard:propositions-import", args=[slug]),
        "pause": reverse("dashboard:campaign-pause", args=[slug]),
        "resume": reverse("dashboard:campaign-resume", args=[slug]),
        "publish": reverse("dashboard:likert-publish", args=[slug, topic.key]),
        "expire": reverse("dashboard:batch-expire", args=[slug, batch.pk]),
        "ranking": reverse("ranking:topic-ranking", args=[slug, topic.key]),
    }


POSTED = {"import", "pause", "resume", "expire"}


def messages_of(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


# ---- Access --------------------------------------------------------------------------------


def test_every_page_needs_a_login(client, topic):
    urls = {
        **page_urls(topic.campaign, topic, BatchFactory(topic=topic)),
        "list": reverse("dashboard:campaigns"),
        "new": reverse("dashboard:campaign-create"),
    }
    for name, url in urls.items():
        response = client.post(url) if name in POSTED else client.get(url)
        assert response.status_code == 302 and response.url.startswith("/accounts/login/"), name


def test_another_researchers_campaign_is_not_found(client, topic, django_user_model):
    batch = BatchFactory(topic=topic)
    client.force_login(django_user_model.objects.create_user("someone-else"))
    for name, url in page_urls(topic.campaign, topic, batch).items():
        response = client.post(url, {"confirmation": topic.campaign.slug}) if name in POSTED else client.get(url)
        assert response.status_code == 404, name
    assert Campaign.objects.get().status == Campaign.Status.DRAFT
    assert not HIT.objects.exists() and Batch.objects.get().status == Batch.Status.CREATED


def test_a_batch_of_another_campaign_cannot_be_expired_through_mine(owner_client, campaign):
    foreign = BatchFactory(topic=TopicFactory())
    response = owner_client.post(reverse("dashboard:batch-expire", args=[campaign.slug, foreign.pk]))
    assert response.status_code == 404 and foreign.status == Batch.Status.CREATED


def test_the_list_shows_my_campaigns_only_with_progress_and_money(owner_client, topic):
    CampaignFactory(name="Someone else's campaign")
    LedgerEntry.objects.create(campaign=topic.campaign, kind=LedgerEntry.Kind.COMMITTED, amount=D("1.40"))
    LedgerEntry.objects.create(campaign=topic.campaign, kind=LedgerEntry.Kind.SPENT, amount=D("0.35"))

    page = owner_client.get(reverse("dashboard:campaigns")).content.decode()

    assert "Student loans" in page and "Someone else" not in page
    assert "$1.40 / $0.35 / $100.00" in page
    assert ">10</td>" in page  # propositions
    assert "1 importing" in page
    assert 'href="/campaigns/new/"' in page


# ---- Creating a campaign -----------------------------------------------------------------


def test_the_create_form_starts_at_the_papers_defaults_and_says_why(owner_client):
    page = owner_client.get(reverse("dashboard:campaign-create")).content.decode()

    for name, value in [
        ("likert_reward", "0.06"),
        ("comparison_reward", "0.05"),
        ("assignments_per_hit", "5"),
        ("top_k", "100"),
        ("pair_budget_fraction", "0.1"),
        ("batch_pairs", "100"),
        ("trap_rate", "0.05"),
        ("budget_cap", "100.00"),
    ]:
        assert f'name="{name}" value="{value}"' in page, name
    assert "$0.06 per Likert task: the paper's rate for rating 5 statements." in page
    assert 'aria-describedby="id_likert_reward_helptext"' in page
    assert '<label for="id_slug">' in page


def test_creating_a_campaign_makes_me_its_owner(owner_client, owner):
    response = owner_client.post(
        reverse("dashboard:campaign-create"),
        {
            **CREATE_FORM,
            "name": "Bees",
            "slug": "bees",
            "description": "",
            "budget_cap": "20.00",
            "top_k": "50",
            "pair_budget_fraction": "0.2",
            "batch_pairs": "40",
        },
    )

    campaign = Campaign.objects.get(slug="bees")
    assert response.status_code == 302 and response.url == "/campaigns/bees/"
    assert campaign.owner == owner and campaign.top_k == 50 and campaign.batch_pairs == 40
    assert campaign.budget_cap == D("20.00") and campaign.pair_budget_fraction == 0.2


@pytest.mark.parametrize(
    "slug, problem",
    [
        ("loans-run", "already exists"),
        ("new", "reserved"),
        ("Loans", "not a valid slug"),
    ],
)
def test_a_slug_that_cannot_be_used_is_refused_and_nothing_created(owner_client, campaign, slug, problem):
    response = owner_client.post(reverse("dashboard:campaign-create"), {**CREATE_FORM, "name": "Again", "slug": slug})

    assert response.status_code == 200 and problem in response.content.decode()
    assert Campaign.objects.count() == 1


# ---- Uploading propositions ----------------------------------------------------------------


def test_a_good_file_is_imported_with_its_topic_descriptions(owner_client, campaign):
    response = owner_client.post(
        reverse("dashboard:propositions-import", args=[campaign.slug]),
        {
            "file": SimpleUploadedFile("loans.tsv", GOOD_TSV),
            "topics": SimpleUploadedFile("topics.tsv", TOPICS_TSV),
        },
    )

    assert response.status_code == 302 and response.url == f"/campaigns/{campaign.slug}/"
    topic = campaign.topics.get()
    assert topic.key == "loans" and topic.description == "student loans without credit history"
    assert topic.propositions.count() == 10
    assert messages_of(response) == [
        "Imported 10 propositions from loans.tsv (tsv, tab-separated): loans: 10 kept of 10 read, 0 below "
        "the confidence threshold (0.5), 0 duplicates."
    ]


def test_a_file_with_problems_lists_them_by_line_and_imports_nothing(owner_client, campaign):
    response = owner_client.post(
        reverse("dashboard:propositions-import", args=[campaign.slug]),
        {
            "file": SimpleUploadedFile("bad.tsv", BAD_TSV),
        },
    )

    page = response.content.decode()
    assert response.status_code == 200 and 'id="import-problems"' in page
    assert "bad.tsv was not imported: 2 problem(s); nothing was written." in page
    assert "bad.tsv:3 [object]: required field is empty" in page
    assert "bad.tsv:3 [confidence]: expected a number between 0 and 1, got &#x27;high&#x27;" in page
    assert not Proposition.objects.exists() and not Topic.objects.exists() and not ImportRecord.objects.exists()


def test_a_finished_campaign_offers_no_upload_and_refuses_one(owner_client, topic):
    Topic.objects.filter(pk=topic.pk).update(state=Topic.State.DONE)
    Campaign.objects.filter(pk=topic.campaign_id).update(status=Campaign.Status.FINISHED)
    url = reverse("dashboard:propositions-import", args=[topic.campaign.slug])
    more = GOOD_TSV.replace(b"loans\t", b"grants\t")  # a new topic, which nothing would rate

    page = owner_client.get(reverse("dashboard:campaign", args=[topic.campaign.slug])).content.decode()
    refused = owner_client.post(url, {"file": SimpleUploadedFile("more.tsv", more)})

    reason = "Campaign &#x27;loans-run&#x27; is finished: every topic is done and its ranking is final"
    for shown in (page, refused.content.decode()):
        assert reason in shown and f'action="{url}#upload"' not in shown and 'type="file"' not in shown
    assert refused.status_code == 200
    assert list(Topic.objects.values_list("key", flat=True)) == ["loans"] and Proposition.objects.count() == 10
    assert not ImportRecord.objects.exists()


def test_a_topic_without_description_is_flagged_as_blocking_publication(owner_client, topic):
    Topic.objects.filter(pk=topic.pk).update(description="")

    page = owner_client.get(reverse("dashboard:campaign", args=[topic.campaign.slug])).content.decode()

    assert "No description: workers would see only the key “loans”, so publishing is blocked." in page


# ---- Publishing ----------------------------------------------------------------------------


def test_the_publish_preview_shows_hits_and_cost_and_writes_nothing(owner_client, topic):
    page = owner_client.get(reverse("dashboard:likert-publish", args=[topic.campaign.slug, "loans"])).content.decode()

    # 10 propositions, 5 per HIT, no traps: 2 HITs × 5 assignments × ($0.06 + $0.01 fee).
    assert "2 HITs of 5 statements on <strong>Amazon Mechanical Turk (Local MTurk endpoint)</strong>" in page
    assert '<dd data-money="cost">$0.70</dd>' in page
    assert "Publish 2 HITs for $0.70" in page
    assert 'name="confirmation"' not in page  # typed confirmation only for production
    assert not Batch.objects.exists() and not LedgerEntry.objects.exists()


def test_the_preview_says_why_a_topic_cannot_be_published(owner_client, topic):
    Topic.objects.filter(pk=topic.pk).update(description="  ")

    page = owner_client.get(reverse("dashboard:likert-publish", args=[topic.campaign.slug, "loans"])).content.decode()

    assert "has no description" in page and "Publish 2 HITs" not in page


@pytest.mark.mturk
def test_confirming_publishes_the_likert_round_to_the_local_endpoint(owner_client, topic, local_endpoint):
    response = owner_client.post(reverse("dashboard:likert-publish", args=[topic.campaign.slug, "loans"]))

    assert response.status_code == 302, response.content.decode()
    assert messages_of(response) == [
        "Likert round of topic loans: published 2 HITs to Amazon Mechanical Turk (Local MTurk endpoint), $0.70 "
        "committed. Workers find the HITs on MTurk's worker site (on the local endpoint: /localturk/worker/)."
    ]
    topic.refresh_from_db()
    assert topic.state == Topic.State.LIKERT
    assert HIT.objects.filter(task__batch__topic=topic, environment="local").count() == 2
    page = owner_client.get(response.url).content.decode()
    assert '<dd data-money="committed">$0.70</dd>' in page
    assert '<dd data-money="balance">$10,000.00</dd>' in page  # the local endpoint's requester


@pytest.mark.mturk
def test_expiring_a_batch_stops_its_open_hits(owner_client, topic, local_endpoint):
    from crowd.work.rounds import topic_publish

    topic_publish(topic=topic, kind=Batch.Kind.LIKERT)
    batch = topic.batches.get()
    page = owner_client.get(reverse("dashboard:campaign", args=[topic.campaign.slug])).content.decode()
    assert "Expire the 2 open HITs of batch Likert #0" in page

    response = owner_client.post(reverse("dashboard:batch-expire", args=[topic.campaign.slug, batch.pk]))

    batch.refresh_from_db()
    assert batch.status == Batch.Status.EXPIRED
    assert messages_of(response)[0].startswith("Expired 2 open HITs of")
    page = owner_client.get(response.url).content.decode()
    assert "Expire the" not in page


def test_production_needs_the_typed_slug_before_anything_is_published(owner_client, topic, settings):
    Campaign.objects.filter(pk=topic.campaign_id).update(environment=Campaign.Environment.PRODUCTION)
    url = reverse("dashboard:likert-publish", args=[topic.campaign.slug, "loans"])
    assert 'name="confirmation"' in owner_client.get(url).content.decode()

    mistyped = owner_client.post(url, {"confirmation": "loans"})

    assert mistyped.status_code == 200
    assert "type loans-run to confirm" in mistyped.content.decode()
    assert not Batch.objects.exists() and not LedgerEntry.objects.exists()

    # The typed slug stands for --live; the deployment and the campaign switch still guard.
    typed = owner_client.post(url, {"confirmation": "loans-run"}).content.decode()

    assert "Refusing to publish to MTurk production" in typed
    assert "MTURK_ENVIRONMENT=production" in typed and "production_enabled" in typed and "--live" not in typed
    assert not HIT.objects.exists() and not LedgerEntry.objects.exists()


def test_prolific_pay_under_the_minimum_is_said_in_place_of_the_publish_button(owner_client, topic):
    # 0.05 a task, 10 tasks of 45 s in about 8 minutes: 0.50 a session, 3.75 an hour.
    Campaign.objects.filter(pk=topic.campaign_id).update(
        channel=Campaign.Channel.PROLIFIC, likert_reward=D("0.05"), tasks_per_session=10
    )
    url = reverse("dashboard:likert-publish", args=[topic.campaign.slug, "loans"])

    page = owner_client.get(url).content.decode()
    clicked = owner_client.post(url).content.decode()

    for shown in (page, clicked):
        assert "pays $0.50 for about 8 minutes (45 s per task), $3.75 an hour" in shown
        assert "Prolific&#x27;s minimum is $8.00 an hour" in shown
        assert "Raise the likert reward to at least $0.11" in shown
        assert "Seconds per task (Prolific) on the campaign&#x27;s Channel page" in shown
        assert '<button type="submit">Publish' not in shown
    # Refused before the round is built: the description stays editable, nothing is committed.
    assert not Batch.objects.exists() and not LedgerEntry.objects.exists() and not HIT.objects.exists()


def test_over_the_budget_cap_the_refusal_names_cost_and_cap(owner_client, topic):
    Campaign.objects.filter(pk=topic.campaign_id).update(budget_cap=D("0.50"))
    url = reverse("dashboard:likert-publish", args=[topic.campaign.slug, "loans"])
    assert "This exceeds the budget cap" in owner_client.get(url).content.decode()

    page = owner_client.post(url).content.decode()

    assert "costs $0.70 with MTurk fees" in page and "budget cap of campaign loans-run is $0.50" in page
    assert not HIT.objects.exists() and not LedgerEntry.objects.exists()


def test_an_unpaid_bonus_makes_the_publish_preview_refuse_exactly_as_publishing_does(owner_client, topic):
    # The round costs $0.70 and fits a $1.00 cap, until a bonus granted elsewhere in the campaign
    # and not paid yet ($0.50, $0.60 with MTurk's fee) is counted, as publishing counts it.
    Campaign.objects.filter(pk=topic.campaign_id).update(budget_cap=D("1.00"))
    bonus = Bonus.objects.create(
        assignment=AssignmentFactory(task__batch__topic__campaign=topic.campaign), amount=D("0.50"), token="T"
    )
    url = reverse("dashboard:likert-publish", args=[topic.campaign.slug, "loans"])

    preview = owner_client.get(url).content.decode()
    refused = owner_client.post(url).content.decode()

    refusal = re.search(r"Publishing \d+ HITs of .*? short\. Raise the budget cap or publish fewer tasks\.", refused)
    assert refusal is not None and "$0.60 of bonuses is granted but not paid yet" in refusal.group(0)
    assert "$0.30 short" in refusal.group(0)
    assert "This exceeds the budget cap" in preview and refusal.group(0) in preview
    assert "Bonuses granted, not paid yet" in preview
    assert not HIT.objects.exists() and not LedgerEntry.objects.exists()
    bonus.delete()
    assert "This exceeds the budget cap" not in owner_client.get(url).content.decode()


# ---- Pause and resume ----------------------------------------------------------------------


def test_pause_and_resume_go_through_the_job_functions(owner_client, topic, django_capture_on_commit_callbacks):
    slug = topic.campaign.slug

    paused = owner_client.post(reverse("dashboard:campaign-pause", args=[slug]))

    assert Campaign.objects.get().status == Campaign.Status.PAUSED
    assert messages_of(paused)[0].startswith("Paused")
    assert "Resume</button>" in owner_client.get(paused.url).content.decode()
    with django_capture_on_commit_callbacks() as callbacks:
        owner_client.post(reverse("dashboard:campaign-resume", args=[slug]))
    assert Campaign.objects.get().status == Campaign.Status.ACTIVE
    assert callbacks == []  # the loop's next pass picks up what completed while paused


def test_a_draft_cannot_be_resumed_nor_a_finished_campaign_paused(owner_client, campaign):
    refused = owner_client.post(reverse("dashboard:campaign-resume", args=[campaign.slug]))
    assert messages_of(refused) == ["Campaign 'loans-run' is draft, not paused."]
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.FINISHED)

    refused = owner_client.post(reverse("dashboard:campaign-pause", args=[campaign.slug]))

    assert messages_of(refused)[-1] == "Campaign 'loans-run' is finished: there is nothing to pause."
    assert Campaign.objects.get().status == Campaign.Status.FINISHED


# ---- Progress --------------------------------------------------------------------------------


def topic_with_work(campaign, key="loans") -> Topic:
    """A topic in its first comparison batch: 10 propositions and a trap; Likert tasks of 5 + 1
    (the second still unpublished); one comparison task of 5 with one assignment."""
    topic = TopicFactory(campaign=campaign, key=key, state=Topic.State.COMPARISONS)
    real = PropositionFactory.create_batch(10, topic=topic)
    trap = PropositionFactory(topic=topic, obvious_trap=True)
    likert = BatchFactory(topic=topic, kind=Batch.Kind.LIKERT, number=0, status=Batch.Status.COMPLETE)
    first = TaskFactory(batch=likert, propositions=real[:5] + [trap])
    TaskFactory(batch=likert, propositions=real[5:])
    HITFactory(task=first, complete=True)
    workers = WorkerFactory.create_batch(3)
    for worker, status, verification in [
        (workers[0], Assignment.Status.APPROVED, Assignment.Verification.VERIFIED),
        (workers[1], Assignment.Status.SUBMITTED, Assignment.Verification.PENDING),
        (workers[2], Assignment.Status.SUBMITTED, Assignment.Verification.UNVERIFIED),  # never counted
    ]:
        assignment = AssignmentFactory(task=first, worker=worker, status=status, verification=verification)
        LikertLabel.objects.bulk_create(
            LikertLabel(assignment=assignment, worker=worker, proposition=p, score=3) for p in real[:5] + [trap]
        )
    comparisons = BatchFactory(topic=topic, kind=Batch.Kind.COMPARISON, number=1, status=Batch.Status.PUBLISHED)
    task = TaskFactory(batch=comparisons, propositions=real[:5])
    HITFactory(task=task)
    assignment = AssignmentFactory(task=task, worker=workers[0], verification=Assignment.Verification.VERIFIED)
    Comparison.objects.bulk_create(
        Comparison(assignment=assignment, worker=workers[0], winner=a, loser=b)
        for i, a in enumerate(real[:5])
        for b in real[i + 1 : 5]
    )
    return topic


def test_progress_counts_what_the_pipeline_counts(campaign):
    topic = topic_with_work(campaign)
    TopicFactory(campaign=campaign, key="waiting", state=Topic.State.IMPORTING)

    loans, waiting = campaign_progress(campaign)

    assert loans.topic == topic and (loans.propositions, loans.subtle_traps, loans.obvious_traps) == (10, 0, 1)
    assert loans.tasks == Progress(2, 3)
    # Confirmed: 1 Likert + 1 comparison of 5 + 5 needed; the pending one is shown apart.
    assert (loans.submitted, loans.pending) == (Progress(2, 10), 1)
    assert loans.approved == Progress(1, 10)
    assert loans.likert_labels == Progress(6, 30)  # 6 statements × 5 assignments on the published HIT
    assert loans.comparison_votes == Progress(10, 50)  # C(5, 2) pairs × 5 assignments
    assert loans.current_batch.kind == Batch.Kind.COMPARISON
    assert [(open.batch.number, open.open_hits) for open in loans.open_batches] == [(1, 1)]
    assert loans.submitted.percent == 20
    assert (waiting.propositions, waiting.tasks, waiting.submitted, waiting.current_batch) == (
        0,
        Progress(0, 0),
        Progress(0, 0),
        None,
    )
    assert waiting.tasks.percent == 0


def test_the_campaign_page_shows_the_progress_and_an_unavailable_balance(owner_client, campaign):
    topic_with_work(campaign)  # the endpoint is unreachable (unreachable_endpoint)

    page = owner_client.get(reverse("dashboard:campaign", args=[campaign.slug])).content.decode()

    assert '<dd data-money="balance"><span class="muted">unavailable</span></dd>' in page
    assert 'max="10" value="2">20 %</progress>' in page
    assert '<span class="done">6</span> / <span class="total">30</span>' in page
    assert "1 more answer pending: stored here, not yet confirmed by the channel, so not counted." in page
    assert "Current batch: Comparison #1, published." in page


def test_a_links_campaign_shows_no_balance_and_its_meters_count_answers(owner_client, campaign):
    topic_with_work(campaign)
    Campaign.objects.filter(pk=campaign.pk).update(channel=Campaign.Channel.LINKS, status=Campaign.Status.DRAFT)

    page = owner_client.get(reverse("dashboard:campaign", args=[campaign.slug])).content.decode()

    assert "Marketplace balance" not in page  # nobody is paid: no account to read
    assert "Answers submitted" in page and "Assignments submitted" not in page
    assert ">Pause<" not in page  # a draft has nothing to pause
    Campaign.objects.filter(pk=campaign.pk).update(channel=Campaign.Channel.MTURK, status=Campaign.Status.ACTIVE)
    page = owner_client.get(reverse("dashboard:campaign", args=[campaign.slug])).content.decode()
    assert "Marketplace balance" in page and "Assignments submitted" in page and ">Pause<" in page


@pytest.mark.mturk
def test_a_throttling_marketplace_costs_the_page_one_retry_not_ten(owner_client, campaign, local_endpoint):
    faults.inject(throttle=5, operations=["GetAccountBalance"])

    page = owner_client.get(reverse("dashboard:campaign", args=[campaign.slug])).content.decode()

    assert '<dd data-money="balance"><span class="muted">unavailable</span></dd>' in page
    assert faults.active()[0]["remaining"] == 3  # two calls: the first and one retry
    faults.clear()
    page = owner_client.get(reverse("dashboard:campaign", args=[campaign.slug])).content.decode()
    assert '<dd data-money="balance">$10,000.00</dd>' in page


def test_the_campaign_page_makes_as_many_queries_for_five_topics_as_for_one(owner_client, campaign):
    url = reverse("dashboard:campaign", args=[campaign.slug])
    topic_with_work(campaign, "topic-0")
    with CaptureQueriesContext(connection) as one:
        assert owner_client.get(url).status_code == 200
    for n in range(1, 5):
        topic_with_work(campaign, f"topic-{n}")
    with CaptureQueriesContext(connection) as five:
        page = owner_client.get(url).content.decode()
    assert page.count('class="card topic"') == 5
    # The same queries whatever the number of topics; 19 in all with the suitability card's five.
    assert len(five.captured_queries) == len(one.captured_queries) <= 20


def test_the_campaigns_list_makes_as_many_queries_for_five_campaigns_as_for_one(
    owner_client, owner, campaign, django_assert_max_num_queries
):
    topic_with_work(campaign)
    with django_assert_max_num_queries(8):
        assert owner_client.get(reverse("dashboard:campaigns")).status_code == 200
    for _n in range(4):
        topic_with_work(CampaignFactory(owner=owner))
    with django_assert_max_num_queries(8):
        page = owner_client.get(reverse("dashboard:campaigns")).content.decode()
    assert page.count('<th scope="row">') == 5
