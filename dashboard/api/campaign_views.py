"""REST endpoints of the annotation app (thin: parse, call the job module, render).

Every route under `campaigns/<slug>/` resolves the campaign through
`annotation.access.campaign_for_request`, so another researcher's campaign is a 404, never a
403; a collaborator with the `view` role reads everything and changes nothing (403).
"""

from typing import TYPE_CHECKING

from django.db.models import Count, F, Func, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.shortcuts import get_object_or_404
from django.utils.functional import cached_property
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import campaign_for_request
from annotation.campaigns import campaign_create, campaign_update, campaigns_visible_to
from annotation.importing.importers import ImportFailed, propositions_import
from annotation.models import Batch, Campaign, Proposition, Task, Topic
from annotation.text import normalize_text
from crowd.channels.settings import campaign_rewards_fit
from crowd.models import HIT, Assignment
from dashboard.api.campaign_serializers import (
    BatchFilterSerializer,
    BatchSerializer,
    CampaignCreateSerializer,
    CampaignSerializer,
    CampaignSettingsSerializer,
    PropositionFilterSerializer,
    PropositionImportSerializer,
    PropositionSerializer,
    TopicSerializer,
)

if TYPE_CHECKING:
    _View = APIView  # what the mixins below are combined with; a plain mixin at run time
else:
    _View = object


def rows_counted(queryset: QuerySet, field: str = "pk") -> Coalesce:
    """How many rows of `queryset` (filtered on an OuterRef) have `field` set, as a correlated
    subquery: a list counts for the rows of its page only, never over the whole campaign, and
    its pagination count stays a plain COUNT."""
    counts = queryset.order_by().annotate(rows=Func(F(field), function="COUNT")).values("rows")
    return Coalesce(Subquery(counts, output_field=IntegerField()), 0)


def counted_by(rows: QuerySet, key: str, keys: list[int]) -> dict[int, int]:
    """How many of `rows` each of `keys` has (`key`: the field that names it), in one grouped
    query: a list's counts for the rows of its page, after the page is cut."""
    grouped = rows.filter(**{f"{key}__in": keys}).order_by().values(key).annotate(n=Count("pk"))
    return dict(grouped.values_list(key, "n"))


class CampaignScoped(_View):
    """A view under `campaigns/<campaign_slug>/`: the campaign if the user may see it, else 404
    (403 for a request that changes it by a user who only views it)."""

    @cached_property
    def campaign(self) -> Campaign:
        return campaign_for_request(self.request, self.kwargs["campaign_slug"])

    def initial(self, request, *args, **kwargs):
        """Access first: an outsider's or a viewer's request is refused before its body is read."""
        super().initial(request, *args, **kwargs)
        self.campaign  # noqa: B018

    def validated_query(self, serializer_class) -> dict:
        """The validated query parameters (400 with the field errors otherwise). A plain dict,
        so a missing boolean stays missing instead of reading as an unticked checkbox."""
        params = serializer_class(data=self.request.query_params.dict())
        params.is_valid(raise_exception=True)
        return params.validated_data


class TopicScoped(CampaignScoped):
    """A view under `campaigns/<campaign_slug>/topics/<topic_key>/`."""

    @cached_property
    def topic(self) -> Topic:
        return get_object_or_404(Topic, campaign=self.campaign, key=self.kwargs["topic_key"])


@extend_schema(tags=["campaigns"])
@extend_schema_view(
    create=extend_schema(request=CampaignCreateSerializer, responses={201: CampaignSerializer}),
    partial_update=extend_schema(
        request=CampaignSettingsSerializer,
        responses={200: CampaignSerializer},
        description="Change a campaign's settings. Once it has published, a change to a setting that "
        "decides what its work asks, pays or accepts (rewards, assignments per HIT, channel, ...) is a 409 "
        "naming those settings; name, description and budget cap stay open.",
    ),
)
class CampaignViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet
):
    """The researcher's campaigns (a superuser sees all)."""

    queryset = Campaign.objects.none()
    serializer_class = CampaignSerializer
    lookup_field = "slug"
    lookup_value_converter = "slug"

    def get_queryset(self):
        return (
            campaigns_visible_to(self.request.user)
            .select_related("owner")
            .annotate(topic_count=Count("topics"))
            .order_by("-created_at", "-id")
        )

    def create(self, request, *args, **kwargs):
        form = CampaignCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        campaign = campaign_create(owner=request.user, **form.validated_data)
        campaign_rewards_fit(campaign=campaign)  # a channel's pay floor: the rewards answered are the ones stored
        body = CampaignSerializer(self.get_queryset().get(pk=campaign.pk)).data
        return Response(body, status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        campaign = campaign_for_request(request, kwargs["slug"])
        form = CampaignSettingsSerializer(campaign, data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        campaign_update(campaign_id=campaign.pk, changes=form.validated_data, by=request.user)
        return Response(CampaignSerializer(self.get_queryset().get(pk=campaign.pk)).data)


@extend_schema(tags=["topics"])
class TopicViewSet(CampaignScoped, viewsets.ReadOnlyModelViewSet):
    """A campaign's topics with their pipeline state and proposition counts."""

    queryset = Topic.objects.none()
    serializer_class = TopicSerializer
    lookup_field = "key"
    lookup_url_kwarg = "topic_key"
    lookup_value_converter = "topic_key"

    def get_queryset(self):
        propositions = Proposition.objects.filter(topic=OuterRef("pk"))
        return (
            Topic.objects.filter(campaign=self.campaign)
            .annotate(
                proposition_count=rows_counted(propositions.filter(trap_kind=Proposition.TrapKind.NONE)),
                trap_count=rows_counted(
                    propositions.filter(trap_kind__in=[Proposition.TrapKind.OBVIOUS, Proposition.TrapKind.SUBTLE])
                ),
            )
            .order_by("key")
        )


@extend_schema(tags=["propositions"])
@extend_schema_view(list=extend_schema(parameters=[PropositionFilterSerializer]))
class PropositionViewSet(TopicScoped, mixins.ListModelMixin, viewsets.GenericViewSet):
    """A topic's propositions with their current scores (null before the first aggregation)."""

    queryset = Proposition.objects.none()
    serializer_class = PropositionSerializer

    def get_queryset(self):
        filters = self.validated_query(PropositionFilterSerializer)
        propositions = Proposition.objects.filter(topic=self.topic).select_related("score").order_by("id")
        if "trap_kind" in filters:
            propositions = propositions.filter(trap_kind=filters["trap_kind"])
        if filters.get("search"):
            propositions = propositions.filter(normalized__contains=normalize_text(filters["search"]))
        return propositions


@extend_schema(tags=["batches"])
@extend_schema_view(list=extend_schema(parameters=[BatchFilterSerializer]))
class BatchViewSet(CampaignScoped, mixins.ListModelMixin, viewsets.GenericViewSet):
    """A campaign's batches with how many of their tasks were published and answered."""

    queryset = Batch.objects.none()
    serializer_class = BatchSerializer

    def get_queryset(self):
        filters = self.validated_query(BatchFilterSerializer)
        batches = (
            Batch.objects.filter(topic__campaign=self.campaign)
            .select_related("topic")
            .order_by("topic__key", "kind", "number", "pk")
        )
        if "kind" in filters:
            batches = batches.filter(kind=filters["kind"])
        if "status" in filters:
            batches = batches.filter(status=filters["status"])
        if "topic" in filters:
            batches = batches.filter(topic__key=filters["topic"])
        return batches

    def paginate_queryset(self, queryset):
        """The page's batches with their counts of tasks, HITs and answers, counted for the
        page's batches at once, a query each, after the page is cut: as correlated subqueries
        per batch the planner could choose a hash join over every HIT and answer of the
        database for each row of the page (0.3 s at 30 topics × 1,750 propositions)."""
        page = super().paginate_queryset(queryset)
        batches = page if page is not None else list(queryset)
        ids = [batch.pk for batch in batches]
        counts = [
            counted_by(Task.objects.all(), "batch_id", ids),
            counted_by(HIT.objects.all(), "task__batch_id", ids),
            counted_by(Assignment.objects.all(), "task__batch_id", ids),
        ]
        for batch in batches:  # what the serializer reads (BatchSerializer)
            for name, count in zip(("task_count", "hit_count", "assignment_count"), counts, strict=True):
                setattr(batch, name, count.get(batch.pk, 0))
        return page


class PropositionImportView(APIView):
    """Import a proposition file into a campaign; 400 with the list of problems if invalid."""

    parser_classes = [MultiPartParser]

    @extend_schema(
        tags=["propositions"],
        request={"multipart/form-data": PropositionImportSerializer},
        responses={201: dict, 400: dict},
    )
    def post(self, request, slug):
        campaign = campaign_for_request(request, slug)
        form = PropositionImportSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        topics = data.get("topics")
        try:
            summary = propositions_import(
                campaign=campaign,
                source=data["file"],
                filename=data["file"].name,
                format=data["format"],
                min_confidence=data["min_confidence"],
                topics_source=topics,
                topics_filename=topics.name if topics else "topics",
                topic_key=data.get("topic"),
                user=request.user,
            )
        except ImportFailed as failure:
            return Response(
                {"code": failure.code, "message": failure.message, "problems": failure.details},
                status=status.HTTP_400_BAD_REQUEST,
            )
        return Response(summary.as_dict(), status=status.HTTP_201_CREATED)
