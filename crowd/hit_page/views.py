"""The worker-facing HIT pages. Thin: read MTurk's parameters, call the job modules, render.

Every response here (page, submit, result and error pages) goes through
`hit_frame_headers`, so it can be shown inside MTurk's iframe. The submit view is
csrf_exempt because cookies are third-party in that iframe; the signed token in the form
protects it instead (crowd/hit_page/tokens.py).
"""

import random
import time
from uuid import NAMESPACE_URL, UUID, uuid5

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from annotation.batching import likert_plan
from annotation.models import Batch, Proposition, Topic
from annotation.suitability.selectors import propositions_for_likert
from config.errors import ApplicationError, NotFound
from crowd.hit_page.access import Access, PageState, hit_access_check
from crowd.hit_page.answers import LIKERT_SCALE
from crowd.hit_page.content import HitContent, Statement, hit_content_get
from crowd.hit_page.headers import FORM_TARGETS_ATTRIBUTE, hit_frame_headers
from crowd.hit_page.params import PREVIEW_ASSIGNMENT_ID, HitParams, form_read, last_values, url_origin
from crowd.hit_page.shells import hidden_inputs, shell_fill, shell_get
from crowd.hit_page.store import Submission, answer_submit, time_on_task
from crowd.hit_page.tokens import submit_token_check, submit_token_make
from crowd.marketplaces.base import ChannelPolicy
from crowd.marketplaces.registry import channel_policy
from crowd.work.events import batch_answered


@hit_frame_headers
@require_GET
def hit_page(request: HttpRequest, task_uuid: UUID) -> HttpResponse:
    params = HitParams.from_query(request.GET)
    try:
        content = _content_get(task_uuid)
        access = hit_access_check(content=content, params=params)
    except ApplicationError as error:
        return _error_response(request, error)
    if access.state == PageState.UNAVAILABLE:
        # A polite page, not an error: it is what a blocked worker should see, in their channel's words.
        return render(request, "hit/unavailable.html", {"ask": channel_policy(content.channel).turned_away_wording})
    if access.state == PageState.SUBMITTED:
        return _already_submitted_response(request, content=content, params=params, access=access)
    return _task_page(content=content, params=params, preview=access.state == PageState.PREVIEW)


@csrf_exempt
@hit_frame_headers
@require_POST
def hit_submit(request: HttpRequest, task_uuid: UUID) -> HttpResponse:
    form = form_read(request)
    posted = last_values(form)
    params = HitParams.from_query(posted)
    try:
        content = _content_get(task_uuid)
        if params.preview:
            raise ApplicationError("Accept the HIT before you submit: this is only a preview.", code="not_accepted")
        claims = submit_token_check(
            token=posted.get("token", ""),
            task_uuid=content.uuid,
            assignment_id=params.assignment_id,
            worker_id=params.worker_id,
            max_age=content.assignment_duration_seconds,
        )
        submission = answer_submit(
            content=content,
            assignment_id=params.assignment_id,
            worker_external_id=params.worker_id,
            fields=form,
            accepted_at=claims.issued_at,
            time_on_task_ms=time_on_task(reported_ms=posted.get("elapsed_ms"), issued_at=claims.issued_at),
        )
    except ApplicationError as error:
        return _error_response(request, error, retry_url=_page_url(task_uuid, params))
    if submission.filled_batch_id is not None:  # it may be the last answer its batch waits for
        batch_answered(batch_id=submission.filled_batch_id)
    return _stored_response(request, content=content, params=params, submission=submission)


# Where a Likert statement's place goes ("Statement 2 of 5"): filled per worker (_task_page).
# Replaced once, before the statement's text, so a statement that contains it stays as written.
STATEMENT_NUMBER = "\u2063statement-number\u2063"


def _task_page(*, content: HitContent, params: HitParams, preview: bool) -> HttpResponse:
    mode = "preview" if preview else "work"
    policy = channel_policy(content.channel)
    shell = shell_get(
        key=f"annotation:hit-page:{content.uuid}:{mode}",
        template=f"hit/{content.kind}.html",
        context=lambda: {
            "content": content,
            "scale": LIKERT_SCALE,
            "preview": preview,
            "preview_wording": policy.preview_wording,
            "preview_action": policy.preview_action,
            "submit_url": reverse("hit:submit", args=[content.uuid]),
        },
        expires_at=content.expires_at,
    )
    hidden = hidden_inputs(
        [
            ("assignmentId", params.assignment_id),
            ("hitId", params.hit_id),
            ("workerId", params.worker_id),
            ("turkSubmitTo", params.turk_submit_to),
            ("token", "" if preview else _token(content, params)),
            ("elapsed_ms", ""),  # set by hit.js on submit
        ]
    )
    # Each worker sees the statements in their own shuffled order (HitContent.shown_order);
    # the same order is worked out again, and stored, when the answer comes in.
    order = content.shown_order(params.worker_id)
    if content.kind != Batch.Kind.COMPARISON:
        statements = _likert_items(content=content, mode=mode)
        numbered = (statements[pid].replace(STATEMENT_NUMBER, str(n), 1) for n, pid in enumerate(order, start=1))
        return HttpResponse(shell_fill(shell, [hidden, mark_safe("".join(numbered))]))
    items = _ranking_items(content=content, mode=mode)
    return HttpResponse(
        shell_fill(
            shell, [hidden, mark_safe(",".join(map(str, order))), mark_safe("".join(items[pid] for pid in order))]
        )
    )


def _likert_items(*, content: HitContent, mode: str) -> dict[int, str]:
    """The HTML of each statement of a Likert task, by proposition id, its number left as
    STATEMENT_NUMBER: rendered once per task and mode, numbered in each worker's order."""
    pieces = shell_get(
        key=f"annotation:hit-likert-items:{content.uuid}:{mode}",
        template="hit/_likert_items.html",
        context=lambda: {
            "content": content,
            "scale": LIKERT_SCALE,
            "preview": mode == "preview",
            "number": STATEMENT_NUMBER,
        },
        expires_at=content.expires_at,
    )
    return dict(zip(content.item_ids, pieces[1:], strict=True))


def _ranking_items(*, content: HitContent, mode: str) -> dict[int, str]:
    """The HTML of each statement of an ordering task, by proposition id: rendered once per
    task and mode, put in each worker's order by `_task_page`."""
    pieces = shell_get(
        key=f"annotation:hit-items:{content.uuid}:{mode}",
        template="hit/_ranking_items.html",
        context=lambda: {"content": content, "preview": mode == "preview"},
        expires_at=content.expires_at,
    )
    return dict(zip(content.item_ids, pieces[1:], strict=True))


def hit_preview_page(content: HitContent, *, hit_id: str = "") -> HttpResponse:
    """The HIT page exactly as a worker sees it before accepting (MTurk's preview:
    assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE), for the researcher's dashboard: the task shown,
    disabled, with no assignment, no worker and no submit token, so nothing can be answered."""
    return _task_page(
        content=content, params=HitParams(assignment_id=PREVIEW_ASSIGNMENT_ID, hit_id=hit_id), preview=True
    )


def sample_content(*, topic: Topic) -> HitContent | None:
    """What the first Likert HIT of a topic not yet published would show: its first group of
    statements as the round's plan draws them (annotation.batching.likert_plan, the topic's
    seed; trap slots are left out). Built in memory, never stored; None for a topic with no
    propositions. Its uuid names no task, so the page's form leads nowhere."""
    campaign = topic.campaign
    real = propositions_for_likert(topic.propositions.filter(trap_kind=Proposition.TrapKind.NONE)).order_by("id")
    ids = list(real.values_list("id", flat=True))
    if not ids:
        return None
    plan = likert_plan(
        ids, group_size=campaign.likert_group_size, trap_rate=0, trap_pools=[], rng=random.Random(topic.pk)
    )
    texts = {p.pk: p.text for p in real.filter(pk__in=plan[0])}
    return HitContent(
        task_id=0,
        uuid=uuid5(NAMESPACE_URL, f"salience:sample:{topic.pk}"),
        kind=Batch.Kind.LIKERT,
        campaign_id=campaign.pk,
        channel=campaign.channel,
        environment=campaign.environment,
        assignment_duration_seconds=campaign.assignment_duration_seconds,
        question=campaign.question_for(topic),
        statements=tuple(Statement(pid, texts[pid]) for pid in plan[0]),
        hit_pk=None,
        expires_at=time.time(),  # the page is rendered anew for every sample
    )


def _content_get(task_uuid: UUID) -> HitContent:
    content = hit_content_get(task_uuid)
    if content is None:
        raise NotFound("This HIT does not exist any more. Please return it; you will not be penalised.")
    return content


def _token(content: HitContent, params: HitParams) -> str:
    return submit_token_make(task_uuid=content.uuid, assignment_id=params.assignment_id, worker_id=params.worker_id)


def _page_url(task_uuid: UUID, params: HitParams) -> str:
    query = params.query_string()
    return reverse("hit:page", args=[task_uuid]) + (f"?{query}" if query else "")


def _wants_json(request: HttpRequest) -> bool:
    # Browsers accept */*, so only an explicit application/json asks for JSON. META, not
    # request.headers, which copies every header of the request on first use.
    return "application/json" in request.META.get("HTTP_ACCEPT", "")


def _stored_response(
    request: HttpRequest, *, content: HitContent, params: HitParams, submission: Submission
) -> HttpResponse:
    policy = channel_policy(content.channel)
    target = params.external_submit_url(policy.submit_host(content.environment))
    fields = [("assignmentId", params.assignment_id), ("task", str(content.uuid)), *submission.answer.fields()]
    if _wants_json(request):
        return JsonResponse(
            {
                "status": "stored" if submission.created else "already_stored",
                "assignment_id": submission.assignment.assignment_id,
                "external_submit": {"url": target, "fields": dict(fields)} if target else None,
            }
        )
    if target is None:
        return render(request, "hit/thanks.html")
    return _external_submit_response(request, target=target, fields=fields, automatic=True, policy=policy)


def _already_submitted_response(
    request: HttpRequest, *, content: HitContent, params: HitParams, access: Access
) -> HttpResponse:
    """Offer to send the stored answer to MTurk again: the first post may have been lost."""
    policy = channel_policy(content.channel)
    target = params.external_submit_url(policy.submit_host(content.environment))
    if access.assignment is None or target is None:
        return render(request, "hit/already_submitted.html")
    stored_fields = access.assignment.answer.get("fields", {}).items()
    fields = [("assignmentId", params.assignment_id), ("task", str(content.uuid)), *stored_fields]
    return _external_submit_response(request, target=target, fields=fields, automatic=False, policy=policy)


def _external_submit_response(
    request: HttpRequest, *, target: str, fields: list, automatic: bool, policy: ChannelPolicy
) -> HttpResponse:
    shell = shell_get(
        key=f"annotation:external-submit:{'automatic' if automatic else 'button'}",
        template="hit/external_submit.html",
        context=lambda: {"automatic": automatic},
    )
    response = HttpResponse(shell_fill(shell, [escape(target), hidden_inputs(fields)]))
    setattr(response, FORM_TARGETS_ATTRIBUTE, (url_origin(target), *policy.form_targets))
    return response


def _error_response(request: HttpRequest, error: ApplicationError, *, retry_url: str = "") -> HttpResponse:
    if _wants_json(request):
        return JsonResponse(error.as_dict(), status=error.http_status)
    context = {"error": error, "retry_url": retry_url if error.http_status != 404 else ""}
    return render(request, "hit/error.html", context, status=error.http_status)
