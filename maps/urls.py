"""The map stage's pages, mounted at the site root (config/urls.py) under a topic."""

from django.urls import path

from maps import page_views, views

app_name = "maps"

MAPS = "campaigns/<slug:slug>/topics/<topic_key:key>/maps/"

urlpatterns = [
    path(MAPS, page_views.topic_maps, name="topic-maps"),
    path(MAPS + "mine/", page_views.my_map_open, name="my-map"),
    path(MAPS + "assign/", page_views.annotator_assign, name="assign"),
    path(MAPS + "draft/", page_views.draft_build, name="draft"),
    path(MAPS + "import/", page_views.map_upload, name="import"),
    path(MAPS + "revision/", page_views.revision_page, name="revision"),
    path(MAPS + "decisions.csv", page_views.decisions_download, name="decisions"),
    path(MAPS + "<int:map_id>/", views.workbench_page, name="workbench"),
    path(MAPS + "<int:map_id>/state.json", views.workbench_state, name="state"),
    path(MAPS + "<int:map_id>/act", views.workbench_act, name="act"),
    path(MAPS + "<int:map_id>/heartbeat", views.workbench_heartbeat, name="heartbeat"),
    path(MAPS + "<int:map_id>.<str:fmt>", views.map_download, name="download"),
]
