"""The collaborators section of a campaign's pages: `{% load campaign_members %}` then
`{% campaign_members campaign %}` (the list for everyone who sees the campaign, the add and
remove forms for its owner; dashboard.members), and `{% campaign_role campaign as
your_role %}` for a page to offer only what the user may do (the views enforce it)."""

from django import template

from annotation.members import member_role
from dashboard.members import members_context

register = template.Library()


@register.inclusion_tag("dashboard/_members.html", takes_context=True)
def campaign_members(context, campaign) -> dict:
    return {**members_context(context["request"], campaign), "csrf_token": context.get("csrf_token")}


@register.simple_tag(takes_context=True)
def campaign_role(context, campaign) -> str:
    """`{% campaign_role campaign as your_role %}`: "owner", "edit" or "view" for the signed-in user."""
    return member_role(campaign=campaign, user=context["request"].user)
