"""The REST API: each app's api module contributes its routes here."""

from django.urls import path

from annotation import api as annotation_api

urlpatterns = [
    path(
        "campaigns/<slug:slug>/propositions/import",
        annotation_api.PropositionImportView.as_view(),
        name="api-proposition-import",
    ),
]
