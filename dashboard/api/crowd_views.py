"""REST endpoints of the crowd app: a campaign's HITs, its workers, its participant links (thin)."""

from django.db.models import Count, Exists, OuterRef, Prefetch, Q
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import user_may_edit
from annotation.models import Task
from crowd.channels import settings as channels
from crowd.channels.links import links
from crowd.marketplaces.prolific.filters import campaign_prolific_filters
from crowd.marketplaces.prolific.study_opening import seconds_per_task
from crowd.models import HIT, Assignment, AssignmentQuerySet, ParticipantLink, Worker, WorkerBlock, WorkerQuality
from dashboard.api.campaign_views import CampaignScoped, counted_by, rows_counted
from dashboard.api.crowd_serializers import (
    CampaignWorkerSerializer,
    ChannelSerializer,
    HITFilterSerializer,
    HITSerializer,
    LinksCreateSerializer,
    ParticipantLinkSerializer,
    WorkerFilterSerializer,
)


@extend_schema(tags=["hits"])
@extend_schema_view(list=extend_schema(parameters=[HITFilterSerializer]))
class HITViewSet(CampaignScoped, mixins.ListModelMixin, viewsets.GenericViewSet):
    """A campaign's HITs with the assignments stored for each."""

    queryset = HIT.objects.none()
    serializer_class = HITSerializer

    def get_queryset(self):
        filters = self.validated_query(HITFilterSerializer)
        hits = (
            HIT.objects.filter(task__batch__topic__campaign=self.campaign)
            .select_related("task__batch__topic")
            .annotate(assignment_count=rows_counted(Assignment.objects.filter(hit=OuterRef("pk"))))
            .order_by("created_at", "id")
        )
        if "status" in filters:
            hits = hits.filter(status=filters["status"])
        if "complete" in filters:
            hits = hits.filter(complete=filters["complete"])
        if "topic" in filters:
            hits = hits.filter(task__batch__topic__key=filters["topic"])
        return hits


@extend_schema(tags=["workers"])
@extend_schema_view(list=extend_schema(parameters=[WorkerFilterSerializer]))
class CampaignWorkerViewSet(CampaignScoped, mixins.ListModelMixin, viewsets.GenericViewSet):
    """Workers with an answer in the campaign its channel confirmed, with their quality figures;
    `?include=unconfirmed` adds those whose answers no channel confirmed (`confirmed: false`)."""

    queryset = Worker.objects.none()
    serializer_class = CampaignWorkerSerializer

    def get_queryset(self):
        # The campaign's assignments reached through its tasks: each worker's are checked by
        # index, task → batch → topic, stopping at the first of the campaign. Asked by the
        # assignment's campaign, the planner hashed the campaign's batches and topics once per
        # worker instead (15 s for the 6,000 workers of 300 topics).
        filters = self.validated_query(WorkerFilterSerializer)
        tasks = Task.objects.filter(batch__topic__campaign=self.campaign).values("pk")
        answers: AssignmentQuerySet = Assignment.objects.filter(task_id__in=tasks)
        confirmed = answers.confirmed().filter(worker_id=OuterRef("pk"))
        # By default only workers the channel confirmed: an unconfirmed id is anyone's to type.
        stored = answers if filters.get("include") == "unconfirmed" else answers.confirmed()
        return (
            Worker.objects.filter(pk__in=stored.values("worker_id"))
            .annotate(
                confirmed=Exists(confirmed),
                blocked_here=Q(blocked=True)
                | Exists(WorkerBlock.objects.reaching(self.campaign).filter(worker_id=OuterRef("pk"))),
            )
            .prefetch_related(
                Prefetch(
                    "qualities",
                    queryset=WorkerQuality.objects.filter(campaign=self.campaign),
                    to_attr="campaign_qualities",
                )
            )
            .order_by("external_id", "id")
        )

    def paginate_queryset(self, queryset):
        """The page's workers with their assignment counts, in one grouped query for the page
        (a count per worker row would walk each worker's assignments in every campaign)."""
        workers = super().paginate_queryset(queryset) or []
        in_campaign = Assignment.objects.filter(task__batch__topic__campaign=self.campaign)
        counts = counted_by(in_campaign, "worker_id", [worker.pk for worker in workers])
        for worker in workers:
            worker.assignment_count = counts.get(worker.pk, 0)
        return workers


@extend_schema(tags=["links"])
@extend_schema_view(
    # The links just made, as a plain array: a serializer with many=True would be documented as
    # a paginated page, which this answer is not.
    create=extend_schema(
        request=LinksCreateSerializer,
        responses={201: {"type": "array", "items": {"$ref": "#/components/schemas/ParticipantLink"}}},
    )
)
class ParticipantLinkViewSet(CampaignScoped, mixins.ListModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet):
    """A participant-links campaign's links, with sessions and tasks done through each;
    create personal links (one per label) or an open one; revoke a link."""

    queryset = ParticipantLink.objects.none()
    serializer_class = ParticipantLinkSerializer
    lookup_value_converter = "int"  # /links/abc/revoke/ is a 404, and the schema types the id

    def get_queryset(self):
        return (
            self.campaign.participant_links.annotate(
                session_count=Count("sessions", distinct=True),
                tasks_done=Count(
                    "sessions__holds", filter=Q(sessions__holds__submitted_at__isnull=False), distinct=True
                ),
            )
            .select_related("campaign")
            .order_by("created_at", "id")
        )

    def get_serializer_context(self):
        # A personal link is its participant's identity: its address only for editors.
        return {**super().get_serializer_context(), "may_edit": user_may_edit(self.request.user, self.campaign)}

    def create(self, request, *args, **kwargs):
        body = LinksCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        made = links.links_issue(
            campaign=self.campaign, kind=data["kind"], labels=data["labels"], created_by=request.user
        )
        created = self.get_queryset().filter(pk__in=[link.pk for link in made])
        context = self.get_serializer_context()
        return Response(
            ParticipantLinkSerializer(created, many=True, context=context).data, status=status.HTTP_201_CREATED
        )

    @extend_schema(request=None, responses={200: ParticipantLinkSerializer})
    @action(detail=True, methods=["post"])
    def revoke(self, request, *args, **kwargs):
        link = get_object_or_404(self.campaign.participant_links, pk=self.kwargs["pk"])
        links.link_revoke(link=link)
        context = self.get_serializer_context()
        return Response(ParticipantLinkSerializer(self.get_queryset().get(pk=link.pk), context=context).data)


@extend_schema(tags=["campaigns"])
class CampaignChannelView(CampaignScoped, APIView):
    """The campaign's channel (mturk, prolific or links), its environment, and the tasks per
    session; a change is refused (409) once anything was published."""

    @extend_schema(responses={200: ChannelSerializer})
    def get(self, request, campaign_slug):
        return Response(self._state())

    @extend_schema(request=ChannelSerializer, responses={200: ChannelSerializer})
    def put(self, request, campaign_slug):
        body = ChannelSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        self.campaign = channels.channel_settings_set(campaign=self.campaign, **body.validated_data)
        return Response(self._state())

    def _state(self) -> dict:
        return {
            "channel": self.campaign.channel,
            "environment": self.campaign.environment,
            "tasks_per_session": self.campaign.tasks_per_session,
            "seconds_per_task": seconds_per_task(self.campaign),
            "prolific_filters": campaign_prolific_filters(self.campaign),
        }
