"""HIT page and submit views through Django's test client: states, headers, responses."""

import re
import time
from html import unescape
from urllib.parse import urlencode
from uuid import UUID

import pytest
from django.core.cache import cache
from django.db import DatabaseError, connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.models import Batch
from crowd.hit_page.access import hit_access_check
from crowd.hit_page.content import CACHE_SECONDS, ProcessCache, hit_content_get
from crowd.hit_page.params import PREVIEW_ASSIGNMENT_ID, HitParams
from crowd.hit_page.tokens import submit_token_make
from crowd.models import Assignment, LikertLabel, Worker, WorkerQuality
from tests.factories import (
    AssignmentFactory,
    BatchFactory,
    CampaignFactory,
    HITFactory,
    PropositionFactory,
    TaskFactory,
    TopicFactory,
    WorkerFactory,
    WorkerQualityFactory,
    ordered_propositions,
)

MTURK = "https://workersandbox.mturk.com"


@pytest.fixture(autouse=True)
def _fresh_cache():
    # HIT content and page fragments are cached per task uuid, in this process and in Django's cache.
    cache.clear()
    ProcessCache.clear_all()


@pytest.fixture
def likert_task(db):
    topic = TopicFactory(description="student loans without credit history")
    return TaskFactory(batch=BatchFactory(topic=topic), propositions=PropositionFactory.create_batch(5, topic=topic))


@pytest.fixture
def comparison_task(db):
    topic = TopicFactory()
    return TaskFactory(
        batch=BatchFactory(topic=topic, kind=Batch.Kind.COMPARISON),
        propositions=PropositionFactory.create_batch(5, topic=topic),
        # A fixed uuid pins each worker's starting order (crowd.hit_page.content.start_order).
        uuid=UUID("5a1e0ce0-0000-4000-8000-000000000001"),
    )


@pytest.fixture
def client():
    # The HIT runs in a third-party iframe: no CSRF cookie can be relied upon.
    return Client(enforce_csrf_checks=True)


def _page(client, task, *, assignment="ASG1", worker="WORKER1", submit_to=MTURK, **headers):
    query = {"assignmentId": assignment, "hitId": "HIT1", "workerId": worker, "turkSubmitTo": submit_to}
    query = {name: value for name, value in query.items() if value is not None}
    return client.get(f"/hit/{task.uuid}/?{urlencode(query)}", **headers)


def _form_fields(response) -> dict[str, str]:
    html = response.content.decode()
    return {
        unescape(name): unescape(value)
        for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html)
    }


def _ids(task):
    return [p.pk for p in ordered_propositions(task)]


def _submit(client, task, answer, *, page=None, headers=None, **overrides):
    """Post the form of `page` (by default a fresh page) with `answer` and `overrides`."""
    fields = _form_fields(page or _page(client, task))
    fields.update(answer)
    fields.update(overrides)
    return client.post(f"/hit/{task.uuid}/submit/", fields, **(headers or {}))


def _ratings(task, score=4):
    return {f"rating-{pid}": str(score) for pid in _ids(task)}


def _writes(queries) -> list[str]:
    return [q["sql"] for q in queries if q["sql"].split()[0].upper() in ("INSERT", "UPDATE", "DELETE")]


# --- the page -----------------------------------------------------------------------------


def test_likert_page_shows_question_statements_and_five_options(client, likert_task):
    response = _page(client, likert_task)
    html = response.content.decode()
    assert response.status_code == 200
    assert "Imagine you want to learn something about student loans without credit history." in unescape(html)
    assert html.count("<fieldset") == 5 and html.count("<legend>") == 5
    for label in (
        "Extremely important",
        "Very important",
        "Moderately important",
        "Slightly important",
        "Not at all important",
    ):
        assert html.count(f"<span>{label}</span>") == 5
    for proposition in ordered_propositions(likert_task):
        assert html.count(f'name="rating-{proposition.pk}"') == 5
        assert unescape(proposition.text) in unescape(html)
    assert '<details class="instructions">' in html
    assert 'id="submitButton"' in html and "disabled" not in html.split('id="submitButton"')[1].split(">")[0]
    fields = _form_fields(response)
    assert fields["assignmentId"] == "ASG1" and fields["workerId"] == "WORKER1" and fields["token"]


def _order_shown(response) -> list[int]:
    """The statements of an ordering page, top first."""
    return [int(pid) for pid in re.findall(r'data-id="(\d+)"', response.content.decode())]


def test_comparison_page_lists_items_with_keyboard_controls(client, comparison_task):
    response = _page(client, comparison_task)
    html = response.content.decode()
    assert sorted(_order_shown(response)) == sorted(_ids(comparison_task))
    assert html.count('data-move="up"') == 5 and html.count('data-move="down"') == 5
    assert html.count('tabindex="0"') == 5
    assert 'aria-live="assertive"' in html
    assert _form_fields(response)["order"] == ",".join(map(str, _order_shown(response)))
    assert "vendor/sortablejs/Sortable.min.js" in html


def test_each_worker_starts_an_ordering_in_their_own_order(client, comparison_task):
    ids = _ids(comparison_task)
    first, second = _page(client, comparison_task), _page(client, comparison_task, assignment="ASG2", worker="W2")
    # The seeds of these two workers on this task: fixed, so the test is too.
    assert _order_shown(first) == [ids[i] for i in (4, 2, 1, 0, 3)]
    assert _order_shown(second) == [ids[i] for i in (1, 3, 4, 2, 0)]
    for response in (first, second):
        assert _form_fields(response)["order"] == ",".join(map(str, _order_shown(response)))
    # Reloading, or a new page for the same worker, shows the same order.
    again = _page(client, comparison_task)
    assert _order_shown(again) == _order_shown(first) and _form_fields(again)["order"] == _form_fields(first)["order"]
    # Nothing in the address chooses it, and a preview shows the task's own order.
    tampered = client.get(f"/hit/{comparison_task.uuid}/?assignmentId=ASG1&hitId=HIT1&workerId=WORKER1&order=1&seed=1")
    assert _order_shown(tampered) == _order_shown(first)
    assert _order_shown(_page(client, comparison_task, assignment=PREVIEW_ASSIGNMENT_ID, worker=None)) == ids


def test_the_order_shown_is_stored_with_the_answer_and_decides_untouched(client, comparison_task):
    shown = _order_shown(_page(client, comparison_task))
    assert shown != _ids(comparison_task)
    assert _submit(client, comparison_task, {"order": ",".join(map(str, shown))}).status_code == 200
    other = _page(client, comparison_task, assignment="ASG2", worker="W2")
    # W2 submits the order WORKER1 was shown: a judgement, since W2 started from another one.
    assert _submit(client, comparison_task, {"order": ",".join(map(str, shown))}, page=other).status_code == 200

    stored = {a.worker.external_id: a for a in Assignment.objects.select_related("worker")}
    assert stored["WORKER1"].shown_order == shown and stored["WORKER1"].untouched
    assert stored["W2"].shown_order == _order_shown(other) and not stored["W2"].untouched


def test_pages_reference_only_their_own_static_files(client, likert_task, comparison_task):
    for task in (likert_task, comparison_task):
        html = _page(client, task).content.decode()
        assert re.findall(r'(?:src|href)="([^"]+)"', html) and all(
            url.startswith("/static/") for url in re.findall(r'(?:src|href)="([^"]+)"', html)
        )


@pytest.mark.parametrize("assignment", [PREVIEW_ASSIGNMENT_ID, None])
def test_preview_shows_the_task_disabled_and_writes_nothing(client, likert_task, assignment):
    with CaptureQueriesContext(connection) as queries:
        response = _page(client, likert_task, assignment=assignment, worker=None)
    html = response.content.decode()
    assert response.status_code == 200
    assert "Accept the HIT to start" in html
    assert html.count('<fieldset class="rating" disabled>') == 5
    assert re.search(r'id="submitButton"[^>]*disabled', html)
    assert _form_fields(response)["token"] == ""
    assert _writes(queries) == [] and not Worker.objects.exists()


@pytest.mark.parametrize("worker", ["\x00", "W\x00RKER", "WORKER 1", "W" * 500])
def test_a_preview_with_a_worker_id_mturk_never_makes_is_a_preview_not_an_error(client, likert_task, worker):
    """Found by the page's fuzz: a preview skips the ids' check, and a NUL in workerId reached
    the worker lookup (PostgreSQL refuses NUL in a string: a 500). Nobody is looked up."""
    with CaptureQueriesContext(connection) as queries:
        response = _page(client, likert_task, assignment=PREVIEW_ASSIGNMENT_ID, worker=worker)
    assert response.status_code == 200 and "Accept the HIT to start" in response.content.decode()
    assert _writes(queries) == [] and not Worker.objects.exists()


def test_preview_of_a_comparison_disables_moving(client, comparison_task):
    html = _page(client, comparison_task, assignment=PREVIEW_ASSIGNMENT_ID).content.decode()
    assert 'data-preview="true"' in html and 'tabindex="0"' not in html
    assert len(re.findall(r'data-move="(?:up|down)"[^>]*disabled', html)) == 10


def test_page_needs_the_worker_id_once_accepted(client, likert_task):
    response = _page(client, likert_task, worker=None)
    assert response.status_code == 400
    assert "open it from the HIT" in response.content.decode()


def test_unknown_task_is_a_polite_404(client, db):
    response = client.get("/hit/00000000-0000-0000-0000-000000000000/?assignmentId=A&workerId=W")
    assert response.status_code == 404
    assert "does not exist any more" in response.content.decode()
    assert "Content-Security-Policy" in response


@pytest.mark.parametrize("how", ["blocked", "excluded", "excluded_by_override"])
def test_blocked_or_excluded_worker_sees_no_task(client, likert_task, how):
    campaign = likert_task.batch.topic.campaign
    worker = WorkerFactory(external_id="WORKER1", blocked=how == "blocked")
    if how == "excluded":
        WorkerQualityFactory(campaign=campaign, worker=worker, computed_status=WorkerQuality.Status.EXCLUDED)
    if how == "excluded_by_override":
        WorkerQualityFactory(campaign=campaign, worker=worker, override_status=WorkerQuality.Status.EXCLUDED)
    for assignment in ("ASG1", PREVIEW_ASSIGNMENT_ID):
        response = _page(client, likert_task, assignment=assignment)
        html = response.content.decode()
        assert response.status_code == 200
        assert "not available to you" in html and "<fieldset" not in html and 'name="token"' not in html


@pytest.mark.parametrize(
    ("channel", "ask"),
    [
        ("mturk", "Please return this HIT; returning it does not affect your record."),
        ("prolific", "Please return the study on Prolific; returning does not affect your record."),
        ("links", "You can close this page."),
    ],
)
def test_a_turned_away_worker_is_asked_what_their_channel_needs(client, likert_task, channel, ask):
    """A Prolific participant excluded between two tasks meets this page in the session's
    frame: asked to return the study (so Prolific frees the place), not a HIT."""
    from annotation.models import Campaign

    Campaign.objects.filter(pk=likert_task.batch.topic.campaign_id).update(channel=channel)
    WorkerFactory(external_id="WORKER1", channel=channel, blocked=True)
    html = _page(client, likert_task).content.decode()
    assert "not available to you" in html and ask in html
    assert ("return this HIT" in html) == (channel == "mturk")


def test_an_override_readmits_an_excluded_worker_and_other_campaigns_do_not_count(client, likert_task):
    worker = WorkerFactory(external_id="WORKER1")
    WorkerQualityFactory(
        campaign=likert_task.batch.topic.campaign,
        worker=worker,
        computed_status=WorkerQuality.Status.EXCLUDED,
        override_status=WorkerQuality.Status.OK,
    )
    WorkerQualityFactory(campaign=CampaignFactory(), worker=worker, computed_status=WorkerQuality.Status.EXCLUDED)
    assert _page(client, likert_task).status_code == 200


def test_a_task_the_worker_submitted_says_so(client, likert_task):
    AssignmentFactory(task=likert_task, worker=WorkerFactory(external_id="WORKER1"), assignment_id="OLD")
    html = _page(client, likert_task, assignment="ASG1").content.decode()
    assert "already submitted" in html and "<fieldset" not in html


def test_reloading_a_submitted_assignment_offers_to_resend_it_to_mturk(client, likert_task):
    _submit(client, likert_task, _ratings(likert_task, 2))
    response = _page(client, likert_task)
    html = response.content.decode()
    assert "already submitted" in html and "data-autosubmit" not in html
    assert f'action="{MTURK}/mturk/externalSubmit"' in html
    fields = _form_fields(response)
    assert fields["assignmentId"] == "ASG1" and all(fields[f"rating-{pid}"] == "2" for pid in _ids(likert_task))


def test_a_cached_page_costs_one_query(client, likert_task, django_assert_num_queries):
    WorkerFactory(external_id="WORKER1")
    with django_assert_num_queries(4):  # task, its statements, its HIT; the worker
        assert _page(client, likert_task).status_code == 200
    with django_assert_num_queries(1):  # the worker's state only
        assert _page(client, likert_task, assignment="ASG2").status_code == 200
    ProcessCache.clear_all()  # as in another process: Django's cache still has the page
    with django_assert_num_queries(1):
        assert _page(client, likert_task, assignment="ASG3").status_code == 200


def _page_text(client, task, **params) -> str:
    return unescape(_page(client, task, **params).content.decode())


def test_an_edit_reaches_every_page_within_cache_seconds(client, likert_task, monkeypatch):
    HITFactory(task=likert_task)
    proposition = ordered_propositions(likert_task)[0]
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now)
    assert proposition.text in _page_text(client, likert_task)
    now += CACHE_SECONDS - 100
    assert proposition.text in _page_text(client, likert_task, assignment=PREVIEW_ASSIGNMENT_ID)
    proposition.subject = "Edited subject"
    proposition.save(update_fields=["subject"])
    edited = type(proposition).objects.get(pk=proposition.pk).text
    now += 99
    assert edited not in _page_text(client, likert_task, assignment=PREVIEW_ASSIGNMENT_ID)  # cached, as documented
    now += 2  # CACHE_SECONDS after the content was read: the preview page, cached later, expires with it
    for assignment in (PREVIEW_ASSIGNMENT_ID, "ASG2"):
        assert edited in _page_text(client, likert_task, assignment=assignment)


def test_a_new_workers_submission_is_one_transaction(client, likert_task):
    page, ratings = _page(client, likert_task), _ratings(likert_task)
    with CaptureQueriesContext(connection) as queries:
        assert _submit(client, likert_task, ratings, page=page).status_code == 200
    statements = [q["sql"].split()[0] for q in queries if "SAVEPOINT" not in q["sql"]]
    if connection.vendor == "postgresql":
        # worker, assignment and labels in one prepared statement: PREPARE ...; EXECUTE ... on
        # the connection's first submission, EXECUTE after
        assert statements in (["PREPARE"], ["EXECUTE"])
    else:
        # worker get_or_create, assignment, labels; then whether the task holds its answers
        assert statements == ["SELECT", "INSERT", "INSERT", "INSERT", "SELECT"]
    worker = Worker.objects.get(external_id="WORKER1")
    assert Assignment.objects.get().worker == worker
    assert list(LikertLabel.objects.order_by("id").values_list("proposition_id", "worker_id")) == [
        (pid, worker.pk) for pid in _ids(likert_task)
    ]


def test_a_returning_workers_submission_and_its_repeat_are_one_statement_each(client, likert_task):
    if connection.vendor != "postgresql":
        pytest.skip("the one-statement submission is PostgreSQL's (make test)")
    WorkerFactory(external_id="WORKER1")
    page, ratings = _page(client, likert_task), _ratings(likert_task)
    runs = []
    for _ in range(3):  # the repeats: nothing inserted, the stored answer read by a prepared statement
        with CaptureQueriesContext(connection) as queries:
            assert _submit(client, likert_task, ratings, page=page).status_code == 200
        runs.append([q["sql"].split()[0] for q in queries])
    assert runs[0] in (["PREPARE"], ["EXECUTE"]) and runs[1] in (["EXECUTE", "PREPARE"], ["EXECUTE", "EXECUTE"])
    assert runs[2] == ["EXECUTE", "EXECUTE"]
    assert Worker.objects.count() == 1 and Assignment.objects.count() == 1 and LikertLabel.objects.count() == 5


@pytest.mark.django_db(transaction=True)
def test_the_worker_state_query_is_prepared_once_per_connection(client, likert_task):
    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's (make test)")

    def page_statements(assignment):
        with CaptureQueriesContext(connection) as queries:
            assert _page(client, likert_task, assignment=assignment).status_code == 200
        return [q["sql"].split()[0] for q in queries]

    WorkerFactory(external_id="WORKER1")
    _page(client, likert_task, assignment="WARM")  # caches the content
    connection.close()
    assert page_statements("ASG1") == ["PREPARE"]  # PREPARE ...; EXECUTE ...: one round trip
    assert page_statements("ASG2") == ["EXECUTE"]
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")  # as a pooler sharing sessions would
    params = HitParams(assignment_id="ASG3", worker_id="WORKER1")
    with pytest.raises(DatabaseError):  # the page answers 503, "try again"
        hit_access_check(content=hit_content_get(likert_task.uuid), params=params)
    assert page_statements("ASG4") == ["PREPARE"]  # under a new name: the old one may linger
    connection.close()
    assert page_statements("ASG5") == ["PREPARE"]
    connection.settings_dict["DISABLE_SERVER_SIDE_CURSORS"] = True  # Django's switch for such poolers
    try:
        assert page_statements("ASG6") == ["SELECT"]
    finally:
        connection.settings_dict.pop("DISABLE_SERVER_SIDE_CURSORS")


# --- headers ------------------------------------------------------------------------------


def test_hit_pages_may_be_framed_by_mturk_only(client, likert_task, settings):
    settings.HIT_FRAME_ANCESTORS = ["'self'", "https://workersandbox.mturk.com", "https://worker.mturk.com"]
    page = _page(client, likert_task)
    submitted = _submit(client, likert_task, _ratings(likert_task))
    error = client.post(f"/hit/{likert_task.uuid}/submit/", {})
    for response in (page, submitted, error):
        assert "X-Frame-Options" not in response
        policy = response["Content-Security-Policy"]
        assert "frame-ancestors 'self' https://workersandbox.mturk.com https://worker.mturk.com" in policy
        assert "default-src 'self'" in policy and "script-src 'self'" in policy
    assert "form-action 'self';" in page["Content-Security-Policy"]
    assert f"form-action 'self' {MTURK} https://*.mturk.com;" in submitted["Content-Security-Policy"]


def test_hit_pages_run_without_sessions_auth_or_messages(client, likert_task):
    """The HIT page reads none of them (config/scoped_middleware.py): skipped on its paths,
    whatever cookies the browser sends, and still run on every other page."""
    client.cookies["sessionid"] = "a-researchers-session"
    page = _page(client, likert_task)
    submitted = _submit(client, likert_task, _ratings(likert_task))
    refused = client.post(f"/hit/{likert_task.uuid}/submit/", {})
    missing = client.get("/hit/5a1e0ce0-0000-4000-8000-0000000000ff/")
    for response in (page, submitted, refused, missing):
        request = response.wsgi_request
        assert not {"session", "user", "_messages"} & set(vars(request)), request.path
        assert "Cookie" not in response.get("Vary", "") and not response.cookies
    assert [page.status_code, submitted.status_code, refused.status_code, missing.status_code] == [200, 200, 400, 404]
    login = client.get("/accounts/login/")
    assert {"session", "user", "_messages"} <= set(vars(login.wsgi_request))


def test_the_rest_of_the_site_still_denies_framing(client, db):
    response = client.get("/admin/login/")
    assert response["X-Frame-Options"] == "DENY"


# --- submitting ---------------------------------------------------------------------------


def test_submit_stores_and_hands_the_answer_to_mturk(client, likert_task):
    response = _submit(client, likert_task, {**_ratings(likert_task, 5), "elapsed_ms": "12345"})
    html = response.content.decode()
    assert response.status_code == 200
    assert f'action="{MTURK}/mturk/externalSubmit"' in html and 'data-autosubmit="true"' in html
    fields = _form_fields(response)
    assert fields["assignmentId"] == "ASG1" and fields["task"] == str(likert_task.uuid)
    assert {name: value for name, value in fields.items() if name.startswith("rating-")} == _ratings(likert_task, 5)
    assert "token" not in fields and "workerId" not in fields
    assignment = Assignment.objects.get()
    assert assignment.time_on_task_ms == 12345 and assignment.accepted_at is not None
    assert LikertLabel.objects.filter(score=5).count() == 5


@pytest.mark.parametrize(
    "submit_to, action",
    [
        ("https://www.mturk.com/", "https://www.mturk.com/mturk/externalSubmit"),
        ("http://127.0.0.1:8000/localturk", "http://127.0.0.1:8000/localturk/mturk/externalSubmit"),
        ("https://host.example/a path/?q=1#f", "https://host.example/a%20path/mturk/externalSubmit"),
    ],
)
def test_the_answer_goes_to_turk_submit_to_plus_external_submit(client, likert_task, submit_to, action):
    page = _page(client, likert_task, submit_to=submit_to)
    response = _submit(client, likert_task, _ratings(likert_task), page=page)
    assert f'action="{action}"' in response.content.decode()
    origin = action.split("/")[:3]
    assert f"form-action 'self' {'/'.join(origin)} https://*.mturk.com;" in response["Content-Security-Policy"]


def test_submit_without_turk_submit_to_thanks_the_worker(client, likert_task):
    page = _page(client, likert_task, submit_to=None)
    response = _submit(client, likert_task, _ratings(likert_task), page=page, hitId="")
    assert response.status_code == 200 and "Thank you" in response.content.decode()
    assert Assignment.objects.count() == 1


def test_missing_turk_submit_to_falls_back_to_the_campaigns_mturk_site(client, likert_task):
    campaign = likert_task.batch.topic.campaign
    campaign.environment = "production"
    campaign.save(update_fields=["environment"])
    page = _page(client, likert_task, submit_to=None)
    response = _submit(client, likert_task, _ratings(likert_task), page=page)
    assert 'action="https://www.mturk.com/mturk/externalSubmit"' in response.content.decode()


@pytest.mark.parametrize("bad", ["javascript:alert(1)", "ftp://x.example", "https://user:pw@evil.example", "//evil"])
def test_a_strange_turk_submit_to_is_never_a_form_target(client, likert_task, bad):
    page = _page(client, likert_task, submit_to=bad)
    response = _submit(client, likert_task, _ratings(likert_task), page=page, hitId="")
    assert "Thank you" in response.content.decode()


def test_submitting_twice_stores_once_and_succeeds_twice(client, likert_task):
    page = _page(client, likert_task)
    first = _submit(client, likert_task, _ratings(likert_task), page=page)
    second = _submit(client, likert_task, _ratings(likert_task), page=page)
    assert first.status_code == second.status_code == 200
    assert first.content == second.content
    assert Assignment.objects.count() == 1 and LikertLabel.objects.count() == 5


def test_a_different_second_answer_is_a_409(client, likert_task):
    page = _page(client, likert_task)
    _submit(client, likert_task, _ratings(likert_task, 5), page=page)
    response = _submit(client, likert_task, _ratings(likert_task, 1), page=page)
    assert response.status_code == 409
    assert "already submitted with a different answer" in response.content.decode()
    assert set(LikertLabel.objects.values_list("score", flat=True)) == {5}


def test_comparison_submit_stores_pairs(client, comparison_task):
    order = list(reversed(_order_shown(_page(client, comparison_task))))
    response = _submit(client, comparison_task, {"order": ",".join(map(str, order))})
    assert response.status_code == 200
    assert _form_fields(response)["order"] == ",".join(map(str, order))
    assignment = Assignment.objects.get()
    assert not assignment.untouched and assignment.comparisons.count() == 10


@pytest.mark.parametrize(
    "overrides, code",
    [
        ({"token": ""}, "invalid_token"),
        ({"token": "forged:token"}, "invalid_token"),
        ({"workerId": "SOMEONE_ELSE"}, "invalid_token"),
        ({"assignmentId": "ASG2"}, "invalid_token"),
        ({"assignmentId": PREVIEW_ASSIGNMENT_ID}, "not_accepted"),
    ],
)
def test_submit_refuses_a_form_this_page_did_not_issue(client, likert_task, overrides, code):
    response = _submit(
        client, likert_task, _ratings(likert_task), headers={"HTTP_ACCEPT": "application/json"}, **overrides
    )
    assert response.status_code == 400
    assert response.json()["code"] == code
    assert not Assignment.objects.exists() and not Worker.objects.exists()


def test_a_token_for_another_task_is_refused(client, likert_task, comparison_task):
    page = _page(client, comparison_task)
    fields = {**_form_fields(page), **_ratings(likert_task)}
    response = client.post(f"/hit/{likert_task.uuid}/submit/", fields)
    assert response.status_code == 400 and "another task" in response.content.decode()


def test_an_expired_token_is_refused(client, likert_task, monkeypatch):
    fields = _form_fields(_page(client, likert_task))
    campaign = likert_task.batch.topic.campaign
    monkeypatch.setattr("crowd.hit_page.tokens.GRACE_SECONDS", -campaign.assignment_duration_seconds - 10)
    response = client.post(
        f"/hit/{likert_task.uuid}/submit/", {**fields, **_ratings(likert_task)}, HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 400 and response.json()["code"] == "token_expired"


def test_an_incomplete_answer_is_a_400_page_with_a_way_back(client, likert_task):
    ratings = _ratings(likert_task)
    ratings.pop(next(iter(ratings)))
    response = _submit(client, likert_task, ratings)
    html = response.content.decode()
    assert response.status_code == 400
    assert "This statement is not rated." in html and "Traceback" not in html
    assert f'href="/hit/{likert_task.uuid}/?assignmentId=ASG1' in html
    assert not Assignment.objects.exists()


def test_an_invalid_answer_as_json_lists_the_problems(client, likert_task):
    response = _submit(client, likert_task, _ratings(likert_task, 9), headers={"HTTP_ACCEPT": "application/json"})
    body = response.json()
    assert response.status_code == 400 and body["code"] == "invalid_answer" and len(body["details"]) == 5


def test_json_success_names_the_mturk_target(client, likert_task):
    page = _page(client, likert_task)
    json = {"HTTP_ACCEPT": "application/json"}
    response = _submit(client, likert_task, _ratings(likert_task), page=page, headers=json)
    body = response.json()
    assert body["status"] == "stored" and body["assignment_id"] == "ASG1"
    assert body["external_submit"]["url"] == f"{MTURK}/mturk/externalSubmit"
    again = _submit(client, likert_task, _ratings(likert_task), page=page, headers=json)
    assert again.json()["status"] == "already_stored"


def test_submit_only_accepts_post(client, likert_task):
    response = client.get(f"/hit/{likert_task.uuid}/submit/")
    assert response.status_code == 405 and "X-Frame-Options" not in response


def test_a_token_made_by_hand_with_the_site_key_is_accepted(client, likert_task):
    """The token is the only credential: the same one the page embeds works from any client."""
    token = submit_token_make(task_uuid=likert_task.uuid, assignment_id="A9", worker_id="W9")
    fields = {"assignmentId": "A9", "workerId": "W9", "token": token, **_ratings(likert_task)}
    assert client.post(f"/hit/{likert_task.uuid}/submit/", fields).status_code == 200
