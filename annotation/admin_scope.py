"""Who sees what in the admin: a researcher's own campaigns, and everything that belongs to them.

The rule is annotation.campaigns's (a researcher sees the campaigns they own or collaborate
on, and changes those they own or have the `edit` role on; a superuser sees and changes all),
applied here once for every admin of a campaign-owned model: a request that only reads (GET)
reaches the rows of `campaigns_visible_to`, any other (a change or delete form posted, an
action run) those of `campaigns_editable_by`, and the change and delete permissions of a row
follow the same rule, so a viewer's change page is read-only. Each
such admin declares its `campaign_path`, the lookup from its model to `Campaign` ("" for the
campaign itself, "topic__campaign" for a proposition); the scoping then reaches every way in:

* the change list, the change, delete and history pages, and the rows an action is run on
  (all go through `get_queryset`): another researcher's row answers as a row that does not
  exist;
* the choices of every foreign key on its forms and inlines, and the list filters' choices,
  which offer only what the user may see (and a user field offers only the user themself);
* custom views, which look their object up in `get_queryset` too.

Superusers are not scoped. The staff permissions still decide which models a user may open at
all: give researchers the annotation, crowd and ranking permissions, never those of `auth`
(whoever may change users may make themselves a superuser).
"""

from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import get_fields_from_path
from django.contrib.auth import get_user_model
from django.db import models
from django.http import HttpRequest

from annotation.access import READ_METHODS
from annotation.campaigns import campaigns_editable_by, campaigns_visible_to


def _choices_for(admin_site: admin.AdminSite, field: models.Field, request: HttpRequest) -> models.QuerySet | None:
    """The rows a foreign key may name for this user, or None to leave the field as it is."""
    related = field.related_model
    if request.user.is_superuser or not isinstance(related, type):
        return None
    if related is get_user_model():
        user_pk = request.user.pk
        return related._default_manager.filter(pk=user_pk) if user_pk is not None else related._default_manager.none()
    related_admin = admin_site._registry.get(related)
    if isinstance(related_admin, CampaignOwnedAdmin):
        return related_admin.get_queryset(request)
    return None


class ScopedChoicesMixin:
    """Foreign-key choices limited to what the user sees (for admins and inlines alike)."""

    admin_site: admin.AdminSite

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        choices = _choices_for(self.admin_site, db_field, request)
        if choices is not None:
            kwargs["queryset"] = choices
        return super().formfield_for_foreignkey(db_field, request, **kwargs)  # type: ignore[misc]


class CampaignOwnedAdmin(ScopedChoicesMixin, admin.ModelAdmin):
    """An admin whose rows belong to campaigns: each user sees those of the campaigns they see."""

    campaign_path: str  # from the model to Campaign; "" for Campaign itself

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if request.user.is_superuser:  # also the rows no campaign owns (a worker yet to work)
            return queryset
        reads = request.method in READ_METHODS
        return self._scoped(
            queryset, campaigns_visible_to(request.user) if reads else campaigns_editable_by(request.user)
        )

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and self._editable(request, obj)

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and self._editable(request, obj)

    def _editable(self, request: HttpRequest, obj: models.Model | None) -> bool:
        """Whether `obj` belongs to a campaign the user may change (a viewer's row is shown read-only)."""
        if obj is None or request.user.is_superuser:
            return True
        rows = self.model._default_manager.filter(pk=obj.pk)
        return self._scoped(rows, campaigns_editable_by(request.user)).exists()

    def _scoped(self, queryset: models.QuerySet, campaigns: models.QuerySet) -> models.QuerySet:
        lookup = {f"{self.campaign_path}__in" if self.campaign_path else "pk__in": campaigns}
        if self._path_is_multivalued():
            # A worker reached through many assignments: one row each, and a queryset that can still be deleted.
            return queryset.filter(pk__in=self.model._default_manager.filter(**lookup).values("pk"))
        return queryset.filter(**lookup)

    def get_list_filter(self, request):
        """A filter on a related row offers only the rows present in the user's change list."""
        return [self._related_only(entry) for entry in super().get_list_filter(request)]

    def _related_only(self, entry: Any) -> Any:
        if isinstance(entry, str) and get_fields_from_path(self.model, entry)[-1].is_relation:
            return (entry, admin.RelatedOnlyFieldListFilter)
        return entry

    def _path_is_multivalued(self) -> bool:
        if not self.campaign_path:
            return False
        fields = get_fields_from_path(self.model, self.campaign_path)
        return any(field.one_to_many or field.many_to_many for field in fields)


class ScopedInline(ScopedChoicesMixin, admin.TabularInline):
    """An inline of a campaign-owned admin: its rows follow the parent's, its choices are scoped."""
