from django import forms
from django.contrib import admin, messages
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from annotation.access import READ_METHODS
from annotation.admin_scope import CampaignOwnedAdmin, ScopedInline
from annotation.campaigns import (
    FIXED_AFTER_PUBLISH,
    OwnerOnly,
    campaign_changes_check,
    campaign_has_published,
    campaign_update,
    campaigns_owned_by,
)
from annotation.importing.formats import DELIMITERS, FORMATS
from annotation.importing.importers import ImportFailed, propositions_import
from annotation.members import member_remove, member_set
from annotation.models import Batch, Campaign, CampaignMember, ImportRecord, Proposition, Task, TaskItem, Topic
from config.errors import ApplicationError, Conflict


class ImportForm(forms.Form):
    file = forms.FileField(help_text="TSV, CSV or JSON Lines with topic, subject, relation, object; or Open IE output.")
    topics = forms.FileField(required=False, help_text="Optional TSV/CSV with key and description.")
    traps = forms.FileField(
        required=False, help_text="Optional subtle traps (plausible but off-topic), in the file's columns."
    )
    format = forms.ChoiceField(choices=[(name, name) for name in ("auto", *FORMATS)], initial="auto")
    delimiter = forms.ChoiceField(
        choices=[(name, name) for name in ("auto", *DELIMITERS)],
        initial="auto",
        required=False,
        help_text="For TSV and CSV files; auto finds the one that splits the header into its columns.",
    )
    min_confidence = forms.FloatField(initial=0.5, min_value=0.0, max_value=1.0)
    topic = forms.CharField(required=False, help_text="Topic key for Open IE files (default: the file name).")


class TopicInline(ScopedInline):
    model = Topic
    fields = ("key", "description", "state")
    extra = 0
    show_change_link = True


class CampaignAdminForm(forms.ModelForm):
    """Checks a change against the rule every interface uses (annotation.campaigns), on the
    campaign as stored, so the admin refuses what the API refuses, with the same message.
    (No Meta: CampaignAdmin builds the form for Campaign with the fields it shows.)"""

    def clean(self):
        data = super().clean() or {}
        if self.instance.pk is not None:
            changes = {name: data[name] for name in self.changed_data if name in data}
            try:
                campaign_changes_check(campaign=Campaign.objects.get(pk=self.instance.pk), changes=changes)
            except Conflict as refused:
                raise forms.ValidationError(refused.message, code=refused.code) from None
        return data


@admin.register(Campaign)
class CampaignAdmin(CampaignOwnedAdmin):
    campaign_path = ""
    form = CampaignAdminForm
    list_display = ("name", "slug", "status", "channel", "environment", "budget_cap", "created_at")
    list_filter = ("status", "channel", "environment")
    search_fields = ("name", "slug", "description")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [TopicInline]
    change_form_template = "admin/annotation/campaign/change_form.html"

    def get_readonly_fields(self, request, obj=None):
        """The status has its own writers (annotation.campaigns): setting it back to draft
        here would unlock the fixed settings. Those are shown, not offered, once published; a
        POST that carries one anyway (a form loaded before the first publish, or a crafted
        request) has it judged by the form's check, which refuses a change with the message
        every interface shows instead of dropping it silently. The owner is shown, not offered,
        to a collaborator: only the owner hands the campaign on (annotation.campaigns)."""
        owned = obj is None or campaigns_owned_by(request.user).filter(pk=obj.pk).exists()
        status = ("status",) if owned else ("status", "owner")
        if obj is None or not campaign_has_published(obj):
            return status
        posted = request.POST if request.method == "POST" else {}
        return (*status, *(name for name in FIXED_AFTER_PUBLISH if name not in posted))

    def get_prepopulated_fields(self, request, obj=None):
        # The slug is fixed once published, and a read-only field cannot be prepopulated.
        return (
            super().get_prepopulated_fields(request, obj)
            if "slug" not in self.get_readonly_fields(request, obj)
            else {}
        )

    def save_model(self, request, obj, form, change):
        if not change:
            if obj.owner_id is None:  # a campaign nobody owns would be hidden from its own author
                obj.owner = request.user
            super().save_model(request, obj, form, change)
            return
        # Under the campaign's row lock and the same check, as for every other interface.
        campaign_update(
            campaign_id=obj.pk, changes={name: getattr(obj, name) for name in form.changed_data}, by=request.user
        )

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except (Conflict, OwnerOnly) as refused:  # published since the form's check, or money: nothing saved
            self.message_user(request, refused.message, messages.ERROR)
            return redirect(request.path)

    def get_urls(self):
        own = [
            path(
                "<int:campaign_id>/import/",
                self.admin_site.admin_view(self.import_view),
                name="annotation_campaign_import",
            )
        ]
        return own + super().get_urls()

    def import_view(self, request, campaign_id):
        """Upload a proposition file; problems are shown on the form, nothing is imported."""
        campaign = get_object_or_404(self.get_queryset(request), pk=campaign_id)
        if not self.has_change_permission(request, campaign):
            return redirect("admin:index")
        problems, summary = [], None
        form = ImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                summary = propositions_import(
                    campaign=campaign,
                    source=data["file"],
                    filename=data["file"].name,
                    format=data["format"],
                    delimiter=data["delimiter"] or "auto",
                    min_confidence=data["min_confidence"],
                    topics_source=data["topics"],
                    topics_filename=data["topics"].name if data["topics"] else "topics",
                    traps_source=data["traps"],
                    traps_filename=data["traps"].name if data["traps"] else "traps",
                    topic_key=data["topic"] or None,
                    user=request.user,
                )
            except ImportFailed as failure:
                problems = [failure.message, *failure.details]
            else:
                messages.success(
                    request, f"Imported {summary.kept} propositions from {summary.filename} ({summary.read_as})."
                )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "campaign": campaign,
            "form": form,
            "problems": problems,
            "summary": summary,
            "title": f"Import propositions into {campaign.name}",
            "change_url": reverse("admin:annotation_campaign_change", args=[campaign.pk]),
        }
        return TemplateResponse(request, "admin/annotation/campaign/import.html", context)


@admin.register(Topic)
class TopicAdmin(CampaignOwnedAdmin):
    campaign_path = "campaign"
    list_display = ("key", "campaign", "state", "description")
    list_select_related = ("campaign",)
    list_filter = ("state", "campaign")
    search_fields = ("key", "description")


@admin.register(Proposition)
class PropositionAdmin(CampaignOwnedAdmin):
    campaign_path = "topic__campaign"
    list_display = ("id", "subject", "relation", "object", "topic", "confidence", "trap_kind")
    list_filter = ("trap_kind", "topic__campaign")
    search_fields = ("subject", "relation", "object", "external_id")
    list_select_related = ("topic__campaign",)  # a topic is named with its campaign
    raw_id_fields = ("topic",)


class TaskItemInline(ScopedInline):
    model = TaskItem
    raw_id_fields = ("proposition",)
    extra = 0


@admin.register(Batch)
class BatchAdmin(CampaignOwnedAdmin):
    campaign_path = "topic__campaign"
    list_display = ("topic", "kind", "number", "status", "created_at", "published_at")
    list_select_related = ("topic__campaign",)
    list_filter = ("kind", "status")


@admin.register(Task)
class TaskAdmin(CampaignOwnedAdmin):
    campaign_path = "batch__topic__campaign"
    list_display = ("uuid", "kind", "batch", "position", "assignments_needed")
    list_select_related = ("batch__topic__campaign",)
    list_filter = ("kind",)
    search_fields = ("uuid",)
    inlines = [TaskItemInline]
    raw_id_fields = ("batch",)


@admin.register(ImportRecord)
class ImportRecordAdmin(CampaignOwnedAdmin):
    campaign_path = "campaign"
    list_display = ("filename", "campaign", "format", "created_by", "created_at")
    list_select_related = ("campaign", "created_by")
    list_filter = ("format",)
    readonly_fields = ("campaign", "filename", "format", "summary", "created_by", "created_at")


class CampaignMemberAdminForm(forms.ModelForm):
    """A collaborator is named by username, as on the settings page (the user field of a scoped
    admin offers only the user themself); the username is fixed once they are added."""

    username = forms.CharField(max_length=150, required=False, help_text="Who to add: their username (case-sensitive).")

    class Meta:
        model = CampaignMember
        fields = ("campaign", "username", "role")

    def clean_username(self):
        username = self.cleaned_data["username"].strip()
        if self.instance.pk is None and not username:
            raise forms.ValidationError("Name the user to add.", code="required")
        return username


@admin.register(CampaignMember)
class CampaignMemberAdmin(CampaignOwnedAdmin):
    """Everyone who sees a campaign sees its collaborators; only those who manage them (its
    owner, a superuser) add, change or remove one, and always through annotation.members, so
    the admin refuses what the settings page and the API refuse, with the same message."""

    campaign_path = "campaign"
    form = CampaignMemberAdminForm
    list_display = ("user", "campaign", "role", "added_by", "added_at")
    list_select_related = ("user", "campaign", "added_by")
    list_filter = ("role", "campaign")
    search_fields = ("user__username", "campaign__slug", "campaign__name")

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if request.user.is_superuser or request.method in READ_METHODS:
            return queryset
        return self._scoped(queryset, campaigns_owned_by(request.user))

    def _editable(self, request, obj):
        if obj is None or request.user.is_superuser:
            return True
        return campaigns_owned_by(request.user).filter(pk=obj.campaign_id).exists()

    def has_add_permission(self, request):
        return super().has_add_permission(request) and campaigns_owned_by(request.user).exists()

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "campaign" and not request.user.is_superuser:
            # Only the campaigns whose collaborators the user manages, not all they may edit.
            kwargs["queryset"] = campaigns_owned_by(request.user)
            return admin.ModelAdmin.formfield_for_foreignkey(self, db_field, request, **kwargs)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_fields(self, request, obj=None):
        return ("campaign", "username", "role") if obj is None else ("campaign", "user", "role", "added_by", "added_at")

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else ("campaign", "user", "added_by", "added_at")

    def save_model(self, request, obj, form, change):
        username = obj.user.get_username() if change else form.cleaned_data["username"]
        member, _ = member_set(campaign_id=obj.campaign_id, username=username, role=obj.role, by=request.user)
        obj.pk, obj.user, obj.added_by, obj.added_at = member.pk, member.user, member.added_by, member.added_at

    def delete_model(self, request, obj):
        member_remove(campaign_id=obj.campaign_id, user_id=obj.user_id, by=request.user)

    def delete_queryset(self, request, queryset):
        for member in queryset:
            self.delete_model(request, member)

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ApplicationError as refused:  # an unknown user, themselves, the owner: nothing saved
            self.message_user(request, refused.message, messages.ERROR)
            return redirect(request.get_full_path())
