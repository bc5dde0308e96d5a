"""Routes of the local MTurk endpoint, mounted at /localturk/ (config/urls.py)."""

from django.urls import path

from . import views, worker_views

app_name = "localturk"

urlpatterns = [
    path("", views.api, name="api"),
    path("_control/faults", views.faults_control, name="control-faults"),
    path("_control/calls", views.calls_control, name="control-calls"),
    path("_control/workers/<str:worker_id>", views.worker_profile_control, name="control-worker"),
    path("worker/", worker_views.worker_home, name="worker-home"),
    path("worker/preview/<str:hit_id>/", worker_views.worker_preview, name="worker-preview"),
    path("worker/accept/<str:hit_id>/", worker_views.worker_accept, name="worker-accept"),
    path("worker/work/<str:assignment_id>/", worker_views.worker_work, name="worker-work"),
    path("worker/return/<str:assignment_id>/", worker_views.worker_return, name="worker-return"),
    path("worker/abandon/<str:assignment_id>/", worker_views.worker_abandon, name="worker-abandon"),
    path("worker/submitted/<str:assignment_id>/", worker_views.worker_submitted, name="worker-submitted"),
    path("mturk/externalSubmit", worker_views.external_submit, name="external-submit"),
]
