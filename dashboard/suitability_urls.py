"""The suitability pages, included at the site root by config/urls.py."""

from django.urls import path

from dashboard import suitability_views as views

app_name = "suitability"

urlpatterns = [
    path("campaigns/<slug:slug>/suitability/", views.home, name="home"),
    path("campaigns/<slug:slug>/suitability/sample/", views.sample, name="sample"),
    path("campaigns/<slug:slug>/suitability/label/", views.label, name="label"),
    path("campaigns/<slug:slug>/suitability/train/", views.train, name="train"),
    path("campaigns/<slug:slug>/suitability/queue/", views.verify, name="queue"),
    path("campaigns/<slug:slug>/suitability/apply/", views.apply, name="apply"),
    path("campaigns/<slug:slug>/suitability/decisions.csv", views.export, name="export"),
]
