"""The suitability routes, included by dashboard/api/urls.py under campaigns/<slug>/suitability/."""

from django.urls import path

from dashboard.api import suitability_views as api

urlpatterns = [
    path("", api.SuitabilityView.as_view(), name="api-suitability"),
    path("sample/", api.SampleView.as_view(), name="api-suitability-sample"),
    path("labels/", api.LabelView.as_view(), name="api-suitability-labels"),
    path("train/", api.TrainView.as_view(), name="api-suitability-train"),
    path("queue/", api.QueueView.as_view(), name="api-suitability-queue"),
    path("verify/", api.VerifyView.as_view(), name="api-suitability-verify"),
    path("apply/", api.ApplyView.as_view(), name="api-suitability-apply"),
    path("decisions.csv", api.DecisionsExportView.as_view(), name="api-suitability-export"),
]
