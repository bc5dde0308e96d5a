"""REST representations of HITs and workers with their quality figures (serialize only)."""

from typing import Protocol, cast

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.models import Campaign
from config.errors import ApplicationError
from crowd.channels.links.links import link_url
from crowd.marketplaces.prolific.filters import prolific_filters_check
from crowd.models import HIT, ParticipantLink, Worker, WorkerQuality


class HITSerializer(serializers.ModelSerializer):
    task = serializers.UUIDField(source="task.uuid", read_only=True)
    topic = serializers.CharField(source="task.batch.topic.key", read_only=True)
    kind = serializers.CharField(source="task.kind", read_only=True)
    batch = serializers.IntegerField(source="task.batch.number", read_only=True, help_text="The batch's number.")
    assignments = serializers.IntegerField(source="assignment_count", read_only=True)

    class Meta:
        model = HIT
        fields = (
            "id",
            "hit_id",
            "hit_type_id",
            "environment",
            "status",
            "complete",
            "deleted",
            "max_assignments",
            "assignments",
            "reward",
            "created_at",
            "expires_at",
            "last_synced_at",
            "task",
            "topic",
            "kind",
            "batch",
        )
        read_only_fields = fields


class HITFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=HIT.Status.choices, required=False)
    complete = serializers.BooleanField(required=False)
    topic = serializers.CharField(required=False, max_length=100, help_text="A topic key.")


class WorkerQualitySerializer(serializers.ModelSerializer):
    status = serializers.ChoiceField(
        choices=WorkerQuality.Status.choices,
        read_only=True,
        help_text="The override if an admin set one, else the computed status.",
    )
    # Declared: DRF drops allow_blank from read-only model fields, and the schema would then refuse "".
    override_status = serializers.ChoiceField(
        choices=WorkerQuality.Status.choices,
        allow_blank=True,
        read_only=True,
        help_text='An admin\'s override of the computed status; "" when none.',
    )

    class Meta:
        model = WorkerQuality
        fields = (
            "labels",
            "items",
            "loo_r",
            "traps_seen",
            "traps_failed",
            "votes",
            "comparison_agreement",
            "untouched_orderings",
            "status",
            "computed_status",
            "override_status",
            "override_reason",
            "computed_at",
        )
        read_only_fields = fields


class _WorkerWithCampaignQualities(Protocol):
    campaign_qualities: list[WorkerQuality]  # Prefetch(to_attr=...) in CampaignWorkerViewSet


class WorkerFilterSerializer(serializers.Serializer):
    include = serializers.ChoiceField(
        choices=[("unconfirmed", "unconfirmed")],
        required=False,
        help_text="unconfirmed: also list workers none of whose answers here its channel confirmed (pending or "
        "unverified: ids anyone can type, counted nowhere).",
    )


class CampaignWorkerSerializer(serializers.ModelSerializer):
    blocked = serializers.BooleanField(
        source="blocked_here",
        read_only=True,
        help_text="Turned away from this campaign: blocked in a campaign of its owner, or banned from the site.",
    )
    confirmed = serializers.BooleanField(
        read_only=True, help_text="The channel confirmed at least one of the worker's answers in this campaign."
    )
    assignments = serializers.IntegerField(
        source="assignment_count", read_only=True, help_text="Assignments in this campaign."
    )
    quality = serializers.SerializerMethodField(help_text="Null until quality control has run.")

    class Meta:
        model = Worker
        fields = ("id", "external_id", "channel", "blocked", "confirmed", "assignments", "quality")
        read_only_fields = fields

    @extend_schema_field(WorkerQualitySerializer(allow_null=True))
    def get_quality(self, worker: Worker) -> dict | None:
        qualities = cast(_WorkerWithCampaignQualities, worker).campaign_qualities
        return WorkerQualitySerializer(qualities[0]).data if qualities else None


class ParticipantLinkSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    revoked = serializers.BooleanField(read_only=True)
    sessions = serializers.IntegerField(source="session_count", read_only=True)
    tasks_done = serializers.IntegerField(read_only=True)

    class Meta:
        model = ParticipantLink
        fields = ["id", "kind", "label", "url", "revoked", "revoked_at", "created_at", "sessions", "tasks_done"]
        read_only_fields = fields

    def get_url(self, link) -> str | None:
        """The link's address, for editors only: a personal link is its participant's identity."""
        if not self.context.get("may_edit", False):
            return None
        return link_url(link)


class LinksCreateSerializer(serializers.Serializer):
    """Personal links, one per label; or one open link (labels optional, joined as its label)."""

    kind = serializers.ChoiceField(choices=ParticipantLink.Kind.choices, default=ParticipantLink.Kind.PERSONAL)
    labels = serializers.ListField(
        child=serializers.CharField(max_length=200), max_length=500, required=False, default=list
    )

    def validate(self, data):
        if data["kind"] == ParticipantLink.Kind.PERSONAL and not data["labels"]:
            raise serializers.ValidationError({"labels": "Give one label per person to invite."})
        return data


class ChannelSerializer(serializers.Serializer):
    """Where a campaign recruits; changeable until something is published."""

    channel = serializers.ChoiceField(choices=Campaign.Channel.choices)
    environment = serializers.ChoiceField(choices=Campaign.Environment.choices, required=False)
    tasks_per_session = serializers.IntegerField(min_value=1, max_value=100, required=False)
    seconds_per_task = serializers.IntegerField(
        min_value=5,
        max_value=3600,
        required=False,
        help_text="Prolific: seconds one task takes, the estimate its minimum hourly pay is checked at.",
    )
    prolific_filters = serializers.JSONField(
        required=False,
        help_text="Prolific eligibility filters for every study, as Prolific's API takes them: "
        '[{"filter_id": ..., "selected_values": [...]} or {"filter_id": ..., "selected_range": '
        '{"lower": ..., "upper": ...}}]; [] for none.',
    )

    def validate_prolific_filters(self, value):
        try:
            return prolific_filters_check(value)
        except ApplicationError as error:
            raise serializers.ValidationError(error.message) from None
