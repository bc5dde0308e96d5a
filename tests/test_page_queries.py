"""Researcher pages and API lists cost the same queries however large the campaign: one topic
with a few rows and four topics with many make the same number of queries (issue 17, "pages
that read, not compute"). Counts only, never times (STYLE.md 9)."""

from collections.abc import Callable

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Batch, Campaign, Proposition, Task, Topic
from crowd.models import Assignment, Comparison, LikertLabel, ParticipantLink, WorkerQuality
from crowd.work.review import review_record
from ranking.models import PropositionScore, RankingSnapshot
from ranking.ranking_report import PAGE_SIZE
from rehearsal.localturk.models import Requester
from tests.dashboard.api.conftest import client_for
from tests.factories import (
    AssignmentFactory,
    BatchFactory,
    CampaignFactory,
    HITFactory,
    TaskFactory,
    TopicFactory,
    WorkerFactory,
)
from tests.services import free_port

pytestmark = pytest.mark.django_db

FEW, MANY = 5, 40  # propositions per topic: one Likert task, or eight


@pytest.fixture(autouse=True)
def unreachable_endpoint(settings):
    """The campaign page reads the marketplace balance over HTTP, never through the database;
    a port nobody listens on keeps it quick."""
    settings.MTURK_ENVIRONMENT = "local"
    settings.MTURK_LOCAL_ENDPOINT_URL = f"http://127.0.0.1:{free_port()}/localturk/"


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("researcher", password="x")


def campaign_with(owner, slug: str, *, topics: int, propositions: int, channel=Campaign.Channel.MTURK) -> Campaign:
    """A campaign in its comparison rounds: per topic, scored propositions, a Likert batch
    answered by three workers, a comparison batch answered by one, two refits."""
    campaign = CampaignFactory(owner=owner, slug=slug, status=Campaign.Status.ACTIVE, channel=channel)
    workers = WorkerFactory.create_batch(3)
    WorkerQuality.objects.bulk_create(WorkerQuality(campaign=campaign, worker=worker) for worker in workers)
    for n in range(topics):
        topic = TopicFactory(campaign=campaign, key=f"topic-{n}", state=Topic.State.COMPARISONS)
        real = Proposition.objects.bulk_create(
            Proposition(topic=topic, subject=f"Lender {i}", relation="offers", object="loans", normalized=f"{n}-{i}")
            for i in range(propositions)
        )
        PropositionScore.objects.bulk_create(
            PropositionScore(
                proposition=p,
                likert_mean=5 - i / 100,
                likert_n=3,
                in_comparisons=i < 5,
                mu=30.0 - i if i < 5 else None,
                sigma=1.0 if i < 5 else None,
            )
            for i, p in enumerate(real)
        )
        likert = BatchFactory(topic=topic, kind=Batch.Kind.LIKERT, number=0, status=Batch.Status.COMPLETE)
        for start in range(0, propositions, 5):
            task = TaskFactory(batch=likert, propositions=real[start : start + 5])
            hit = HITFactory(task=task, complete=True)
            for worker in workers:
                assignment = AssignmentFactory(
                    task=task,
                    hit=hit,
                    worker=worker,
                    status=Assignment.Status.APPROVED,
                    verification=Assignment.Verification.VERIFIED,
                )
                LikertLabel.objects.bulk_create(
                    LikertLabel(assignment=assignment, worker=worker, proposition=p, score=3)
                    for p in real[start : start + 5]
                )
        comparisons = BatchFactory(topic=topic, kind=Batch.Kind.COMPARISON, number=1, status=Batch.Status.PUBLISHED)
        task = TaskFactory(batch=comparisons, propositions=real[:5])
        assignment = AssignmentFactory(
            task=task, hit=HITFactory(task=task), worker=workers[0], verification=Assignment.Verification.VERIFIED
        )
        Comparison.objects.bulk_create(
            Comparison(assignment=assignment, worker=workers[0], winner=a, loser=b)
            for i, a in enumerate(real[:5])
            for b in real[i + 1 : 5]
        )
        for number in (1, 2):
            RankingSnapshot.objects.create(
                topic=topic, number=number, comparisons_used=10 * number, ranking=[[p.pk, 30.0, 1.0] for p in real[:5]]
            )
    return campaign


def queries(request: Callable) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = request()
    assert response.status_code == 200, response.content[:500]
    return len(captured.captured_queries)


@pytest.fixture
def small(owner):
    return campaign_with(owner, "small", topics=1, propositions=FEW)


@pytest.fixture
def large(owner):
    return campaign_with(owner, "large", topics=4, propositions=MANY)


# --- Dashboard pages --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "route",
    ["dashboard:campaign", "dashboard:campaign-settings", "crowd:campaign-channel"],
)
def test_a_campaign_page_costs_the_same_queries_for_four_topics_as_for_one(client, owner, small, large, route):
    client.force_login(owner)
    one, four = (queries(lambda c=campaign: client.get(reverse(route, args=[c.slug]))) for campaign in (small, large))
    assert one == four, f"{route}: {one} queries for one topic, {four} for four"


@pytest.mark.parametrize("route", ["dashboard:campaign", "dashboard:campaign-progress"])
def test_the_campaign_page_and_its_live_figures_cost_the_same_queries_for_five_topics_as_for_one(
    client, owner, small, route
):
    five = campaign_with(owner, "five", topics=5, propositions=MANY)
    client.force_login(owner)

    def looks(campaign) -> tuple[int, int, list[str]]:
        """Queries of a first look and of the next, and what the next one read."""
        url = reverse(route, args=[campaign.slug])
        first = queries(lambda: client.get(url))
        with CaptureQueriesContext(connection) as again:
            assert client.get(url).status_code == 200
        return first, len(again.captured_queries), [query["sql"] for query in again.captured_queries]

    (one, one_again, _), (many, many_again, read) = looks(small), looks(five)

    assert one == many and one_again == many_again
    # Looked at again with nothing changed, the counts of labels, votes and expected ones are
    # the cache's: no query reads a label, a vote or a task's items.
    assert many_again == many - 3
    tables = ('"crowd_likertlabel"', '"crowd_comparison"', '"annotation_taskitem"')
    assert not [sql for sql in read if any(table in sql for table in tables)]


def test_the_live_figures_change_as_soon_as_an_answer_is_counted_rejected_or_published(client, owner, small):
    topic = small.topics.get()
    likert = Task.objects.get(batch__topic=topic, kind=Batch.Kind.LIKERT)
    propositions = list(likert.items.order_by("position").values_list("proposition", flat=True))
    client.force_login(owner)

    def meters() -> dict:
        [shown] = client.get(reverse("dashboard:campaign-progress", args=[small.slug])).json()["topics"]
        return {name: (meter["done"], meter["total"]) for name, meter in shown["meters"].items()}

    before = meters()
    assert (before["labels"][0], before["votes"][0], before["submitted"][0]) == (15, 10, 4)

    worker = WorkerFactory()
    answer = AssignmentFactory(task=likert, hit=likert.hit, worker=worker, verification=Assignment.Verification.PENDING)
    LikertLabel.objects.bulk_create(
        LikertLabel(assignment=answer, worker=worker, proposition_id=pid, score=4) for pid in propositions
    )
    assert meters() == before  # pending: stored, not counted

    Assignment.objects.filter(pk=answer.pk).update(verification=Assignment.Verification.VERIFIED)  # as sync confirms
    counted = meters()
    assert (counted["labels"][0], counted["submitted"][0]) == (20, 5)

    review_record(assignment_id=answer.pk, status=Assignment.Status.REJECTED, reason="Random ratings.")
    assert meters()["labels"] == before["labels"]

    ordering = Task.objects.get(batch__topic=topic, kind=Batch.Kind.COMPARISON)
    vote = AssignmentFactory(task=ordering, hit=ordering.hit, worker=worker, verification="verified")
    Comparison.objects.bulk_create(
        Comparison(assignment=vote, worker=worker, winner_id=a, loser_id=b)
        for i, a in enumerate(propositions)
        for b in propositions[i + 1 :]
    )
    assert meters()["votes"][0] == 20

    more = TaskFactory(batch=ordering.batch, propositions=Proposition.objects.filter(pk__in=propositions[:3]))
    assert meters()["votes"][1] == before["votes"][1]  # built, not published
    HITFactory(task=more)
    assert meters()["votes"][1] == before["votes"][1] + 3 * more.assignments_needed


def test_the_campaign_page_shows_a_page_of_topics_at_the_same_cost(client, owner, large):
    many = campaign_with(owner, "many", topics=13, propositions=FEW)
    client.force_login(owner)
    url = reverse("dashboard:campaign", args=[many.slug])

    first, last = (queries(lambda page=page: client.get(url, {"page": page})) for page in (1, 2))
    four = queries(lambda: client.get(reverse("dashboard:campaign", args=[large.slug])))

    assert first == last == four
    page = client.get(url, {"page": 2}).content.decode()
    # By key: topic-0, topic-1, topic-10, topic-11, topic-12, topic-2, ...: the last page holds 7 to 9.
    assert page.count('class="card topic"') == 3 and ">topic-9</h3>" in page and ">topic-0</h3>" not in page
    assert "Topics 11–13 of 13: page" in page and 'href="/campaigns/many/?page=1#topics-heading"' in page


def test_the_campaign_list_costs_the_same_queries_for_a_large_campaign(client, owner, small):
    client.force_login(owner)
    one = queries(lambda: client.get(reverse("dashboard:campaigns")))
    campaign_with(owner, "large", topics=4, propositions=MANY)
    campaign_with(owner, "third", topics=2, propositions=FEW)
    assert queries(lambda: client.get(reverse("dashboard:campaigns"))) == one


def test_the_ranking_page_costs_the_same_queries_for_any_number_of_propositions(client, owner, small):
    huge = campaign_with(owner, "huge", topics=1, propositions=2 * PAGE_SIZE + 30)
    client.force_login(owner)

    def ranking(campaign, page=1):
        return queries(
            lambda: client.get(reverse("ranking:topic-ranking", args=[campaign.slug, "topic-0"]), {"page": page})
        )

    assert ranking(small) == ranking(huge)
    # Later pages also read the top 50 for the chart; past the end is the last page.
    assert ranking(huge, page=2) == ranking(huge, page=3) == ranking(huge, page=99)


def test_the_channel_page_of_a_links_campaign_costs_the_same_queries_for_more_links(client, owner):
    few = campaign_with(owner, "few-links", topics=1, propositions=FEW, channel=Campaign.Channel.LINKS)
    many = campaign_with(owner, "many-links", topics=4, propositions=MANY, channel=Campaign.Channel.LINKS)
    for campaign, links in ((few, 1), (many, 6)):
        ParticipantLink.objects.bulk_create(
            ParticipantLink(campaign=campaign, token=f"{campaign.slug}-{n}", label=f"person {n}") for n in range(links)
        )
    client.force_login(owner)
    one, six = (queries(lambda c=c: client.get(reverse("crowd:campaign-channel", args=[c.slug]))) for c in (few, many))
    assert one == six


# --- API lists ----------------------------------------------------------------------------------

CAMPAIGN_LISTS = ["api-topic-list", "api-batch-list", "api-hit-list", "api-worker-list", "api-link-list"]


@pytest.mark.parametrize("name", CAMPAIGN_LISTS)
def test_an_api_list_costs_the_same_queries_for_four_topics_as_for_one(owner, small, large, name):
    api = client_for(owner)
    one, four = (queries(lambda c=c: api.get(reverse(name, kwargs={"campaign_slug": c.slug}))) for c in (small, large))
    assert one == four, f"{name}: {one} queries for one topic, {four} for four"


@pytest.mark.parametrize("name", ["api-batch-list", "api-hit-list", "api-worker-list"])
def test_every_page_of_an_api_list_costs_the_same_queries(owner, large, name):
    api = client_for(owner)
    url = reverse(name, kwargs={"campaign_slug": large.slug})
    first = api.get(url, {"page_size": 1}).json()
    assert first["count"] >= 3 and len(first["results"]) == 1 and first["next"]

    counts = {queries(lambda page=page: api.get(url, {"page_size": 1, "page": page})) for page in (1, 2, 3)}

    assert len(counts) == 1


def test_the_api_lists_of_topics_and_propositions_cost_the_same_queries_for_more_rows(owner, small, large):
    api = client_for(owner)

    def propositions(campaign):
        url = reverse("api-proposition-list", kwargs={"campaign_slug": campaign.slug, "topic_key": "topic-0"})
        return queries(lambda: api.get(url))

    assert propositions(small) == propositions(large)
    assert queries(lambda: api.get(reverse("api-campaign-list"))) == queries(
        lambda: api.get(reverse("api-campaign-list"), {"page_size": 1})
    )


def test_the_ranking_api_costs_the_same_queries_for_more_propositions(owner, small, large):
    api = client_for(owner)

    def ranking(campaign, **query):
        url = reverse("api-topic-ranking", kwargs={"campaign_slug": campaign.slug, "topic_key": "topic-0"})
        return queries(lambda: api.get(url, query))

    assert ranking(small) == ranking(large) == ranking(large, top=3)


def test_a_page_size_is_capped(owner, large):
    api = client_for(owner)
    url = reverse("api-hit-list", kwargs={"campaign_slug": large.slug})

    assert len(api.get(url, {"page_size": 3}).json()["results"]) == 3
    assert len(api.get(url).json()["results"]) == 36  # 4 topics × (8 Likert + 1 comparison), under the default 50
    assert api.get(url, {"page_size": 100_000}).status_code == 200  # capped at 500, not refused


def test_the_counts_on_a_page_of_the_api_lists_are_the_campaigns(owner, large):
    api = client_for(owner)
    nested = {"campaign_slug": large.slug}

    batch = api.get(reverse("api-batch-list", kwargs=nested), {"topic": "topic-1", "kind": "likert"}).json()["results"]
    hits = api.get(reverse("api-hit-list", kwargs=nested), {"topic": "topic-1"}).json()["results"]
    workers = api.get(reverse("api-worker-list", kwargs=nested)).json()["results"]
    topics = api.get(reverse("api-topic-list", kwargs=nested)).json()["results"]

    assert [(row["tasks"], row["hits"], row["assignments"]) for row in batch] == [(8, 8, 24)]
    assert sorted(row["assignments"] for row in hits) == [1] + [3] * 8
    assert [row["assignments"] for row in workers] == [4 * 8 + 4, 4 * 8, 4 * 8]  # the first also compared
    assert {(row["propositions"], row["traps"]) for row in topics} == {(MANY, 0)}


# --- The marketplace balance ----------------------------------------------------------------


@pytest.fixture
def local_endpoint(live_server, settings):
    settings.SITE_URL = live_server.url
    settings.MTURK_LOCAL_ENDPOINT_URL = f"{live_server.url}/localturk/"
    return live_server


@pytest.mark.mturk
def test_the_balance_is_read_once_a_minute_per_account_unless_asked(client, owner, small, local_endpoint):
    other = CampaignFactory(owner=owner, slug="other")  # the same channel and environment: the same account
    client.force_login(owner)
    url = reverse("dashboard:campaign", args=[small.slug])
    first = client.get(url).content.decode()
    assert '<dd data-money="balance">$10,000.00</dd>' in first and "Balance as read" in first

    Requester.objects.update(balance="1234.50")

    assert '<dd data-money="balance">$10,000.00</dd>' in client.get(url).content.decode()
    assert (
        '<dd data-money="balance">$10,000.00</dd>'
        in client.get(reverse("dashboard:campaign", args=[other.slug])).content.decode()
    )
    assert '<dd data-money="balance">$1,234.50</dd>' in client.get(url, {"balance": "refresh"}).content.decode()
    assert '<dd data-money="balance">$1,234.50</dd>' in client.get(url).content.decode()
