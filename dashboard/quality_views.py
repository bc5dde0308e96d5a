"""Worker-quality report pages for researchers. Thin: find the campaign among those the
user may see (others are a 404), call crowd.qc.report or crowd.qc.worker_quality, render."""

from typing import cast

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from annotation.access import campaign_for_request
from annotation.models import Campaign, Topic
from config.errors import ApplicationError
from config.spreadsheets import SpreadsheetWriter
from crowd.models import WorkerQuality
from crowd.qc.report import (
    PAPER_LIKERT_AGREEMENT,
    PAPER_MAJORITY_AGREEMENT,
    PAPER_RUN_RELIABILITY,
    WORKER_FILTERS,
    WorkerFilter,
    campaign_quality_report,
    comparable_campaigns,
    worker_quality_csv_rows,
)
from crowd.qc.statistics import STABILITY_MAX_ITEMS, STABILITY_TOPIC_MAX_ITEMS
from crowd.qc.worker_quality import worker_quality_override
from dashboard.channel_forms import OverrideForm


def _campaign(request: HttpRequest, slug: str) -> Campaign:
    return campaign_for_request(request, slug)  # a viewer's POST is a 403 (annotation.access)


def _report_page(request: HttpRequest, campaign: Campaign, topic: Topic | None) -> HttpResponse:
    compare = request.GET.get("compare")
    other = get_object_or_404(comparable_campaigns(campaign, topic, request.user), slug=compare) if compare else None
    status = request.GET.get("status", "")
    workers = WorkerFilter(
        search=request.GET.get("worker", "")[:64],
        status=status if status in WORKER_FILTERS else "",
        page=request.GET.get("page", 1),
    )
    report = campaign_quality_report(campaign, topic, compare_with=other, workers=workers, viewer=request.user)
    return render(
        request,
        "quality/report.html",
        {
            "report": report,
            "paper": {
                "likert": PAPER_LIKERT_AGREEMENT,
                "majority": PAPER_MAJORITY_AGREEMENT,
                "runs": PAPER_RUN_RELIABILITY,
            },
            "override_choices": cast(forms.ChoiceField, OverrideForm.base_fields["status"]).choices,
            "stability_max_items": STABILITY_TOPIC_MAX_ITEMS if topic else STABILITY_MAX_ITEMS,
            "worker_filters": WORKER_FILTERS,
        },
    )


@login_required
@require_GET
def campaign_quality(request: HttpRequest, slug: str) -> HttpResponse:
    return _report_page(request, _campaign(request, slug), None)


@login_required
@require_GET
def topic_quality(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    campaign = _campaign(request, slug)
    return _report_page(request, campaign, get_object_or_404(campaign.topics, key=key))


@login_required
@require_GET
def campaign_quality_csv(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign(request, slug)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-worker-quality.csv"'
    SpreadsheetWriter(response).writerows(worker_quality_csv_rows(campaign))
    return response


@login_required
@require_POST
def worker_override(request: HttpRequest, slug: str, worker_id: int) -> HttpResponse:
    campaign = _campaign(request, slug)
    form = OverrideForm(request.POST)
    back = form.data.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        back = ""
    if not form.is_valid():
        messages.error(request, "Choose a decision and give a reason: it is recorded with your name.")
    else:
        try:
            quality = worker_quality_override(
                campaign_id=campaign.pk,
                worker_id=worker_id,
                status=form.cleaned_data["status"],
                reason=form.cleaned_data["reason"],
                user=request.user,
            )
        except ApplicationError as error:
            messages.error(request, error.message)
        else:
            status = WorkerQuality.Status(quality.status).label
            source = "by override" if quality.override_status else "as computed"
            messages.success(request, f"Worker {quality.worker}: {status} {source}.")
    return redirect(back) if back else redirect("crowd:campaign-quality", slug=campaign.slug)
