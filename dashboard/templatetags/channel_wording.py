"""What pages say about a campaign's channel, asked of the channel's policy
(crowd.marketplaces.registry): `{% load channel_wording %}` then `{{ campaign|fees_wording }}`."""

from decimal import Decimal

from django import template

from crowd.marketplaces.base import ChannelPolicy
from crowd.marketplaces.registry import channel_policy, policies

register = template.Library()


@register.filter
def policy(campaign) -> ChannelPolicy:
    """The campaign's channel policy: `{% with policy=campaign|policy %}`."""
    return channel_policy(campaign.channel)


@register.filter
def environment_label(campaign) -> str:
    """The campaign's environment as its channel names it ("MTurk sandbox", "This server")."""
    return channel_policy(campaign.channel).environment_label(campaign.environment)


@register.filter
def fees_wording(campaign) -> str:
    return channel_policy(campaign.channel).fees_wording


@register.filter
def sessions_wording(campaign) -> str:
    """ "Sessions have N tasks." on a session channel, nothing on the others."""
    return channel_policy(campaign.channel).sessions_wording(campaign.tasks_per_session)


@register.simple_tag
def channel_summaries() -> list[str]:
    return [policy.summary for policy in policies() if policy.summary]


@register.filter
def money(amount, campaign) -> str:
    """An amount in the campaign's channel currency with two decimals: `{{ cost|money:campaign }}` → "£1.20"."""
    return channel_policy(campaign.channel).money_wording(amount)


@register.filter
def cents_money(cents, campaign) -> str:
    """An amount kept in cents, as `money` writes it: `{{ study.reward_cents|cents_money:campaign }}`."""
    return channel_policy(campaign.channel).money_wording(Decimal(cents or 0) / 100)


@register.filter
def task_noun(campaign) -> str:
    """The channel's word for one unit of work: "HIT" on MTurk, "task" elsewhere."""
    return channel_policy(campaign.channel).task_noun[0]


@register.filter
def tasks_noun(campaign) -> str:
    return channel_policy(campaign.channel).task_noun[1]


@register.filter
def answer_noun(campaign) -> str:
    """The channel's word for one worker's answer to a unit: "assignments" on MTurk, "answers" elsewhere."""
    return channel_policy(campaign.channel).answer_noun
