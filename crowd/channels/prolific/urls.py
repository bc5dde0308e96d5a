"""Prolific's study URL, mounted under /s/ by crowd/channels/urls.py (namespace `sessions`)."""

from django.urls import path

from crowd.channels.prolific import views

urlpatterns = [
    path("prolific/", views.prolific_arrival, name="prolific"),
]
