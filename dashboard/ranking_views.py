"""The ranking page of a topic and its downloads. Thin: find the topic in a campaign the user
may see (others are a 404), then render ranking.ranking_report or write ranking.export."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_POST

from annotation.access import campaign_for_request, user_may_edit
from annotation.models import Topic
from config.errors import ApplicationError
from ranking import export
from ranking.budget import MAX_BATCHES, topic_pair_budget_extend
from ranking.pipeline import TOP_FOR_CONCEPT_MAPS
from ranking.ranking_report import topic_ranking_report
from ranking.refit_votes import refit_votes
from ranking.stopping import VOTES_PER_ITEM_NEEDED
from ranking.ties import tie_notes

CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "tsv": "text/tab-separated-values; charset=utf-8",
    "jsonl": "application/jsonl; charset=utf-8",
}
LABEL_COLUMNS = export.LABEL_COLUMNS


def _topic(request: HttpRequest, slug: str, key: str) -> Topic:
    campaign = campaign_for_request(request, slug)
    return get_object_or_404(campaign.topics.select_related("campaign"), key=key)


def _attachment(topic: Topic, name: str, fmt: str) -> HttpResponse:
    response = HttpResponse(content_type=CONTENT_TYPES[fmt])
    filename = f"{topic.campaign.slug}-{topic.key}-{name}.{fmt}"
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response


@login_required
@require_GET
def topic_ranking(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    report = topic_ranking_report(_topic(request, slug, key), page=request.GET.get("page"))
    context = {
        "report": report,
        "top": TOP_FOR_CONCEPT_MAPS,
        "ties": tie_notes(report.rows),
        "votes": refit_votes(topic=report.topic, snapshot=report.latest),
        "may_edit": user_may_edit(request.user, report.topic.campaign),
        "max_batches": MAX_BATCHES,
        "near_equal": any(row["near_above"] for row in report.rows),
        "votes_needed": VOTES_PER_ITEM_NEEDED,
    }
    return render(request, "dashboard/ranking.html", context)


@login_required
@require_POST
def topic_budget_extend(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    topic = _topic(request, slug, key)  # a viewer's POST is a 403, a stranger's a 404
    try:
        batches = int(request.POST.get("batches", ""))
    except ValueError:
        batches = 0
    try:
        extension = topic_pair_budget_extend(topic=topic, batches=batches, user=request.user)
    except ApplicationError as refused:
        messages.error(request, refused.message)
    else:
        messages.success(
            request,
            f"Pair budget of {topic.key} extended by {extension.pairs} pairs ({batches} batch{'es' if batches != 1 else ''}): "
            "the loop publishes more comparison batches until it settles or spends the new budget.",
        )
    return redirect("ranking:topic-ranking", slug=topic.campaign.slug, key=topic.key)


@login_required
@require_GET
def ranking_download(request: HttpRequest, slug: str, key: str, fmt: str) -> HttpResponse:
    if fmt not in export.FORMATS:
        raise Http404(f"No {fmt} export: use one of {', '.join(export.FORMATS)}.")
    topic = _topic(request, slug, key)
    response = _attachment(topic, "ranking", fmt)
    export.write_rows(export.ranking_rows(topic=topic), fmt, response)
    return response


@login_required
@require_GET
def labels_download(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    topic = _topic(request, slug, key)
    response = _attachment(topic, "labels", "csv")
    export.write_rows(export.raw_label_rows(topic=topic), "csv", response, columns=LABEL_COLUMNS)
    return response


@login_required
@require_GET
def top_propositions_download(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    """The top 50 propositions as triples, no header (export.TOP_PROPOSITIONS_NAME): the input of
    a concept map, not one; a topic's built maps are downloaded from its maps page."""
    topic = _topic(request, slug, key)
    response = HttpResponse(content_type=export.TOP_PROPOSITIONS_CONTENT_TYPE)
    filename = f"{topic.campaign.slug}-{topic.key}-{export.TOP_PROPOSITIONS_NAME}"
    response["Content-Disposition"] = content_disposition_header(True, filename)
    export.write_top_propositions(topic=topic, stream=response, top=TOP_FOR_CONCEPT_MAPS)
    return response
