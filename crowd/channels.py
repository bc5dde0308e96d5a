"""Choosing a campaign's channel: the channel and its environment, the tasks per session and
the Prolific filters, changed together through `campaign_update` (so a published campaign
refuses them as every interface does).

What each channel is and does lives in its package (crowd/marketplaces/<channel>/); the
environment a channel may use is its policy's (crowd.marketplaces.registry.channel_policy).
"""

from annotation.campaigns import campaign_update
from annotation.models import Campaign
from config.errors import ApplicationError
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
        changes["channel_settings"] = _with_prolific_filters(campaign, prolific_filters_check(prolific_filters))
    return campaign_update(campaign_id=campaign.pk, changes=changes)


def prolific_filters_set(*, campaign: Campaign, filters: list[dict]) -> Campaign:
    """Store the filters every study of the campaign is created with (fixed once it has
    published, as every setting that decides who may take its work)."""
    changes = {"channel_settings": _with_prolific_filters(campaign, prolific_filters_check(filters))}
    return campaign_update(campaign_id=campaign.pk, changes=changes)


def _with_prolific_filters(campaign: Campaign, filters: list[dict]) -> dict:
    settings_now = dict(campaign.channel_settings or {})
    if settings_now.get("prolific", {}).get("filters", []) == filters:
        return settings_now  # no filters stored and an empty list are the same: no change
    settings_now["prolific"] = {**settings_now.get("prolific", {}), "filters": filters}
    return settings_now


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
