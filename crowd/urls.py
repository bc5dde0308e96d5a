"""The worker-quality report pages, mounted at the site root."""

from django.urls import path

from crowd import views

app_name = "crowd"

urlpatterns = [
    path("campaigns/<slug:slug>/quality/", views.campaign_quality, name="campaign-quality"),
    path("campaigns/<slug:slug>/quality.csv", views.campaign_quality_csv, name="campaign-quality-csv"),
    path("campaigns/<slug:slug>/topics/<str:key>/quality/", views.topic_quality, name="topic-quality"),
    path("campaigns/<slug:slug>/workers/<int:worker_id>/override/", views.worker_override, name="worker-override"),
]
