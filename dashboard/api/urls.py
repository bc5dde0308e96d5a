"""The REST API's routes: campaigns, the crowd's work, rankings and members.

Routes use path converters (`use_regex_path=False`) so the OpenAPI schema knows the type of
every path parameter.
"""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import SimpleRouter

from config.api_docs import ApiDocsAccess, api_docs
from config.login_throttle import obtain_auth_token
from dashboard.api import campaign_views as annotation_api
from dashboard.api import crowd_views as crowd_api
from dashboard.api import member_views as members_api
from dashboard.api import ranking_views as ranking_api

CAMPAIGN = "campaigns/<slug:campaign_slug>"
TOPIC = f"{CAMPAIGN}/topics/<topic_key:topic_key>"

router = SimpleRouter(use_regex_path=False)
router.register("campaigns", annotation_api.CampaignViewSet, basename="api-campaign")
router.register(f"{CAMPAIGN}/topics", annotation_api.TopicViewSet, basename="api-topic")
router.register(f"{TOPIC}/propositions", annotation_api.PropositionViewSet, basename="api-proposition")
router.register(f"{CAMPAIGN}/batches", annotation_api.BatchViewSet, basename="api-batch")
router.register(f"{CAMPAIGN}/hits", crowd_api.HITViewSet, basename="api-hit")
router.register(f"{CAMPAIGN}/workers", crowd_api.CampaignWorkerViewSet, basename="api-worker")
router.register(f"{CAMPAIGN}/links", crowd_api.ParticipantLinkViewSet, basename="api-link")
router.register(f"{CAMPAIGN}/members", members_api.CampaignMemberViewSet, basename="api-member")

urlpatterns = [
    path("auth/token/", obtain_auth_token, name="api-token"),
    path("schema/", SpectacularAPIView.as_view(permission_classes=[ApiDocsAccess]), name="api-schema"),
    path("docs/", api_docs, name="api-docs"),
    path(
        "campaigns/<slug:slug>/propositions/import",
        annotation_api.PropositionImportView.as_view(),
        name="api-proposition-import",
    ),
    path(f"{CAMPAIGN}/suitability/", include("dashboard.api.suitability_urls")),
    path(f"{CAMPAIGN}/channel/", crowd_api.CampaignChannelView.as_view(), name="api-campaign-channel"),
    path(f"{TOPIC}/ranking/", ranking_api.TopicRankingView.as_view(), name="api-topic-ranking"),
    path(f"{TOPIC}/export/", ranking_api.TopicExportView.as_view(), name="api-topic-export"),
    path(f"{CAMPAIGN}/export/", ranking_api.CampaignExportView.as_view(), name="api-campaign-export"),
    *router.urls,
]
