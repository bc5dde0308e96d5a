"""Choosing a campaign's channel: the channel and its environment, the tasks per session and
the Prolific filters, changed together through `campaign_update` (so a published campaign
refuses them as every interface does).

What each channel is and does lives in its packages (crowd/marketplaces/<channel>/, and
crowd/channels/<channel>/ for a living channel's lifecycle); the environment a channel may use
is its policy's (crowd.marketplaces.registry.channel_policy).
"""

from annotation.campaigns import campaign_update
from annotation.models import Campaign
from config.errors import ApplicationError
from crowd.channels.prolific.filter_settings import prolific_filters_stored
from crowd.marketplaces.prolific.filters import prolific_filters_check
from crowd.marketplaces.registry import channel_policy

Channel = Campaign.Channel


def channel_settings_set(
    *,
    campaign: Campaign,
    channel: str,
    environment: str | None = None,
    tasks_per_session: int | None = None,
    prolific_filters: list[dict] | None = None,
) -> Campaign:
    """What the Channel page and the channel API change, all or nothing in one
    `campaign_update` (so a published campaign refuses them as every interface does): the
    channel and environment, the tasks per session and the Prolific filters (left as they are
    when None). Returns the campaign as stored."""
    changes = _channel_changes(campaign=campaign, channel=channel, environment=environment)
    if tasks_per_session is not None:
        changes["tasks_per_session"] = tasks_per_session
    if prolific_filters is not None:
        changes["channel_settings"] = prolific_filters_stored(campaign, prolific_filters_check(prolific_filters))
    return campaign_update(campaign_id=campaign.pk, changes=changes)


def channel_set(*, campaign: Campaign, channel: str, environment: str | None = None) -> Campaign:
    """Switch the campaign to `channel` (and environment) while nothing is published yet:
    workers already at one marketplace cannot be moved to another. Refreshes `campaign`."""
    campaign_update(
        campaign_id=campaign.pk, changes=_channel_changes(campaign=campaign, channel=channel, environment=environment)
    )
    campaign.refresh_from_db()
    return campaign


def _channel_changes(*, campaign: Campaign, channel: str, environment: str | None) -> dict:
    if channel not in Channel.values:
        raise ApplicationError(
            f"{channel!r} is not a channel: choose one of {', '.join(Channel.values)}.", code="invalid_channel"
        )
    # An environment the channel does not have becomes its default (Prolific has no sandbox:
    # rehearse on the local endpoint; participant links have only this server).
    environment = channel_policy(channel).environment_choose(environment or campaign.environment)
    return {"channel": channel, "environment": environment}
