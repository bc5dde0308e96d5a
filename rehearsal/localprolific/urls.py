"""Routes of the local Prolific endpoint, mounted at /localprolific/ (config/urls.py)."""

from django.urls import path

from . import api, control_views, participant_views

app_name = "localprolific"

urlpatterns = [
    path("api/v1/studies/", api.studies_collection, name="studies"),
    path("api/v1/studies/<str:study_id>/", api.study_detail, name="study"),
    path("api/v1/studies/<str:study_id>/transition/", api.study_transition, name="study-transition"),
    path("api/v1/studies/<str:study_id>/submissions/", api.study_submissions, name="study-submissions"),
    path("api/v1/submissions/", api.submissions_collection, name="submissions"),
    path("api/v1/submissions/bonus-payments/", api.bonus_create, name="bonus-payments"),
    path("api/v1/submissions/bulk-approve/", api.submissions_bulk_approve, name="submissions-bulk-approve"),
    path("api/v1/submissions/<str:submission_id>/", api.submission_detail, name="submission"),
    path("api/v1/submissions/<str:submission_id>/transition/", api.submission_transition, name="submission-transition"),
    path("api/v1/bulk-bonus-payments/<str:bonus_id>/pay/", api.bonus_pay, name="bonus-pay"),
    path("api/v1/filters/", api.filters_list, name="filters"),
    path("_control/faults", control_views.faults_control, name="control-faults"),
    path("_control/studies/<str:study_id>/participants", control_views.participant_start, name="control-participants"),
    path("_control/submissions/<str:submission_id>/return", control_views.submission_return, name="control-return"),
    path(
        "_control/submissions/<str:submission_id>/time-out", control_views.submission_time_out, name="control-time-out"
    ),
    path(
        "_control/submissions/<str:submission_id>/partially-approve",
        control_views.submission_partially_approve,
        name="control-partially-approve",
    ),
    path("_control/bonuses", control_views.bonuses_control, name="control-bonuses"),
    path("_control/charges", control_views.charges_control, name="control-charges"),
    path("studies/<str:study_id>/start", participant_views.study_start, name="study-start"),
    path("submissions/complete", participant_views.submission_complete, name="complete"),
]
