"""Prolific's eligibility filters as a campaign stores them (in `channel_settings`), sent with
every study it creates; checked by the leaf package (crowd.marketplaces.prolific.filters)."""

from annotation.campaigns import campaign_update
from annotation.models import Campaign
from crowd.marketplaces.prolific.filters import prolific_filters_check


def prolific_filters_set(*, campaign: Campaign, filters: list[dict]) -> Campaign:
    """Store the filters every study of the campaign is created with (fixed once it has
    published, as every setting that decides who may take its work)."""
    changes = {"channel_settings": prolific_filters_stored(campaign, prolific_filters_check(filters))}
    return campaign_update(campaign_id=campaign.pk, changes=changes)


def prolific_filters_stored(campaign: Campaign, filters: list[dict]) -> dict:
    settings_now = dict(campaign.channel_settings or {})
    if settings_now.get("prolific", {}).get("filters", []) == filters:
        return settings_now  # no filters stored and an empty list are the same: no change
    settings_now["prolific"] = {**settings_now.get("prolific", {}), "filters": filters}
    return settings_now
