"""Channel → marketplace adapter and channel → policy: the one place that lists channels.

Generic code asks `channel_policy(campaign.channel)` what is specific to a channel (wording,
environments, fees and the unit of payment, checks, switches) and `get_marketplace(campaign)`
for the adapter. Adding a channel adds its package and a line in each table here.
"""

from collections.abc import Callable

from annotation.models import Campaign
from config.errors import ApplicationError
from crowd.marketplaces.base import ChannelPolicy, Marketplace
from crowd.marketplaces.links.adapter import LinksMarketplace
from crowd.marketplaces.links.policy import LinksPolicy
from crowd.marketplaces.mturk.client import MTurkMarketplace
from crowd.marketplaces.mturk.policy import MTurkPolicy
from crowd.marketplaces.prolific.adapter import ProlificMarketplace
from crowd.marketplaces.prolific.policy import ProlificPolicy

MARKETPLACES: dict[str, Callable[..., Marketplace]] = {
    "mturk": MTurkMarketplace,
    "prolific": ProlificMarketplace,
    "links": LinksMarketplace,
}

POLICIES: dict[str, ChannelPolicy] = {
    policy.channel: policy for policy in (MTurkPolicy(), ProlificPolicy(), LinksPolicy())
}


def channel_policy(channel: str) -> ChannelPolicy:
    try:
        return POLICIES[channel]
    except KeyError:
        raise ApplicationError(f"{channel!r} is not a channel.", code="invalid_channel") from None


def policies() -> list[ChannelPolicy]:
    """Every channel's policy, in the order of Campaign.Channel."""
    return [POLICIES[channel] for channel in Campaign.Channel.values if channel in POLICIES]


def channel_choices() -> list[tuple[str, str]]:
    """(channel, name with its status note) wherever a researcher chooses a channel: the
    default first, then the other open channels, then the closed ones (MTurk)."""
    default = Campaign._meta.get_field("channel").default
    ordered = sorted(policies(), key=lambda policy: (policy.channel != default, bool(policy.status_note)))
    return [(policy.channel, policy.offered_label) for policy in ordered]


def channel_offers() -> list[str]:
    """ "links: Participant links", ...: the choices for help texts and command-line help."""
    return [f"{channel}: {label}" for channel, label in channel_choices()]


def frame_origins() -> tuple[str, ...]:
    """The worker sites of every channel that shows our HIT pages in an iframe."""
    return tuple(dict.fromkeys(origin for policy in POLICIES.values() for origin in policy.frame_origins))


def marketplace_for(*, channel: str, environment: str) -> Marketplace:
    factory = MARKETPLACES.get(channel)
    if factory is None:
        raise ApplicationError(
            f"The {Campaign.Channel(channel).label} channel cannot publish HITs yet.", code="channel_unsupported"
        )
    return factory(environment=environment)


def get_marketplace(campaign: Campaign, *, environment: str | None = None) -> Marketplace:
    """The campaign's marketplace, in `environment` (a HIT's own) or else the campaign's."""
    return marketplace_for(channel=campaign.channel, environment=environment or campaign.environment)
