"""The ranking page of a topic and its downloads, mounted at the site root (config/urls.py)."""

from django.urls import path

from ranking import views

app_name = "ranking"

TOPIC = "campaigns/<slug:slug>/topics/<topic_key:key>/"

urlpatterns = [
    path(TOPIC + "ranking/", views.topic_ranking, name="topic-ranking"),
    path(TOPIC + "ranking.<str:fmt>", views.ranking_download, name="ranking-download"),
    path(TOPIC + "labels.csv", views.labels_download, name="labels-download"),
    path(TOPIC + "concept-map.tsv", views.concept_map_download, name="concept-map-download"),
]
