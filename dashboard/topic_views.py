"""A topic's description in the dashboard: the small form on its card posts here; a refused or
invalid description comes back on a page of its own, with the text as typed. Thin: find the
campaign (annotation.access: a viewer's post is a 403), call annotation.topic_descriptions."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.http import require_http_methods

from annotation.access import campaign_for_request
from annotation.importing.topics import topics_with_likert_built
from annotation.topic_descriptions import topic_description_refusal, topic_description_set
from config.errors import ApplicationError
from dashboard.forms import TopicDescriptionForm
from dashboard.views import TOPICS_PER_PAGE


@login_required
@require_http_methods(["GET", "POST"])
def topic_description(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    campaign = campaign_for_request(request, slug)
    topic = get_object_or_404(topics_with_likert_built(campaign.topics.all()), key=key)
    form = TopicDescriptionForm(request.POST or None, initial={"description": topic.description})
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                topic_description_set(topic_id=topic.pk, description=form.cleaned_data["description"])
            except ApplicationError as error:
                form.add_error("description", error.message)
                status = error.http_status
            else:
                messages.success(request, f"Description of topic {topic.key} saved.")
                page = campaign.topics.filter(key__lt=topic.key).count() // TOPICS_PER_PAGE + 1  # the card's page
                url = reverse("dashboard:campaign", args=[campaign.slug])
                return redirect(f"{url}?page={page}#topic-{slugify(topic.key)}")
    # Offered only where saving would be accepted; a refused text comes back to copy, not to send.
    context = {"campaign": campaign, "topic": topic, "form": form, "refusal": topic_description_refusal(topic)}
    return render(request, "dashboard/topic_description.html", context, status=status)
