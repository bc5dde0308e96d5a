"""Admin for the crowd app, with the review actions: approve, reject with a reason, pay a
bonus, block a worker. Rejection, bonuses and blocks ask for a reason on an intermediate
page first; each selected row then goes through crowd.work.review, one at a time, and the admin
sees what succeeded and what was refused (and why)."""

from decimal import Decimal
from functools import partial

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.template.response import TemplateResponse

from annotation.admin_scope import CampaignOwnedAdmin
from annotation.campaigns import campaigns_editable_by
from annotation.models import Campaign
from config.errors import ApplicationError
from crowd.models import (
    HIT,
    Assignment,
    Bonus,
    Comparison,
    HITType,
    LedgerEntry,
    LikertLabel,
    Worker,
    WorkerDecision,
    WorkerQuality,
)
from crowd.work import review
from crowd.work.review import FEEDBACK_MAX

REASON_TEMPLATE = "admin/crowd/reason_form.html"


class RejectForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        max_length=FEEDBACK_MAX,
        help_text="Shown to the worker. Rejections lower the worker's approval rate: reject only clear fraud.",
    )


class BonusForm(forms.Form):
    amount = forms.DecimalField(
        min_value=Decimal("0.01"),
        max_digits=6,
        decimal_places=2,
        help_text="USD per assignment, before the channel's fee (MTurk adds 20 %); held to the budget cap.",
    )
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), max_length=FEEDBACK_MAX, help_text="Shown to the worker."
    )


class BlockForm(forms.Form):
    campaign = forms.ModelChoiceField(
        queryset=Campaign.objects.none(),  # those the user may change: see __init__
        help_text="Only workers who answered in this campaign. The block reaches every campaign of its owner, "
        "never another researcher's; it is also set at the marketplace's account only when the worker worked "
        "for nobody else there.",
    )
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), max_length=FEEDBACK_MAX, help_text="Not shown to the worker."
    )

    def __init__(self, data=None, *, user):
        super().__init__(data)
        self.fields["campaign"].queryset = campaigns_editable_by(user)  # type: ignore[attr-defined]


def _apply_each(modeladmin, request, queryset, apply) -> None:
    """Run `apply(row)` per selected row and report successes and refusals."""
    done, refused = 0, []
    for row in queryset:
        try:
            apply(row)
            done += 1
        except ApplicationError as error:
            refused.append(f"{row}: {error.message}")
    if done:
        modeladmin.message_user(request, f"{done} done.", messages.SUCCESS)
    for message in refused:
        modeladmin.message_user(request, message, messages.ERROR)


def _with_form(modeladmin, request, queryset, *, form_class, title: str, apply):
    """The intermediate page: show the form; once it is posted valid, apply it to each row."""
    form = form_class(request.POST if "apply" in request.POST else None)
    if form.is_bound and form.is_valid():
        _apply_each(modeladmin, request, queryset, lambda row: apply(row, form.cleaned_data))
        return None
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": title,
        "form": form,
        "queryset": queryset,
        "action": request.POST["action"],
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "opts": modeladmin.model._meta,
    }
    return TemplateResponse(request, REASON_TEMPLATE, context)


@admin.action(description="Approve selected assignments (and pay them)")
def approve_assignments(modeladmin, request, queryset):
    def approve(assignment):
        if not review.assignment_approve(assignment_id=assignment.pk):
            raise ApplicationError("the marketplace does not allow the approval yet; the next sync retries it")

    _apply_each(modeladmin, request, queryset, approve)


@admin.action(description="Reject selected assignments, with a reason…")
def reject_assignments(modeladmin, request, queryset):
    return _with_form(
        modeladmin,
        request,
        queryset,
        form_class=RejectForm,
        title="Reject assignments",
        apply=lambda row, data: review.assignment_reject(
            assignment_id=row.pk, reason=data["reason"], decided_by=request.user
        ),
    )


@admin.action(description="Pay a bonus on selected assignments…")
def bonus_assignments(modeladmin, request, queryset):
    return _with_form(
        modeladmin,
        request,
        queryset,
        form_class=BonusForm,
        title="Pay a bonus",
        apply=lambda row, data: review.bonus_grant(
            assignment_id=row.pk, amount=data["amount"], reason=data["reason"], decided_by=request.user
        ),
    )


@admin.action(description="Block selected workers, with a reason…")
def block_workers(modeladmin, request, queryset):
    return _with_form(
        modeladmin,
        request,
        queryset,
        form_class=partial(BlockForm, user=request.user),
        title="Block workers",
        apply=lambda row, data: review.worker_block(
            worker_id=row.pk, campaign_id=data["campaign"].pk, reason=data["reason"], decided_by=request.user
        ),
    )


@admin.action(description="Unblock selected workers, with a reason…")
def unblock_workers(modeladmin, request, queryset):
    return _with_form(
        modeladmin,
        request,
        queryset,
        form_class=partial(BlockForm, user=request.user),
        title="Unblock workers",
        apply=lambda row, data: review.worker_unblock(
            worker_id=row.pk, campaign_id=data["campaign"].pk, reason=data["reason"], decided_by=request.user
        ),
    )


@admin.register(Worker)
class WorkerAdmin(CampaignOwnedAdmin):
    """A worker is shared by every campaign they worked in: a researcher sees those who worked in
    theirs and may block them from their own campaigns (crowd.work.review.worker_block), but only
    a superuser adds, edits or deletes the row all campaigns share, or bans (`blocked`) a worker
    from the whole site."""

    campaign_path = "assignments__task__batch__topic__campaign"
    list_display = ("external_id", "channel", "blocked", "created_at")
    list_filter = ("channel", "blocked")
    search_fields = ("external_id",)
    actions = [block_workers, unblock_workers]

    def has_add_permission(self, request):
        return request.user.is_superuser

    def has_change_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser


@admin.register(WorkerQuality)
class WorkerQualityAdmin(CampaignOwnedAdmin):
    campaign_path = "campaign"
    list_display = (
        "worker",
        "campaign",
        "labels",
        "loo_r",
        "traps_seen",
        "traps_failed",
        "comparison_agreement",
        "computed_status",
        "override_status",
    )
    list_select_related = ("worker", "campaign")
    list_filter = ("campaign", "computed_status", "override_status")
    search_fields = ("worker__external_id",)


@admin.register(WorkerDecision)
class WorkerDecisionAdmin(CampaignOwnedAdmin):
    campaign_path = "campaign"
    list_display = ("worker", "campaign", "action", "reason", "decided_by", "created_at")
    list_select_related = ("worker", "campaign", "decided_by")
    list_filter = ("action", "campaign")


@admin.register(HITType)
class HITTypeAdmin(CampaignOwnedAdmin):
    campaign_path = "campaign"
    list_display = ("hit_type_id", "campaign", "kind", "environment", "created_at")
    list_select_related = ("campaign",)


@admin.register(HIT)
class HITAdmin(CampaignOwnedAdmin):
    campaign_path = "task__batch__topic__campaign"
    list_display = ("hit_id", "environment", "status", "max_assignments", "reward", "complete", "created_at")
    list_filter = ("environment", "status", "complete")
    search_fields = ("hit_id",)
    raw_id_fields = ("task",)


@admin.register(Assignment)
class AssignmentAdmin(CampaignOwnedAdmin):
    campaign_path = "task__batch__topic__campaign"
    list_display = ("assignment_id", "worker", "status", "verification", "submitted_at", "time_on_task_ms")
    list_select_related = ("worker",)
    list_filter = ("status", "verification")
    search_fields = ("assignment_id", "worker__external_id")
    raw_id_fields = ("task", "hit", "worker")
    actions = [approve_assignments, reject_assignments, bonus_assignments]


@admin.register(LikertLabel)
class LikertLabelAdmin(CampaignOwnedAdmin):
    campaign_path = "assignment__task__batch__topic__campaign"
    list_display = ("assignment", "worker", "proposition", "score")
    list_select_related = ("assignment__worker", "worker", "proposition")  # an assignment is named with its worker
    raw_id_fields = ("assignment", "worker", "proposition")


@admin.register(Comparison)
class ComparisonAdmin(CampaignOwnedAdmin):
    campaign_path = "assignment__task__batch__topic__campaign"
    list_display = ("assignment", "worker", "winner", "loser")
    list_select_related = ("assignment__worker", "worker", "winner", "loser")
    raw_id_fields = ("assignment", "worker", "winner", "loser")


@admin.register(LedgerEntry)
class LedgerEntryAdmin(CampaignOwnedAdmin):
    campaign_path = "campaign"
    list_display = ("campaign", "kind", "amount", "reference", "created_at")
    list_select_related = ("campaign",)
    list_filter = ("kind", "campaign")


@admin.register(Bonus)
class BonusAdmin(CampaignOwnedAdmin):
    campaign_path = "assignment__task__batch__topic__campaign"
    list_display = ("assignment", "amount", "reason", "sent_at")
    list_select_related = ("assignment__worker",)
