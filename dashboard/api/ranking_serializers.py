"""REST representations of scores, rankings and refit snapshots (serialize only)."""

from rest_framework import serializers

from annotation.text import proposition_text
from ranking.export import CONCEPT_MAP_EXTENSION, FORMATS
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


class TopicRankingSerializer(serializers.Serializer):
    """A page of the ranking (`config.pagination.Pages`), with the topic's refits."""

    topic = serializers.CharField()
    state = serializers.CharField()
    count = serializers.IntegerField(help_text="Propositions in the ranking (up to `top`).")
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = RankingRowSerializer(many=True)
    snapshots = RankingSnapshotSerializer(many=True)


class RankingQuerySerializer(serializers.Serializer):
    # A bound far above any topic, so the cut stays a number the database can take.
    top = serializers.IntegerField(
        required=False, min_value=1, max_value=10_000_000, help_text="Only the best N propositions."
    )


class ExportQuerySerializer(RankingQuerySerializer):
    format = serializers.ChoiceField(
        choices=(*FORMATS, CONCEPT_MAP_EXTENSION),
        default="csv",
        help_text="csv (spreadsheet-safe: a text cell starting with =, +, -, @, a tab or a CR gets a leading '), "
        "tsv or jsonl (exact text), or cmap: the concept map in the format of the corpus's evaluation scripts, "
        "subject<TAB>relation<TAB>object per line, no header, the top 50 unless `top` says otherwise.",
    )
