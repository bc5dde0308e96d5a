"""A campaign's collaborators in the dashboard: the list (on the settings page and on a page of
its own) for everyone who sees the campaign, and the owner's add and remove forms. Thin: find
the campaign (annotation.access), call annotation.members, redirect back to the settings page
or show the form's error. Who may do what is annotation.campaigns's rule; only the owner
manages collaborators (a viewer's post is refused by annotation.access, an editor's by
annotation.members: both a 403)."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation import members
from annotation.access import campaign_for_request
from annotation.campaigns import OwnerOnly
from annotation.models import Campaign, CampaignMember
from config.errors import NotFound


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150, help_text="Their login name on this site (case-sensitive).")
    role = forms.ChoiceField(
        choices=CampaignMember.Role.choices,
        initial=CampaignMember.Role.VIEW,
        widget=forms.RadioSelect,
        help_text="View: every page and download, no changes. Edit: also imports, publishing, pausing, settings, "
        "worker decisions, bonuses, expiry and links. Adding someone again changes their role.",
    )


def members_context(request: HttpRequest, campaign: Campaign, form: MemberForm | None = None) -> dict:
    """What the collaborators list and its forms show (templates/dashboard/_members.html)."""
    role = members.member_role(campaign=campaign, user=request.user)
    return {
        "campaign": campaign,
        "members": campaign.members.select_related("user", "added_by").order_by("added_at", "id"),
        "member_form": form or MemberForm(),
        "can_manage": role == "owner",
        "your_role": role,
    }


@login_required
@require_GET
def campaign_members(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_for_request(request, slug)
    return render(request, "dashboard/members.html", members_context(request, campaign))


@login_required
@require_POST
def member_add(request: HttpRequest, slug: str) -> HttpResponse:
    """Add a collaborator, or change the role of one; an unknown username is a form error."""
    campaign = _managed(request, slug)
    form = MemberForm(request.POST)
    if form.is_valid():
        try:
            member, created = members.member_set(
                campaign_id=campaign.pk,
                username=form.cleaned_data["username"],
                role=form.cleaned_data["role"],
                by=request.user,
            )
        except OwnerOnly as refused:
            raise PermissionDenied(refused.message) from None
        except members.MemberRefused as refused:
            form.add_error("username", refused.message)
        else:
            can = "view and change" if member.role == CampaignMember.Role.EDIT else "view"
            done = "added" if created else "role changed"
            messages.success(request, f"{member.user.get_username()} {done}: they can {can} this campaign.")
            return _back(campaign)
    return render(request, "dashboard/members.html", members_context(request, campaign, form), status=400)


@login_required
@require_POST
def member_remove(request: HttpRequest, slug: str, member_id: int) -> HttpResponse:
    """Remove a collaborator: their next request is a 404, as for any campaign they never saw."""
    campaign = _managed(request, slug)
    member = get_object_or_404(campaign.members, pk=member_id)
    try:
        removed = members.member_remove(campaign_id=campaign.pk, user_id=member.user_id, by=request.user)
    except OwnerOnly as refused:
        raise PermissionDenied(refused.message) from None
    except NotFound:  # removed in another tab meanwhile
        raise Http404("No such collaborator.") from None
    messages.success(request, f"{removed.user.get_username()} removed: they no longer see this campaign.")
    return _back(campaign)


def _managed(request: HttpRequest, slug: str) -> Campaign:
    """The campaign, if the user manages its collaborators (404 if they do not see it, else 403)."""
    campaign = campaign_for_request(request, slug)
    try:
        members.members_manager_check(campaign=campaign, by=request.user)
    except OwnerOnly as refused:
        raise PermissionDenied(refused.message) from None
    return campaign


def _back(campaign: Campaign) -> HttpResponse:
    return redirect(reverse("dashboard:campaign-settings", args=[campaign.slug]) + "#members")
