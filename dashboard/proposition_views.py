"""The page of one ranked proposition: its labels, its orderings and their workers. Thin:
find the topic in a campaign the user may see (others are a 404), then render
ranking.proposition_report."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from annotation.access import campaign_for_request
from ranking.proposition_report import proposition_report


@login_required
@require_GET
def proposition_page(request: HttpRequest, slug: str, key: str, pk: int) -> HttpResponse:
    campaign = campaign_for_request(request, slug)
    topic = get_object_or_404(campaign.topics.select_related("campaign"), key=key)
    report = proposition_report(topic=topic, proposition_id=pk)
    if report is None:
        raise Http404(f"Topic {topic.key} has no proposition {pk}.")
    return render(request, "dashboard/proposition.html", {"report": report, "topic": topic, "campaign": campaign})
