"""The researcher's suitability pages (thin: find the campaign as every page does, call one
service, render or redirect with its message). Mounted by dashboard/suitability_urls.py."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.access import campaign_for_request, user_may_edit
from annotation.suitability.decisions import decisions_apply, filter_summary, queue, verification_record
from annotation.suitability.export import decisions_csv_write
from annotation.suitability.figures import margins_chart
from annotation.suitability.models import SuitabilityLabel, SuitabilityStudy
from annotation.suitability.studies import label_record, next_to_label, study_agreement, study_of, study_sample
from annotation.suitability.training import classifier_train
from config.errors import ApplicationError
from crowd.work.savings import suitability_saving

REASONS = [(value, label) for value, label in SuitabilityLabel.Reason.choices if value]
REASON_KEYS = {"pronoun_no_referent": "p", "clause_argument": "c", "wrong_extraction": "w", "other": "o"}


def _int(request: HttpRequest, name: str, default: int) -> int:
    try:
        return int(request.POST.get(name, default))
    except (TypeError, ValueError):
        raise ApplicationError(
            f"Field {name!r} must be a whole number.", code="invalid", details={"field": name}
        ) from None


def _done(request: HttpRequest, slug: str, action, success, to: str = "suitability:home") -> HttpResponse:
    """Run `action`; say `success(result)` or the refusal's message; back to `to`."""
    try:
        result = action()
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, success(result))
    return redirect(to, slug=slug)


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


@login_required
@require_GET
def home(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_for_request(request, slug)
    study = SuitabilityStudy.objects.filter(campaign=campaign).first()
    summary = filter_summary(campaign=campaign)
    context = {
        "campaign": campaign,
        "study": study,
        "sample_size": study.items.count() if study else 0,
        "agreement": study_agreement(study) if study else None,
        "summary": summary,
        "saving": suitability_saving(campaign=campaign),
        "chart": margins_chart(campaign=campaign) if summary.decided else None,
        "queue_size": summary.queue_left,
        "may_edit": user_may_edit(request.user, campaign),
        "notes": (
            SuitabilityLabel.objects.filter(study=study)
            .exclude(note="")
            .select_related("proposition", "expert")
            .order_by("-labelled_at")[:20]
            if study
            else []
        ),
    }
    return render(request, "suitability/home.html", context)


@login_required
@require_POST
def sample(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_for_request(request, slug)
    return _done(
        request,
        slug,
        lambda: study_sample(
            campaign_id=campaign.pk, size=_int(request, "size", 500), seed=_int(request, "seed", 0), by=request.user
        ),
        lambda study: f"Sample drawn: {study.items.count()} propositions. Next: label them.",
    )


@login_required
def label(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_for_request(request, slug)
    if request.method == "POST":
        choice = request.POST.get("label", "")

        try:
            label_record(
                study_id=study_of(campaign).pk,
                proposition_id=_int(request, "proposition", 0),
                expert=request.user,
                suitable=choice == "suitable",
                reason="" if choice == "suitable" else choice,
                note=request.POST.get("note", ""),
            )
        except ApplicationError as error:
            messages.error(request, error.message)
        return redirect("suitability:label", slug=slug)
    study = SuitabilityStudy.objects.filter(campaign=campaign).first()
    if study is None:
        messages.error(request, "Draw the sample first.")
        return redirect("suitability:home", slug=slug)
    item = next_to_label(study=study, expert=request.user)
    done = study.labels.filter(expert_id=request.user.pk).count()
    context = {
        "campaign": campaign,
        "study": study,
        "item": item,
        "done": done,
        "total": study.items.count(),
        "reasons": [(value, text, REASON_KEYS[value]) for value, text in REASONS],
        "may_edit": user_may_edit(request.user, campaign),
    }
    return render(request, "suitability/label.html", context)


@login_required
@require_POST
def train(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_for_request(request, slug)
    return _done(
        request,
        slug,
        lambda: classifier_train(campaign_id=campaign.pk, seed=_int(request, "seed", 0), by=request.user),
        lambda run: (
            f"Classifier trained: on the held-out split, precision on negatives {_share(run.metrics['held_out']['precision'])}, "
            f"recall on negatives {_share(run.metrics['held_out']['recall'])}."
        ),
    )


@login_required
def verify(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_for_request(request, slug)
    if request.method == "POST":
        return _done(
            request,
            slug,
            lambda: verification_record(
                campaign_id=campaign.pk,
                proposition_id=_int(request, "proposition", 0),
                by=request.user,
                suitable=request.POST.get("suitable") == "yes",
            ),
            lambda decision: (
                f"Recorded: proposition {decision.proposition_id} is {'kept' if decision.final_suitable else 'removed'}."
            ),
            to="suitability:queue",
        )
    summary = filter_summary(campaign=campaign)
    waiting = queue(campaign=campaign)
    # Rule re-checks first (outside the budget), then the negatives up to what is left of the
    # budget, then more for whoever has time.
    ruled = [decision for decision in waiting if decision.predicted_suitable]
    negatives = [decision for decision in waiting if not decision.predicted_suitable]
    left = max(0, summary.budget - summary.confirmed - summary.corrected)
    context = {
        "campaign": campaign,
        "summary": summary,
        "ruled": ruled,
        "within": negatives[:left],
        "beyond": negatives[left : left + 50],
        "waiting_count": len(waiting),
    }
    return render(request, "suitability/queue.html", context)


@login_required
@require_POST
def apply(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_for_request(request, slug)
    return _done(
        request,
        slug,
        lambda: decisions_apply(campaign_id=campaign.pk),
        lambda applied: (
            f"Filter applied: {applied.removed} propositions removed from the Likert round, {applied.kept} kept."
        ),
    )


@login_required
@require_GET
def export(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_for_request(request, slug)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-suitability.csv"'
    decisions_csv_write(campaign=campaign, stream=response)
    return response
