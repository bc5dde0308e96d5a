"""REST representations of campaigns, topics, propositions and batches (serialize only)."""

from decimal import Decimal

from rest_framework import serializers

from annotation.importing.formats import FORMATS
from annotation.models import Batch, Campaign, Proposition, Topic
from crowd.marketplaces.registry import channel_offers
from dashboard.api.ranking_serializers import PropositionScoreSerializer

# What a researcher may set through the API, at creation and in a PATCH; once the campaign has
# published, annotation.campaigns refuses changes to the fixed ones (FIXED_AFTER_PUBLISH, 409).
# Status, marketplace environment and the production switch are deliberately not here.
CAMPAIGN_SETTINGS = (
    "name",
    "description",
    "question_template",
    "likert_reward",
    "comparison_reward",
    "assignments_per_hit",
    "budget_cap",
    "top_k",
    "pair_budget_fraction",
    "batch_pairs",
    "trap_rate",
    "hit_title",
    "comparison_hit_title",
    "hit_keywords",
    "consent_text",
)
_SETTINGS_LIMITS = {
    "likert_reward": {"min_value": Decimal("0.01")},
    "comparison_reward": {"min_value": Decimal("0.01")},
    "budget_cap": {"min_value": Decimal("0.00")},
    "assignments_per_hit": {"min_value": 1, "max_value": 100},
    "top_k": {"min_value": 2},
    "pair_budget_fraction": {"min_value": 0.0, "max_value": 1.0},
    "batch_pairs": {"min_value": 1},
    "trap_rate": {"min_value": 0.0, "max_value": 1.0},
}


class CampaignSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True, allow_null=True)
    topics = serializers.IntegerField(source="topic_count", read_only=True)
    mturk_environment = serializers.CharField(
        source="environment", read_only=True, help_text="Deprecated: the same as `environment`."
    )

    class Meta:
        model = Campaign
        fields = (
            "id",
            "slug",
            "status",
            "owner",
            "created_at",
            "topics",
            *CAMPAIGN_SETTINGS,
            "likert_group_size",
            "comparison_group_size",
            "channel",
            "environment",
            "mturk_environment",
            "production_enabled",
        )
        read_only_fields = fields


class CampaignCreateSerializer(serializers.ModelSerializer):
    """A new campaign: its slug, its channel (participant links unless given; fixed once it has
    published, changeable until then on PUT .../channel/) and its settings."""

    class Meta:
        model = Campaign
        fields = ("slug", "channel", *CAMPAIGN_SETTINGS)
        extra_kwargs = {
            **_SETTINGS_LIMITS,
            "channel": {"help_text": "Where workers come from: " + "; ".join(channel_offers()) + "."},
        }


class CampaignSettingsSerializer(serializers.ModelSerializer):
    """The settings a PATCH may change (the fixed ones only while the campaign is a draft)."""

    class Meta:
        model = Campaign
        fields = CAMPAIGN_SETTINGS
        extra_kwargs = _SETTINGS_LIMITS


class TopicSerializer(serializers.ModelSerializer):
    propositions = serializers.IntegerField(source="proposition_count", read_only=True)
    traps = serializers.IntegerField(source="trap_count", read_only=True)

    class Meta:
        model = Topic
        fields = ("key", "description", "state", "created_at", "propositions", "traps")
        read_only_fields = fields


class PropositionSerializer(serializers.ModelSerializer):
    text = serializers.CharField(read_only=True)
    score = PropositionScoreSerializer(read_only=True, allow_null=True)

    class Meta:
        model = Proposition
        fields = (
            "id",
            "text",
            "subject",
            "relation",
            "object",
            "confidence",
            "source",
            "external_id",
            "trap_kind",
            "created_at",
            "score",
        )
        read_only_fields = fields


class PropositionFilterSerializer(serializers.Serializer):
    trap_kind = serializers.ChoiceField(choices=Proposition.TrapKind.choices, required=False)
    search = serializers.CharField(required=False, max_length=500, help_text="Case-insensitive text search.")


class BatchSerializer(serializers.ModelSerializer):
    topic = serializers.CharField(source="topic.key", read_only=True)
    tasks = serializers.IntegerField(source="task_count", read_only=True)
    hits = serializers.IntegerField(source="hit_count", read_only=True, help_text="Tasks published as HITs.")
    assignments = serializers.IntegerField(source="assignment_count", read_only=True)

    class Meta:
        model = Batch
        fields = (
            "id",
            "topic",
            "kind",
            "number",
            "status",
            "created_at",
            "published_at",
            "held_reason",
            "completed_at",
            "tasks",
            "hits",
            "assignments",
        )
        read_only_fields = fields


class BatchFilterSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=Batch.Kind.choices, required=False)
    status = serializers.ChoiceField(choices=Batch.Status.choices, required=False)
    topic = serializers.CharField(required=False, max_length=100, help_text="A topic key.")


class PropositionImportSerializer(serializers.Serializer):
    file = serializers.FileField()
    topics = serializers.FileField(required=False)
    format = serializers.ChoiceField(choices=["auto", *FORMATS], default="auto")
    min_confidence = serializers.FloatField(default=0.5, min_value=0.0, max_value=1.0)
    topic = serializers.CharField(required=False, max_length=100)
