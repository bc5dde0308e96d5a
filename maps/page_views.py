"""A topic's maps page and its revision page. Thin: campaign access through annotation.access
(viewers read only), one maps service per form, the result as a message or a page."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.access import user_may_edit
from annotation.campaigns import campaigns_editable_by
from config.errors import ApplicationError
from config.spreadsheets import SpreadsheetWriter
from maps import revision
from maps.decisions import DECISION_COLUMNS, decision_rows
from maps.draft import map_draft
from maps.files import MapImportError, map_counters, map_import, map_title
from maps.models import ConceptMap, MapAssignment, RevisedProposition
from maps.report import topic_maps_report
from maps.views import map_topic
from maps.workbench import map_assign, map_open


def _maps_url(slug: str, key: str) -> str:
    return reverse("maps:topic-maps", args=[slug, key])


@login_required
@require_GET
def topic_maps(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    topic = map_topic(request, slug, key)
    maps = list(ConceptMap.objects.filter(topic=topic).select_related("annotator").order_by("kind", "id"))
    rows = [{"map": m, "title": map_title(m), "counters": map_counters(m)} for m in maps]
    context = {
        "topic": topic,
        "campaign": topic.campaign,
        "rows": rows,
        "can_edit": user_may_edit(request.user, topic.campaign),
        "assigned": MapAssignment.objects.filter(topic=topic).select_related("annotator"),
        "summary": revision.revision_summary(topic=topic),
        "report": topic_maps_report(topic=topic, maps=maps),
    }
    return render(request, "maps/topic_maps.html", context)


@login_required
@require_POST
def my_map_open(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    topic = map_topic(request, slug, key)  # a POST: editors only
    revision.revision_start(topic=topic)
    concept_map = map_open(topic=topic, annotator=request.user)
    return redirect("maps:workbench", slug, key, concept_map.pk)


@login_required
@require_POST
def annotator_assign(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    topic = map_topic(request, slug, key)
    user = get_user_model().objects.filter(username=request.POST.get("username", "")).first()
    if user is None or not campaigns_editable_by(user).filter(pk=topic.campaign.pk).exists():
        messages.error(request, "Assign a member of the campaign who may edit it.")
    else:
        map_assign(topic=topic, annotator=user, assigned_by=request.user)
        messages.success(request, f"Topic {topic.key} assigned to {user.get_username()}.")
    return redirect(_maps_url(slug, key))


@login_required
@require_POST
def draft_build(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    topic = map_topic(request, slug, key)
    result = map_draft(topic=topic)
    messages.success(request, result.message)
    return redirect(_maps_url(slug, key))


@login_required
@require_POST
def map_upload(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    topic = map_topic(request, slug, key)
    upload = request.FILES.get("file")
    try:
        if upload is None:
            raise MapImportError("Choose a .cmap or .cxl file.")
        imported = map_import(
            topic=topic, name=upload.name or "map", data=upload.read(), kind=request.POST.get("kind", "")
        )
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        counts = map_counters(imported.concept_map)
        messages.success(
            request,
            f"Imported {imported.concept_map.name}: {counts['concepts']} concepts, {counts['relations']} relations.",
        )
        for skipped in imported.skipped:
            messages.warning(request, f"Skipped: {skipped}.")
    return redirect(_maps_url(slug, key))


@login_required
@require_http_methods(["GET", "POST"])
def revision_page(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    topic = map_topic(request, slug, key)  # a POST needs edit access
    if request.method == "POST":
        try:
            _revise(request, topic)
        except ApplicationError as error:
            messages.error(request, error.message)
        except ValueError:
            messages.error(request, "Malformed revision.")
        return redirect(reverse("maps:revision", args=[slug, key]) + request.POST.get("anchor", ""))
    propositions = list(
        RevisedProposition.objects.filter(topic=topic).select_related("revised_from").order_by("position", "id")
    )
    rows = [
        {"p": p, "splits": revision.split_suggestions(p), "source": p.revised_from.source if p.revised_from else ""}
        for p in propositions
    ]
    context = {
        "topic": topic,
        "campaign": topic.campaign,
        "rows": rows,
        "summary": revision.revision_summary(topic=topic),
        "can_edit": user_may_edit(request.user, topic.campaign),
    }
    return render(request, "maps/revision.html", context)


def _revise(request: HttpRequest, topic) -> None:
    action = request.POST.get("action")
    post = request.POST
    if action == "start":
        started = revision.revision_start(topic=topic)
        messages.success(request, f"Revision started with {started.created} propositions. {started.tie_note}".strip())
    elif action == "split":
        parts = post.getlist("part")
        made = revision.proposition_split(
            topic=topic, proposition_id=int(post["proposition"]), field=post.get("field", ""), parts=parts
        )
        messages.success(request, f"Split into {len(made)} propositions.")
    elif action == "span":
        revision.proposition_span_edit(
            topic=topic,
            proposition_id=int(post["proposition"]),
            subject=post.get("subject", ""),
            relation=post.get("relation", ""),
            object=post.get("object", ""),
        )
        messages.success(request, "Spans saved.")
    elif action == "add":
        revision.proposition_add(
            topic=topic,
            subject=post.get("subject", ""),
            relation=post.get("relation", ""),
            object=post.get("object", ""),
        )
        messages.success(request, "Proposition added.")
    else:
        messages.error(request, "Unknown revision action.")


@login_required
@require_GET
def decisions_download(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    """The two annotators' decisions, one per row (spreadsheet-safe CSV: labels are user text)."""
    topic = map_topic(request, slug, key)
    maps = list(ConceptMap.objects.filter(topic=topic, kind=ConceptMap.Kind.ANNOTATED).select_related("annotator")[:2])
    if len(maps) < 2:
        messages.error(request, "Decisions need two annotators' maps of this topic.")
        return redirect(_maps_url(slug, key))
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    filename = f"{topic.campaign.slug}-{topic.key}-map-decisions.csv"
    response["Content-Disposition"] = content_disposition_header(True, filename)
    writer = SpreadsheetWriter(response)
    writer.writerow(DECISION_COLUMNS)
    writer.writerows([row[column] for column in DECISION_COLUMNS] for row in decision_rows(*maps))
    return response
