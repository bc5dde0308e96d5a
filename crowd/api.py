"""REST endpoints of the crowd app: a campaign's HITs and its workers (read-only, thin)."""

from django.db.models import Count, Prefetch
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, viewsets

from annotation.api import CampaignScoped
from crowd.models import HIT, Worker, WorkerQuality
from crowd.serializers import CampaignWorkerSerializer, HITFilterSerializer, HITSerializer


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
            .annotate(assignment_count=Count("assignments"))
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
class CampaignWorkerViewSet(CampaignScoped, mixins.ListModelMixin, viewsets.GenericViewSet):
    """Workers who submitted at least one assignment in the campaign, with their quality figures."""

    queryset = Worker.objects.none()
    serializer_class = CampaignWorkerSerializer

    def get_queryset(self):
        # Filtering and counting through the same join: one row per worker, campaign assignments only.
        return (
            Worker.objects.filter(assignments__task__batch__topic__campaign=self.campaign)
            .annotate(assignment_count=Count("assignments"))
            .prefetch_related(
                Prefetch(
                    "qualities",
                    queryset=WorkerQuality.objects.filter(campaign=self.campaign),
                    to_attr="campaign_qualities",
                )
            )
            .order_by("external_id", "id")
        )
