"""The worker-quality report pages and the channel page, mounted at the site root."""

from django.urls import path

from dashboard import channel_views as views
from dashboard import quality_views

app_name = "crowd"

urlpatterns = [
    path("campaigns/<slug:slug>/quality/", quality_views.campaign_quality, name="campaign-quality"),
    path("campaigns/<slug:slug>/quality.csv", quality_views.campaign_quality_csv, name="campaign-quality-csv"),
    path("campaigns/<slug:slug>/topics/<topic_key:key>/quality/", quality_views.topic_quality, name="topic-quality"),
    path(
        "campaigns/<slug:slug>/workers/<int:worker_id>/override/", quality_views.worker_override, name="worker-override"
    ),
    path("campaigns/<slug:slug>/channel/", views.campaign_channel, name="campaign-channel"),
    path("campaigns/<slug:slug>/channel/set/", views.campaign_channel_set, name="campaign-channel-set"),
    path("campaigns/<slug:slug>/links/new/", views.links_new, name="links-new"),
    path("campaigns/<slug:slug>/links.csv", views.links_csv, name="links-csv"),
    path("campaigns/<slug:slug>/links/<int:link_id>/revoke/", views.link_revoke, name="link-revoke"),
    path("campaigns/<slug:slug>/links/<int:link_id>/codes/", views.link_codes, name="link-codes"),
    path("campaigns/<slug:slug>/channel/idle/", views.campaign_idle, name="campaign-idle"),
    path("campaigns/<slug:slug>/holds/<int:hold_id>/release/", views.hold_release, name="hold-release"),
]
