"""The channel registry and what each channel's policy answers: environments, money,
checks, worker sites, and the wording every page shows for a campaign of that channel."""

from datetime import timedelta
from decimal import Decimal as D

import pytest

from annotation.models import Campaign
from config.errors import ApplicationError
from crowd.channels.settings import channel_set
from crowd.hit_page.headers import hit_frame_ancestors
from crowd.marketplaces.base import PaymentUnit
from crowd.marketplaces.links.adapter import LinksMarketplace
from crowd.marketplaces.mturk.client import MTurkMarketplace
from crowd.marketplaces.prolific.adapter import ProlificMarketplace
from crowd.marketplaces.registry import channel_policy, frame_origins, marketplace_for, policies
from tests.annotation.test_campaigns import published
from tests.factories import CampaignFactory, PropositionFactory, TopicFactory

Channel = Campaign.Channel


# ---- The registry ------------------------------------------------------------------------------


def test_every_channel_has_a_policy_and_a_marketplace(settings):
    assert [policy.channel for policy in policies()] == Channel.values
    adapters = {Channel.MTURK: MTurkMarketplace, Channel.PROLIFIC: ProlificMarketplace, Channel.LINKS: LinksMarketplace}
    for channel, adapter in adapters.items():
        marketplace = marketplace_for(channel=channel, environment="local")
        assert isinstance(marketplace, adapter) and marketplace.environment == "local"
        assert channel_policy(channel).label == Channel(channel).label


def test_an_unknown_channel_is_refused_by_name():
    with pytest.raises(ApplicationError, match="'carrier-pigeon' is not a channel") as refused:
        channel_policy("carrier-pigeon")
    assert refused.value.code == "invalid_channel"


def test_each_channel_pays_in_its_own_unit(settings):
    settings.PROLIFIC_SERVICE_FEE_RATE = D("0.428")
    mturk, prolific, links = (channel_policy(channel) for channel in Channel.values)
    assert (mturk.unit, prolific.unit, links.unit) == (
        PaymentUnit.ASSIGNMENT,
        PaymentUnit.SUBMISSION,
        PaymentUnit.NONE,
    )
    assert mturk.assignment_cost(reward=D("0.06"), max_assignments=5) == D("0.07")  # the one-cent fee floor
    assert prolific.submission_cost(reward=D("0.30")) == D("0.43")
    assert links.assignment_cost(reward=D("0.06"), max_assignments=5) == links.submission_cost(reward=D("1")) == 0
    assert (mturk.bonus_cost(D("1.00")), prolific.bonus_cost(D("0.50")), links.bonus_cost(D("1.00"))) == (
        D("1.20"),
        D("0.71"),
        0,
    )


def test_only_mturk_approves_ahead_of_a_marketplaces_own_clock(settings):
    settings.MTURK_APPROVAL_MARGIN_SECONDS = 3600
    assert channel_policy(Channel.MTURK).approval_margin() == timedelta(hours=1)
    assert channel_policy(Channel.PROLIFIC).approval_margin() == channel_policy(Channel.LINKS).approval_margin()
    assert channel_policy(Channel.LINKS).approval_margin() == timedelta(0)


def test_hit_pages_may_be_framed_by_the_channels_worker_sites(settings):
    settings.HIT_FRAME_ANCESTORS = []
    assert frame_origins() == ("https://workersandbox.mturk.com", "https://worker.mturk.com")
    assert hit_frame_ancestors() == ("'self'", *frame_origins())
    settings.HIT_FRAME_ANCESTORS = ["'self'", "https://example.org"]  # a deployment's own list wins
    assert hit_frame_ancestors() == ("'self'", "https://example.org")


# ---- Environments ------------------------------------------------------------------------------


def test_each_channel_names_only_its_own_environments():
    labels = {policy.channel: dict(policy.environments) for policy in policies()}
    assert labels[Channel.MTURK] == {
        "local": "Local MTurk endpoint",
        "sandbox": "MTurk sandbox",
        "production": "MTurk production",
    }
    assert "sandbox" not in labels[Channel.PROLIFIC]
    assert labels[Channel.LINKS] == {"local": "This server"}
    assert not any("MTurk" in label for label in [*labels[Channel.PROLIFIC].values(), *labels[Channel.LINKS].values()])


@pytest.mark.django_db
@pytest.mark.parametrize(
    "channel, requested, environment",
    [("prolific", "sandbox", "local"), ("prolific", "production", "production"), ("links", "sandbox", "local")],
)
def test_switching_channel_keeps_only_an_environment_the_channel_has(channel, requested, environment):
    campaign = CampaignFactory(environment="sandbox")

    channel_set(campaign=campaign, channel=channel, environment=requested)

    assert (campaign.channel, campaign.environment) == (channel, environment)


# ---- Wording on the pages ----------------------------------------------------------------------


@pytest.fixture
def owner_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("ada", password="pw-for-tests-only"))
    return client


def _campaign(channel: str, **fields) -> Campaign:
    from django.contrib.auth import get_user_model

    campaign = CampaignFactory(
        slug=f"{channel}-run", owner=get_user_model().objects.get(username="ada"), channel=channel, **fields
    )
    topic = TopicFactory(campaign=campaign, key="loans")
    PropositionFactory.create_batch(10, topic=topic)
    return campaign


def _pages(client, campaign: Campaign) -> str:
    slug = campaign.slug
    urls = ["/", f"/campaigns/{slug}/", f"/campaigns/{slug}/topics/loans/publish/", f"/campaigns/{slug}/channel/"]
    pages = [client.get(url) for url in urls]
    assert [page.status_code for page in pages] == [200] * len(urls)
    return "\n".join(page.content.decode() for page in pages)


@pytest.mark.django_db
def test_a_links_campaign_never_speaks_of_mturk(owner_client):
    # Published, so its channel page shows the campaign, not the chooser that lists every channel.
    campaign = published(_campaign(Channel.LINKS))

    pages = _pages(owner_client, campaign)

    assert "This server" in pages and "no fees: participant links pay nobody" in pages
    for mturk_words in ("MTurk fees", "MTurk sandbox", "MTurk production", "Local MTurk endpoint", "Prolific's"):
        assert mturk_words not in pages


@pytest.mark.django_db
def test_a_prolific_campaign_shows_prolifics_own_fee_and_environment(owner_client):
    campaign = published(_campaign(Channel.PROLIFIC, tasks_per_session=2, likert_reward=D("0.15")))

    pages = _pages(owner_client, campaign)

    assert "Prolific&#x27;s service fee included" in pages and "Local Prolific endpoint" in pages
    assert "MTurk fees" not in pages and "MTurk sandbox" not in pages


@pytest.mark.django_db
def test_an_mturk_campaign_shows_mturk_fees_and_no_sessions(owner_client):
    campaign = published(_campaign(Channel.MTURK))

    pages = _pages(owner_client, campaign)

    assert "MTurk fees included" in pages and "Local MTurk endpoint" in pages
    assert "Sessions have" not in pages


@pytest.mark.django_db
def test_a_published_session_campaign_says_how_long_its_sessions_are(owner_client):
    campaign = published(_campaign(Channel.LINKS, tasks_per_session=4))

    page = owner_client.get(f"/campaigns/{campaign.slug}/channel/").content.decode()

    assert "Sessions have 4 tasks." in page
