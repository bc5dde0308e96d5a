"""Participant sessions (Prolific studies and participant links), mounted at /s/."""

from django.urls import path

from crowd.sessions import views as session_views

app_name = "sessions"

urlpatterns = [
    path("prolific/", session_views.prolific_arrival, name="prolific"),
    path("l/<slug:token>/", session_views.link_page, name="link"),  # secrets.token_urlsafe: a slug
    path("<uuid:key>/", session_views.session_page, name="session"),
    path("<uuid:key>/consent/", session_views.session_consent, name="consent"),
    path("<uuid:key>/mturk/externalSubmit", session_views.answer_copy, name="answer-copy"),
]
