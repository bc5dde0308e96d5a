"""Worker-facing HIT pages, mounted at /hit/ (the ExternalQuestion URL is SITE_URL/hit/<uuid>/)."""

from django.urls import path

from crowd.hit_page import views

app_name = "hit"

urlpatterns = [
    path("<uuid:task_uuid>/", views.hit_page, name="page"),
    path("<uuid:task_uuid>/submit/", views.hit_submit, name="submit"),
]
