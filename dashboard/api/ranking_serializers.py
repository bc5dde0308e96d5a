"""REST representations of scores, rankings and refit snapshots (serialize only)."""

from rest_framework import serializers

from annotation.text import proposition_text
from ranking.export import FORMATS, TOP_PROPOSITIONS_FORMAT
from ranking.models import PropositionScore, RankingSnapshot


class PropositionScoreSerializer(serializers.ModelSerializer):
    class Meta:
        model = PropositionScore
        fields = ("rank", "likert_mean", "likert_n", "mu", "sigma", "comparisons", "in_comparisons", "updated_at")
        read_only_fields = fields


class RankingRowSerializer(serializers.Serializer):
    """One row of `ranking.export.ranking_rows`, best first."""

    rank = serializers.IntegerField()
    id = serializers.IntegerField()
    external_id = serializers.CharField()
    text = serializers.SerializerMethodField()
    subject = serializers.CharField()
    relation = serializers.CharField()
    object = serializers.CharField()
    likert_mean = serializers.FloatField(allow_null=True)
    likert_n = serializers.IntegerField()
    mu = serializers.FloatField(allow_null=True)
    sigma = serializers.FloatField(allow_null=True)
    conservative = serializers.FloatField(allow_null=True, help_text="μ − 3σ: a lower bound on the skill.")
    comparisons = serializers.IntegerField()
    in_comparisons = serializers.BooleanField()
    tie_rank = serializers.IntegerField(
        help_text="The rank shared by the propositions tied with this one (same μ and σ, or outside the "
        "comparison rounds the same Likert mean): the best of theirs, as in 1, 2, 2, 4. Equals rank when not tied."
    )
    tie_size = serializers.IntegerField(help_text="How many propositions share tie_rank: 1 when not tied.")

    def get_text(self, row: dict) -> str:
        return proposition_text(row["subject"], row["relation"], row["object"])


class RankingSnapshotSerializer(serializers.ModelSerializer):
    class Meta:
        model = RankingSnapshot
        fields = ("number", "comparisons_used", "spearman_previous", "entered_top", "left_top", "created_at")
        read_only_fields = fields


class StoppingSerializer(serializers.Serializer):
    """Why the topic's comparison rounds stopped, or where they stand (ranking.stopping)."""

    reason = serializers.ChoiceField(choices=["settled", "budget", "too_few", "running", "not_started"])
    sentence = serializers.CharField()
    spearman_previous = serializers.FloatField(allow_null=True, help_text="The latest refit's ρ with the one before.")
    stop_spearman = serializers.FloatField(help_text="The ρ at which the ranking counts as settled.")
    pairs_asked = serializers.IntegerField()
    pair_budget = serializers.IntegerField(allow_null=True, help_text="Extensions included; null before the top-k.")
    pairs_added = serializers.IntegerField(help_text="Pairs added to the budget by extensions.")
    likert_spearman = serializers.FloatField(
        allow_null=True, help_text="Spearman ρ of the final order with the Likert-only order (compared propositions)."
    )
    votes_per_item = serializers.FloatField(allow_null=True, help_text="Comparison votes per compared proposition.")
    extendable = serializers.BooleanField(help_text="The pair budget can still be extended (the topic is not done).")


class TopicRankingSerializer(serializers.Serializer):
    """A page of the ranking (`config.pagination.Pages`), with the topic's refits."""

    topic = serializers.CharField()
    state = serializers.CharField()
    count = serializers.IntegerField(help_text="Propositions in the ranking (up to `top`).")
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = RankingRowSerializer(many=True)
    snapshots = RankingSnapshotSerializer(many=True)
    stopping = StoppingSerializer()


class RankingQuerySerializer(serializers.Serializer):
    # A bound far above any topic, so the cut stays a number the database can take.
    top = serializers.IntegerField(
        required=False, min_value=1, max_value=10_000_000, help_text="Only the best N propositions."
    )


class ExportQuerySerializer(RankingQuerySerializer):
    format = serializers.ChoiceField(
        choices=(*FORMATS, TOP_PROPOSITIONS_FORMAT),
        default="csv",
        help_text="csv (spreadsheet-safe: a text cell starting with =, +, -, @, a tab or a CR gets a leading '), "
        "tsv or jsonl (exact text), or top50: the top propositions as subject<TAB>relation<TAB>object per line, "
        "no header, the top 50 unless `top` says otherwise (the input of a concept map, not one).",
    )
