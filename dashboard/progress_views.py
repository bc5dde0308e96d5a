"""The campaign page's figures as JSON, for static/js/campaign-progress.js to refresh the page's
meters without a reload. Thin: the same page of topics as the campaign page (`?page=`), the
same figures (crowd.work.progress, crowd.work.ledger), the same formatting; a fixed number of
queries however many topics the campaign has."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from annotation.access import campaign_for_request
from crowd.marketplaces.registry import channel_policy
from crowd.work import ledger
from crowd.work.progress import Progress, TopicProgress, campaign_progress
from dashboard.views import topics_page


@login_required
@require_GET
def campaign_progress_json(request: HttpRequest, slug: str) -> JsonResponse:
    """{"campaign", "status", "status_label", "money": {name: "$1,234.50" (the channel's currency)}, "topics": [{"id",
    "key", "state", "state_label", "pending", "current_batch", "meters": {name: {"done", "total",
    "percent"}}}], "read_at"} — the meter names of templates/dashboard/_topic.html."""
    campaign = campaign_for_request(request, slug)
    money = ledger.campaign_money(campaign=campaign)
    topics = campaign_progress(campaign, topics=topics_page(campaign, request.GET.get("page")).object_list)
    response = JsonResponse(
        {
            "campaign": campaign.slug,
            "status": campaign.status,
            "status_label": campaign.get_status_display(),
            "money": {
                name: channel_policy(campaign.channel).money_wording(getattr(money, name))
                for name in ("committed", "spent", "cap")
            },
            "topics": [_topic(progress) for progress in topics],
            "read_at": timezone.now().isoformat(),
        }
    )
    response["Cache-Control"] = "no-store"
    return response


def _topic(progress: TopicProgress) -> dict:
    batch = progress.current_batch
    return {
        "id": progress.topic.pk,
        "key": progress.topic.key,
        "state": progress.topic.state,
        "state_label": progress.topic.state_label,
        "pending": progress.pending,
        "current_batch": batch.pk if batch else None,
        "meters": {
            "tasks": _meter(progress.tasks),
            "submitted": _meter(progress.submitted),
            "approved": _meter(progress.approved),
            "labels": _meter(progress.likert_labels),
            "votes": _meter(progress.comparison_votes),
        },
    }


def _meter(progress: Progress) -> dict:
    return {"done": progress.done, "total": progress.total, "percent": progress.percent}
