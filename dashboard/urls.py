"""The researcher's dashboard, mounted at the site root (config/urls.py)."""

from django.urls import path

from dashboard import members, progress_views, topic_views, views

app_name = "dashboard"

urlpatterns = [
    path("", views.campaign_list, name="campaigns"),
    path("campaigns/new/", views.create_campaign, name="campaign-create"),
    path("campaigns/<slug:slug>/", views.campaign_page, name="campaign"),
    path("campaigns/<slug:slug>/settings/", views.campaign_settings, name="campaign-settings"),
    path("campaigns/<slug:slug>/import/", views.upload_propositions, name="propositions-import"),
    path("campaigns/<slug:slug>/pause/", views.pause_campaign, name="campaign-pause"),
    path("campaigns/<slug:slug>/resume/", views.resume_campaign, name="campaign-resume"),
    path("campaigns/<slug:slug>/topics/<topic_key:key>/publish/", views.publish_likert_round, name="likert-publish"),
    path("campaigns/<slug:slug>/topics/<topic_key:key>/preview/", views.hit_preview, name="hit-preview"),
    path(
        "campaigns/<slug:slug>/topics/<topic_key:key>/description/",
        topic_views.topic_description,
        name="topic-description",
    ),
    path("campaigns/<slug:slug>/progress.json", progress_views.campaign_progress_json, name="campaign-progress"),
    path("campaigns/<slug:slug>/batches/<int:batch_id>/expire/", views.expire_batch, name="batch-expire"),
    path("campaigns/<slug:slug>/raises/<int:raise_id>/approve/", views.approve_raise, name="raise-approve"),
    path("campaigns/<slug:slug>/members/", members.campaign_members, name="members"),
    path("campaigns/<slug:slug>/members/add/", members.member_add, name="member-add"),
    path("campaigns/<slug:slug>/members/<int:member_id>/remove/", members.member_remove, name="member-remove"),
]
