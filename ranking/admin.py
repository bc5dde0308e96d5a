from django.contrib import admin

from annotation.admin_scope import CampaignOwnedAdmin
from ranking.models import PropositionScore, RankingSnapshot


@admin.register(PropositionScore)
class PropositionScoreAdmin(CampaignOwnedAdmin):
    campaign_path = "proposition__topic__campaign"
    list_display = ("proposition", "rank", "likert_mean", "likert_n", "mu", "sigma", "comparisons", "in_comparisons")
    list_select_related = ("proposition",)
    list_filter = ("in_comparisons",)
    raw_id_fields = ("proposition",)


@admin.register(RankingSnapshot)
class RankingSnapshotAdmin(CampaignOwnedAdmin):
    campaign_path = "topic__campaign"
    list_display = ("topic", "number", "comparisons_used", "spearman_previous", "entered_top", "left_top", "created_at")
    list_select_related = ("topic__campaign",)
    list_filter = ("topic__campaign",)

    def get_queryset(self, request):
        # A refit's whole ranking (tens of kB at 1,750 propositions) is read only on its own page.
        return super().get_queryset(request).defer("ranking")
