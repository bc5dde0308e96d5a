"""A campaign's collaborators: its owner gives a user the `view` or `edit` role by username,
changes the role, or removes them. What each role may do is annotation.campaigns's rule; a
removed collaborator loses access with their next request (nothing of the rule is cached).

Only the owner (or a superuser) manages collaborators, on the settings page and through the
API; both call these functions, which check it again under the campaign's row lock, so two
owners' tabs cannot race each other into a duplicate.
"""

from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.campaigns import OwnerOnly, campaigns_editable_by, campaigns_owned_by, campaigns_visible_to
from annotation.models import Campaign, CampaignMember
from config.errors import ApplicationError, NotFound


class MemberRefused(ApplicationError):
    """A collaborator the owner cannot add: an unknown username, themselves, the owner."""

    code = "member_refused"


@transaction.atomic
def member_set(*, campaign_id: int, username: str, role: str, by) -> tuple[CampaignMember, bool]:
    """Give the user called `username` the `role` (a CampaignMember.Role) on the campaign:
    added, or their role changed. Returns the membership and whether it is new."""
    campaign = _managed(campaign_id, by)
    if role not in CampaignMember.Role.values:
        raise MemberRefused(
            f"{role!r} is not a role: choose one of {', '.join(CampaignMember.Role.values)}.", code="invalid_role"
        )
    user_model = get_user_model()
    name = username.strip()
    user = user_model._default_manager.filter(**{user_model.USERNAME_FIELD: name}, is_active=True).first()
    if user is None:
        raise MemberRefused(
            f"No user is called {name!r}: check the spelling (it is case-sensitive). A colleague without an "
            "account needs one first: an administrator makes it with `python manage.py create_researcher "
            f"{name or 'USERNAME'}` (it prints a first password) or in the admin (Users › Add user).",
            code="unknown_user",
        )
    if user.pk == by.pk:
        raise MemberRefused("You cannot add yourself: you already have your own access.", code="member_self")
    if user.pk == campaign.owner_id:
        raise MemberRefused(f"{name!r} owns this campaign: they have every right already.", code="member_owner")
    return CampaignMember.objects.update_or_create(
        campaign=campaign, user=user, defaults={"role": role}, create_defaults={"role": role, "added_by": by}
    )


@transaction.atomic
def member_remove(*, campaign_id: int, user_id: int, by) -> CampaignMember:
    """Remove the user's membership of the campaign; returns the removed row (NotFound when
    they are not a collaborator)."""
    campaign = _managed(campaign_id, by)
    member = CampaignMember.objects.select_related("user").filter(campaign=campaign, user_id=user_id).first()
    if member is None:
        raise NotFound("That user is not a collaborator on this campaign.", code="member_not_found")
    member.delete()
    return member


def members_manager_check(*, campaign: Campaign, by) -> None:
    """OwnerOnly unless `by` manages the campaign's collaborators (its owner, or a superuser)."""
    if not campaigns_owned_by(by).filter(pk=campaign.pk).exists():
        raise OwnerOnly(f"Only the owner of campaign {campaign.slug!r} adds and removes its collaborators.")


def member_role(*, campaign: Campaign, user) -> str:
    """What `user` may do with the campaign, for the pages to say and offer: "owner", "edit",
    "view", or "" (nothing); read from the rule's own querysets, so it always agrees with them
    (the owner's own pages ask nothing: the campaign names them)."""
    if user.is_authenticated and campaign.owner_id == user.pk:
        return "owner"
    for role, campaigns in (
        ("owner", campaigns_owned_by),
        (CampaignMember.Role.EDIT.value, campaigns_editable_by),
        (CampaignMember.Role.VIEW.value, campaigns_visible_to),
    ):
        if campaigns(user).filter(pk=campaign.pk).exists():
            return role
    return ""


def _managed(campaign_id: int, by) -> Campaign:
    """The campaign, locked, if `by` manages its collaborators."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign_id)
    members_manager_check(campaign=campaign, by=by)
    return campaign
