"""Choosing a campaign's channel: the channel and its environment, the tasks per session and
the Prolific filters, changed together through `campaign_update` (so a published campaign
refuses them as every interface does).

What each channel is and does lives in its packages (crowd/marketplaces/<channel>/, and
crowd/channels/<channel>/ for a living channel's lifecycle); the environment a channel may use
is its policy's (crowd.marketplaces.registry.channel_policy).
"""

import copy

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
    seconds_per_task: int | None = None,
) -> Campaign:
    """What the Channel page and the channel API change, all or nothing in one
    `campaign_update` (so a published campaign refuses them as every interface does): the
    channel and environment, the tasks per session, the Prolific filters and the estimate of
    seconds per task (left as they are when None); rewards under the channel's floor at the
    new figures are raised to it (`rewards_fit`). Returns the campaign as stored."""
    changes = _channel_changes(campaign=campaign, channel=channel, environment=environment)
    if tasks_per_session is not None:
        changes["tasks_per_session"] = tasks_per_session
    stored = dict(campaign.channel_settings or {})
    if prolific_filters is not None:
        stored = prolific_filters_stored(campaign, prolific_filters_check(prolific_filters))
    if seconds_per_task is not None:
        stored["prolific"] = {**stored.get("prolific", {}), "seconds_per_task": seconds_per_task}
    if stored != (campaign.channel_settings or {}):
        changes["channel_settings"] = stored
    changes.update(_rewards_fit_planned(campaign=campaign, changes=changes))
    return campaign_update(campaign_id=campaign.pk, changes=changes)


def _rewards_fit_planned(*, campaign: Campaign, changes: dict) -> dict:
    """`rewards_fit` of the campaign as `changes` would make it, while it is a draft (after its
    first publish its rewards are fixed, and a refused change names only what was asked)."""
    if campaign.status != Campaign.Status.DRAFT:
        return {}
    planned = copy.copy(campaign)
    for name, value in changes.items():
        setattr(planned, name, value)
    return rewards_fit(campaign=planned)


def rewards_fit(*, campaign: Campaign) -> dict:
    """The reward changes that bring the campaign's rewards up to its channel's floor (Prolific:
    its minimum hourly pay at the estimated seconds per task), so a new campaign's defaults
    pass the pay check; rewards above it are left as they are. Reads only."""
    floor = channel_policy(campaign.channel).rewards_floor(campaign=campaign)
    if floor is None:
        return {}
    return {name: floor for name in ("likert_reward", "comparison_reward") if getattr(campaign, name) < floor}


def campaign_rewards_fit(*, campaign: Campaign) -> str:
    """A campaign just created on a channel with a floor: its rewards brought up to it. What
    was raised, for the researcher ("" when nothing was)."""
    changes = rewards_fit(campaign=campaign)
    if not changes:
        return ""
    campaign_update(campaign_id=campaign.pk, changes=changes)
    return rewards_fit_wording(campaign=campaign, changes=changes)


def rewards_fit_wording(*, campaign: Campaign, changes: dict) -> str:
    if not changes:
        return ""
    policy = channel_policy(campaign.channel)
    which = " and ".join(name.split("_")[0].capitalize() for name in changes)
    amount = policy.money_wording(next(iter(changes.values())))
    return (
        f"{which} reward raised to {amount} a task, the least that pays {policy.short_name}'s minimum hourly pay "
        f"at the estimated time per task (Seconds per task on the Channel page)."
    )


def channel_set(*, campaign: Campaign, channel: str, environment: str | None = None) -> Campaign:
    """Switch the campaign to `channel` (and environment) while nothing is published yet:
    workers already at one marketplace cannot be moved to another. Refreshes `campaign`."""
    changes = _channel_changes(campaign=campaign, channel=channel, environment=environment)
    campaign_update(
        campaign_id=campaign.pk, changes={**changes, **_rewards_fit_planned(campaign=campaign, changes=changes)}
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
