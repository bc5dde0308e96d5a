"""The campaign a web request is about, if its user may do what the request does.

Every researcher page, download and API route under `campaigns/<slug>/` finds its campaign
here, so the rule of annotation.campaigns is applied the same way everywhere: a request that
only reads (GET, HEAD, OPTIONS) needs the campaign to be visible to the user; any other method
changes something, and needs it to be editable by them. Someone who does not see the campaign
gets a 404, as for a campaign that does not exist; a viewer who tries to change it gets a 403
that says why. Dashboard views and API views never change anything on a read, so the method
is the whole test (the attack tests post to every state-changing address as a viewer).
"""

from typing import Any, Protocol

from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404

from annotation.campaigns import campaigns_editable_by, campaigns_visible_to
from annotation.models import Campaign

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class _Request(Protocol):
    """A Django HttpRequest or a DRF Request."""

    @property
    def user(self) -> Any: ...

    @property
    def method(self) -> str | None: ...


def campaign_for_request(request: _Request, slug: str, *, edit: bool = False) -> Campaign:
    """The campaign at `slug` for this request: 404 unless the user sees it, 403 when the
    request would change it — or reads what only an editor may read (`edit`: participant
    links, which are participants' identities) — and the user only views it."""
    campaign = get_object_or_404(campaigns_visible_to(request.user), slug=slug)
    if (edit or request.method not in READ_METHODS) and not user_may_edit(request.user, campaign):
        raise PermissionDenied(
            f"You can view campaign {campaign.slug!r} but not change it: ask its owner for edit access."
        )
    return campaign


def user_may_edit(user: Any, campaign: Campaign) -> bool:
    return campaigns_editable_by(user).filter(pk=campaign.pk).exists()
