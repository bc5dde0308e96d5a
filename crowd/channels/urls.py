"""The participant's side, mounted at /s/: each channel's entry point (its lifecycle's urls,
crowd/channels/registry.py), then the session pages every channel shares (crowd.sessions)."""

from django.urls import include, path

from crowd.channels.registry import LIFECYCLES
from crowd.sessions import views as session_views

app_name = "sessions"

urlpatterns = [
    *(path("", include(lifecycle.urls)) for lifecycle in LIFECYCLES),
    path("<uuid:key>/", session_views.session_page, name="session"),
    path("<uuid:key>/consent/", session_views.session_consent, name="consent"),
    path("<uuid:key>/alive/", session_views.session_alive, name="alive"),
    path("<uuid:key>/mturk/externalSubmit", session_views.answer_copy, name="answer-copy"),
]
