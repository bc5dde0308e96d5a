"""The ranking page of a topic and its downloads, mounted at the site root (config/urls.py)."""

from django.urls import path
from django.views.generic import RedirectView

from dashboard import bundle_views, proposition_views
from dashboard import ranking_views as views

app_name = "ranking"

TOPIC = "campaigns/<slug:slug>/topics/<topic_key:key>/"

urlpatterns = [
    path(TOPIC + "ranking/", views.topic_ranking, name="topic-ranking"),
    path(TOPIC + "pair-budget/", views.topic_budget_extend, name="topic-budget-extend"),
    path(TOPIC + "ranking.<str:fmt>", views.ranking_download, name="ranking-download"),
    path(TOPIC + "labels.csv", views.labels_download, name="labels-download"),
    path(TOPIC + "top-50-propositions.tsv", views.top_propositions_download, name="top-propositions-download"),
    # Its earlier addresses, from when it was called a concept map: kept for old links.
    *(
        path(
            TOPIC + old,
            RedirectView.as_view(pattern_name="ranking:top-propositions-download", permanent=True, query_string=True),
            name=name,
        )
        for old, name in (("concept-map.cmap", "concept-map-download"), ("concept-map.tsv", "concept-map-tsv"))
    ),
    path(TOPIC + "propositions/<int:pk>/", proposition_views.proposition_page, name="proposition"),
    path("campaigns/<slug:slug>/all-topics.zip", bundle_views.campaign_bundle_download, name="campaign-bundle"),
]
