"""The workbench page of one map and its JSON endpoints. Thin: find the campaign through
annotation.access (a viewer reads, never writes), call one maps service, render the result."""

import json
from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_POST

from annotation.access import campaign_for_request, user_may_edit
from annotation.models import Topic
from config.errors import ApplicationError
from maps import workbench
from maps.files import MapNotReady, map_cmap_text, map_counters, map_cxl_text, map_json_text, map_title
from maps.models import ConceptMap, RevisedProposition

ACTIONS: dict[str, tuple[Callable[..., ConceptMap], dict[str, type]]] = {
    "include": (workbench.proposition_include, {"proposition_id": int}),
    "remove": (workbench.relation_remove, {"relation_id": int}),
    "merge": (workbench.concepts_merge, {"keep_id": int, "merge_id": int, "label": str}),
    "relabel": (workbench.concept_relabel, {"concept_id": int, "label": str}),
    "synthetic": (workbench.synthetic_add, {"source_id": int, "target_id": int, "label": str}),
    "finalise": (workbench.map_finalise, {}),
    "reopen": (workbench.map_reopen, {}),
}


def map_topic(request: HttpRequest, slug: str, key: str) -> Topic:
    campaign = campaign_for_request(request, slug)
    return get_object_or_404(campaign.topics.select_related("campaign"), key=key)


def _map(request: HttpRequest, slug: str, key: str, map_id: int) -> ConceptMap:
    topic = map_topic(request, slug, key)
    return get_object_or_404(ConceptMap.objects.select_related("topic__campaign", "annotator"), topic=topic, pk=map_id)


def map_state(concept_map: ConceptMap, *, user: Any) -> dict[str, Any]:
    """Everything the workbench draws: propositions in importance order, concepts, relations, counters."""
    relations = list(concept_map.relations.select_related("source", "target").order_by("id"))
    included = {r.proposition_id for r in relations if r.proposition_id}
    propositions = RevisedProposition.objects.filter(topic=concept_map.topic).order_by("position", "id")
    editable = (
        concept_map.kind == ConceptMap.Kind.ANNOTATED
        and concept_map.annotator_id == user.pk
        and user_may_edit(user, concept_map.topic.campaign)
    )
    following = workbench.next_connecting(concept_map)
    return {
        "id": concept_map.pk,
        "version": concept_map.version,
        "status": concept_map.status,
        "editable": editable,
        "active_seconds": concept_map.active_seconds,
        "counters": map_counters(concept_map),
        "next": following.pk if following else None,
        "propositions": [
            {
                "id": p.pk,
                "position": p.position,
                "crowd_rank": p.crowd_rank,
                "subject": p.subject,
                "relation": p.relation,
                "object": p.object,
                "operation": p.operation,
                "included": p.pk in included,
            }
            for p in propositions
        ],
        "concepts": [
            {"id": c.pk, "label": c.label, "merged_from": c.merged_from} for c in concept_map.concepts.order_by("id")
        ],
        "relations": [
            {
                "id": r.pk,
                "source": r.source_id,
                "target": r.target_id,
                "label": r.label,
                "synthetic": r.synthetic,
                "proposition": r.proposition_id,
            }
            for r in relations
        ],
        "suggestions": [
            {"a": a.pk, "b": b.pk, "why": why} for a, b, why in workbench.merge_suggestions(concept_map)[:20]
        ],
    }


@login_required
@require_GET
def workbench_page(request: HttpRequest, slug: str, key: str, map_id: int) -> HttpResponse:
    concept_map = _map(request, slug, key, map_id)
    state = map_state(concept_map, user=request.user)
    return render(
        request,
        "maps/workbench.html",
        {
            "concept_map": concept_map,
            "topic": concept_map.topic,
            "campaign": concept_map.topic.campaign,
            "title": map_title(concept_map),
            "state": state,
        },
    )


@login_required
@require_GET
def workbench_state(request: HttpRequest, slug: str, key: str, map_id: int) -> JsonResponse:
    return JsonResponse(map_state(_map(request, slug, key, map_id), user=request.user))


def _refusal(error: ApplicationError) -> JsonResponse:
    return JsonResponse(error.as_dict(), status=error.http_status)


@login_required
@require_POST
def workbench_act(request: HttpRequest, slug: str, key: str, map_id: int) -> JsonResponse:
    """One change: {"action", "version", ...its fields}. The acting user is the request's, never a field."""
    concept_map = _map(request, slug, key, map_id)
    try:
        body = json.loads(request.body or b"{}")
        action, fields = ACTIONS[body["action"]]
        arguments = {name: kind(body[name]) for name, kind in fields.items()}
        version = int(body["version"])
    except (ValueError, KeyError, TypeError):
        return JsonResponse({"code": "bad_request", "message": "Malformed change."}, status=400)
    try:
        changed = action(map_id=concept_map.pk, user=request.user, version=version, **arguments)
    except ApplicationError as error:
        return _refusal(error)
    return JsonResponse(map_state(changed, user=request.user))


@login_required
@require_POST
def workbench_heartbeat(request: HttpRequest, slug: str, key: str, map_id: int) -> JsonResponse:
    concept_map = _map(request, slug, key, map_id)
    try:
        seconds = int(json.loads(request.body or b"{}").get("seconds", 0))
        total = workbench.active_time_record(map_id=concept_map.pk, user=request.user, seconds=seconds)
    except (ValueError, TypeError, AttributeError):
        return JsonResponse({"code": "bad_request", "message": "Malformed heartbeat."}, status=400)
    except ApplicationError as error:
        return _refusal(error)
    return JsonResponse({"active_seconds": total})


def _file(concept_map: ConceptMap, text: str, extension: str, content_type: str) -> HttpResponse:
    response = HttpResponse(text, content_type=content_type)
    topic = concept_map.topic
    who = concept_map.annotator.get_username() if concept_map.annotator else concept_map.kind
    filename = f"{topic.campaign.slug}-{topic.key}-map-{concept_map.pk}-{who}.{extension}"
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response


@login_required
@require_GET
def map_download(request: HttpRequest, slug: str, key: str, map_id: int, fmt: str) -> HttpResponse:
    concept_map = _map(request, slug, key, map_id)
    if fmt == "cmap":
        try:
            text = map_cmap_text(concept_map)
        except MapNotReady as refused:
            return HttpResponse(refused.message, status=409, content_type="text/plain; charset=utf-8")
        return _file(concept_map, text, "cmap", "text/plain; charset=utf-8")
    if fmt == "cxl":
        return _file(concept_map, map_cxl_text(concept_map), "cxl", "application/xml; charset=utf-8")
    return _file(concept_map, map_json_text(concept_map), "json", "application/json; charset=utf-8")
