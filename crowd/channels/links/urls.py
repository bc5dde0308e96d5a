"""A participant link's page, mounted under /s/ by crowd/channels/urls.py (namespace `sessions`)."""

from django.urls import path

from crowd.channels.links import views

urlpatterns = [
    path("l/<slug:token>/", views.link_page, name="link"),  # secrets.token_urlsafe: a slug
]
