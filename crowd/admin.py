from django.contrib import admin

from crowd.models import HIT, Assignment, Bonus, Comparison, HITType, LedgerEntry, LikertLabel, Worker, WorkerDecision, WorkerQuality


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ("external_id", "channel", "blocked", "created_at")
    list_filter = ("channel", "blocked")
    search_fields = ("external_id",)


@admin.register(WorkerQuality)
class WorkerQualityAdmin(admin.ModelAdmin):
    list_display = ("worker", "campaign", "labels", "loo_r", "traps_seen", "traps_failed", "comparison_agreement", "computed_status", "override_status")
    list_filter = ("campaign", "computed_status", "override_status")
    search_fields = ("worker__external_id",)


@admin.register(WorkerDecision)
class WorkerDecisionAdmin(admin.ModelAdmin):
    list_display = ("worker", "campaign", "action", "reason", "decided_by", "created_at")
    list_filter = ("action", "campaign")


@admin.register(HITType)
class HITTypeAdmin(admin.ModelAdmin):
    list_display = ("hit_type_id", "campaign", "kind", "environment", "created_at")


@admin.register(HIT)
class HITAdmin(admin.ModelAdmin):
    list_display = ("hit_id", "environment", "status", "max_assignments", "reward", "complete", "created_at")
    list_filter = ("environment", "status", "complete")
    search_fields = ("hit_id",)
    raw_id_fields = ("task",)


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("assignment_id", "worker", "status", "verification", "submitted_at", "time_on_task_ms")
    list_filter = ("status", "verification")
    search_fields = ("assignment_id", "worker__external_id")
    raw_id_fields = ("task", "hit", "worker")


@admin.register(LikertLabel)
class LikertLabelAdmin(admin.ModelAdmin):
    list_display = ("assignment", "worker", "proposition", "score")
    raw_id_fields = ("assignment", "worker", "proposition")


@admin.register(Comparison)
class ComparisonAdmin(admin.ModelAdmin):
    list_display = ("assignment", "worker", "winner", "loser")
    raw_id_fields = ("assignment", "worker", "winner", "loser")


@admin.register(LedgerEntry)
class LedgerEntryAdmin(admin.ModelAdmin):
    list_display = ("campaign", "kind", "amount", "reference", "created_at")
    list_filter = ("kind", "campaign")


@admin.register(Bonus)
class BonusAdmin(admin.ModelAdmin):
    list_display = ("assignment", "amount", "reason", "sent_at")
