"""REST endpoints of the ranking app: a topic's ranking as JSON and as a download, and every
topic of a campaign in one zip (thin)."""

from django.http import FileResponse, HttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from config.pagination import Pages
from dashboard.api.campaign_views import CampaignScoped, TopicScoped
from dashboard.api.ranking_serializers import ExportQuerySerializer, RankingQuerySerializer, TopicRankingSerializer
from ranking import export
from ranking.bundle import bundle_filename, campaign_bundle_file
from ranking.pipeline import TOP_FOR_CONCEPT_MAPS
from ranking.stopping import topic_stopping

PAGE_PARAMETERS = [
    OpenApiParameter("page", int, description="A page number within the ranking."),
    OpenApiParameter("page_size", int, description=Pages.page_size_query_description),
]
EXPORT_CONTENT_TYPES = {
    "csv": "text/csv",
    "tsv": "text/tab-separated-values",
    "jsonl": "application/jsonl",
    export.TOP_PROPOSITIONS_FORMAT: "text/tab-separated-values",
}


class TopicRankingView(TopicScoped, APIView):
    """The topic's ranking, best first (traps left out), in pages like the other lists
    (`results`, `count`, `next`, `previous`), and one snapshot per TrueSkill refit."""

    @extend_schema(
        tags=["rankings"],
        parameters=[RankingQuerySerializer, *PAGE_PARAMETERS],
        responses={200: TopicRankingSerializer},
    )
    def get(self, request, campaign_slug, topic_key):
        topic = self.topic
        query = self.validated_query(RankingQuerySerializer)
        propositions = export.ranked_with_ties(topic=topic)
        if query.get("top") is not None:
            propositions = propositions[: query["top"]]
        pages = Pages()
        page = pages.paginate_queryset(propositions, request, view=self) or []
        body = {
            "topic": topic.key,
            "state": topic.state,
            "count": pages.page.paginator.count if pages.page else 0,
            "next": pages.get_next_link(),
            "previous": pages.get_previous_link(),
            "results": export.ranked_rows(topic=topic, propositions=page),
            "snapshots": topic.snapshots.defer("ranking").order_by("number"),
            "stopping": topic_stopping(topic).as_dict(),
        }
        return Response(TopicRankingSerializer(body).data)


class ExportFormatNegotiation(DefaultContentNegotiation):
    """Here `?format=` names the file format, not a DRF renderer, and any Accept header is
    fine: the download is written directly, and errors render as JSON."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class TopicExportView(TopicScoped, APIView):
    """The topic's ranking as a CSV, TSV or JSON Lines download (the columns of `export_ranking`),
    or its top propositions (`format=top50`): `subject<TAB>relation<TAB>object`, one proposition
    per line, no header — the input of a concept map, not one."""

    content_negotiation_class = ExportFormatNegotiation
    renderer_classes = [JSONRenderer]

    @extend_schema(
        tags=["rankings"],
        parameters=[ExportQuerySerializer],
        responses={(200, content_type): OpenApiTypes.STR for content_type in EXPORT_CONTENT_TYPES.values()},
    )
    def get(self, request, campaign_slug, topic_key):
        topic = self.topic
        query = self.validated_query(ExportQuerySerializer)
        fmt = query["format"]
        response = HttpResponse(content_type=f"{EXPORT_CONTENT_TYPES[fmt]}; charset=utf-8")
        if fmt == export.TOP_PROPOSITIONS_FORMAT:
            filename = f"{self.campaign.slug}-{topic.key}-{export.TOP_PROPOSITIONS_NAME}"
            export.write_top_propositions(topic=topic, stream=response, top=query.get("top") or TOP_FOR_CONCEPT_MAPS)
        else:
            filename = f"{self.campaign.slug}-{topic.key}-ranking.{fmt}"
            export.write_rows(export.ranking_rows(topic=topic, top=query.get("top")), fmt, response)
        response["Content-Disposition"] = content_disposition_header(as_attachment=True, filename=filename)
        return response


class CampaignExportView(CampaignScoped, APIView):
    """Every topic of the campaign in one zip: per topic the ranking (CSV, spreadsheet-safe, and
    TSV, exact), the raw labels (CSV) and the top 50 propositions (TSV, exact), with a README.txt
    saying which file is which. The dashboard's "Download every topic (zip)"."""

    content_negotiation_class = ExportFormatNegotiation
    renderer_classes = [JSONRenderer]

    @extend_schema(tags=["rankings"], responses={(200, "application/zip"): OpenApiTypes.BINARY})
    def get(self, request, campaign_slug):
        archive = campaign_bundle_file(campaign=self.campaign)
        return FileResponse(
            archive, as_attachment=True, filename=bundle_filename(self.campaign), content_type="application/zip"
        )
