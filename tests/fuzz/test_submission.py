"""POST /hit/<uuid>/submit/ (and GET /hit/<uuid>/) on fuzzed requests: every refusal is a
4xx with a message, JSON when asked for, and writes nothing; a valid answer is stored once,
its repeat is a 200, a different answer for the same assignment is a 409. Never a 500."""

import time
import uuid
from unittest import mock
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.test import Client
from hypothesis import event, given
from hypothesis import strategies as st

from annotation.models import Batch
from crowd.hit_page.answers import MAX_PROBLEMS
from crowd.hit_page.content import hit_content_get
from crowd.hit_page.params import PREVIEW_ASSIGNMENT_ID
from crowd.hit_page.tokens import GRACE_SECONDS, submit_token_make
from crowd.models import Assignment
from tests.factories import ordered_propositions
from tests.fuzz.examples import FUZZ, FUZZ_SLOW, answer_counts, isolated
from tests.fuzz.hit_forms import IDENTITIES, answer_fields, elapsed, expected_answer, valid_fields

pytestmark = pytest.mark.django_db

JSON = {"HTTP_ACCEPT": "application/json"}
HTML = {"HTTP_ACCEPT": "text/html,application/xhtml+xml,*/*;q=0.8"}
LABELS_PER_ASSIGNMENT = {Batch.Kind.LIKERT: 5, Batch.Kind.COMPARISON: 10}


@pytest.fixture
def client():
    # The HIT runs in a third-party iframe: no CSRF cookie can be relied upon. Exceptions a
    # view lets escape are re-raised by the test client: a 500 fails the test with its traceback.
    return Client(enforce_csrf_checks=True)


@pytest.fixture
def tasks(likert_task, comparison_task):
    return {Batch.Kind.LIKERT: likert_task, Batch.Kind.COMPARISON: comparison_task}


def _ids(task) -> list[int]:
    return [p.pk for p in ordered_propositions(task)]


def _shown(task, worker: str) -> list[int]:
    return list(hit_content_get(task.uuid).shown_order(worker))


def _token(task_uuid, assignment: str, worker: str, *, expired_for=None) -> str:
    if expired_for is None:
        return submit_token_make(task_uuid=task_uuid, assignment_id=assignment, worker_id=worker)
    issued = time.time() - (expired_for.batch.topic.campaign.assignment_duration_seconds + GRACE_SECONDS + 60)
    with mock.patch("time.time", return_value=issued):
        return submit_token_make(task_uuid=task_uuid, assignment_id=assignment, worker_id=worker)


def _identity_fields(identity: str, task, other_task, assignment: str, worker: str) -> tuple[str, dict]:
    """(the submit URL, the form's own fields) for one way of posting."""
    url = f"/hit/{uuid.uuid4() if identity == 'unknown_task' else task.uuid}/submit/"
    posted_assignment, posted_worker = assignment, worker
    minted = {"task_uuid": task.uuid, "assignment": assignment, "worker": worker}
    if identity == "another_worker":
        minted["worker"] = f"{worker}B"
    elif identity == "another_assignment":
        minted["assignment"] = f"{assignment}B"
    elif identity == "another_task":
        minted["task_uuid"] = other_task.uuid
    elif identity == "preview":
        posted_assignment = PREVIEW_ASSIGNMENT_ID
    elif identity == "unusable_ids":
        posted_assignment = minted["assignment"] = f"{assignment} é"
    elif identity == "no_worker":
        posted_worker = minted["worker"] = ""
    token = _token(
        minted["task_uuid"],
        minted["assignment"],
        minted["worker"],
        expired_for=task if identity == "expired_token" else None,
    )
    if identity == "garbage_token":
        token = token[::-1]
    elif identity == "tampered_token":
        token = token[:-3] + ("AAA" if not token.endswith("AAA") else "BBB")
    fields = {"assignmentId": posted_assignment, "workerId": posted_worker, "hitId": "HIT1", "token": token}
    if identity == "no_token":
        del fields["token"]
    return url, fields


def _counts_for(kind: str, stored: dict[tuple[str, str], dict]) -> dict[str, int]:
    """What answer_counts() must be once the answers in `stored` ((assignment, worker) -> answer) are in."""
    labels = len(stored) * LABELS_PER_ASSIGNMENT[kind]
    return {
        "Worker": len({worker for _assignment, worker in stored}),
        "Assignment": len(stored),
        "LikertLabel": labels if kind == Batch.Kind.LIKERT else 0,
        "Comparison": labels if kind == Batch.Kind.COMPARISON else 0,
    }


def _post(client, url: str, pairs: list[tuple[str, str]], headers: dict):
    return client.post(url, urlencode(pairs), content_type="application/x-www-form-urlencoded", **headers)


def assert_refusal(response, code: str, wants_json: bool) -> None:
    """A 4xx that says what went wrong: JSON {code, message} when asked for, else the page."""
    if wants_json:
        assert response["Content-Type"] == "application/json", response.content[:200]
        body = response.json()
        assert body["code"] == code and body["message"], body
    else:
        assert response["Content-Type"].startswith("text/html")
        page = response.content.decode()
        assert f"Code: {code}" in page and 'class="error-message"' in page


_kinds = st.sampled_from([Batch.Kind.LIKERT, Batch.Kind.COMPARISON])
_post_step = st.fixed_dictionaries(
    {
        "identity": st.one_of(st.just("valid"), st.sampled_from(sorted(IDENTITIES))),
        # Mostly one assignment of one worker, so that repeats and conflicts happen.
        "assignment": st.sampled_from(["ASG1", "ASG1", "ASG1", "ASG2"]),
        "worker": st.sampled_from(["WORKER1", "WORKER1", "WORKER1", "WORKER2"]),
        "json": st.booleans(),
        "elapsed_ms": elapsed,
        "turk_submit_to": st.sampled_from(
            [None, "https://workersandbox.mturk.com", "javascript:alert(1)", "http://[::1"]
        ),
        "answer": st.sampled_from(["valid", "fuzzed", "repeat", "repeat"]),  # repeat: the previous post's answer
    }
)


@FUZZ_SLOW
@given(kind=_kinds, steps=st.lists(_post_step, min_size=1, max_size=4), data=st.data())
def test_every_post_is_stored_once_or_refused_with_a_message(client, tasks, kind, steps, data):
    task = tasks[kind]
    other_task = tasks[Batch.Kind.COMPARISON if kind == Batch.Kind.LIKERT else Batch.Kind.LIKERT]
    ids = _ids(task)
    with isolated():
        stored: dict[tuple[str, str], dict] = {}  # (assignment, worker) -> the stored answer
        answer = None
        for step in steps:
            if step["answer"] != "repeat" or answer is None:
                answer = data.draw(valid_fields(kind, ids) if step["answer"] == "valid" else answer_fields(kind, ids))
            url, own = _identity_fields(step["identity"], task, other_task, step["assignment"], step["worker"])
            if step["elapsed_ms"] is not None:
                own["elapsed_ms"] = step["elapsed_ms"]
            if step["turk_submit_to"] is not None:
                own["turkSubmitTo"] = step["turk_submit_to"]
            response = _post(client, url, [*own.items(), *answer.fields], JSON if step["json"] else HTML)

            status, code = IDENTITIES[step["identity"]]
            # "untouched" is judged against the order this worker was shown (their own shuffle).
            expected = expected_answer(kind, _shown(task, step["worker"]), answer.fields)
            key = (step["assignment"], step["worker"])
            if step["identity"] == "valid":
                if expected is None:
                    status, code = 400, "invalid_answer"
                elif key in stored and stored[key] != expected:
                    status, code = 409, "answer_conflict"
                elif key in stored:
                    code = "already_stored"
                else:
                    code = "stored"
                    stored[key] = expected
            event(f"{status} {code}")
            assert response.status_code == status, (step, answer, response.content[:300])
            if status == 200 and step["json"]:
                assert response.json()["status"] == code and response.json()["assignment_id"] == step["assignment"]
            elif status != 200:
                assert_refusal(response, code, step["json"])
            assert answer_counts() == _counts_for(kind, stored)
        for (assignment, worker), answer in stored.items():
            row = Assignment.objects.get(assignment_id=assignment, worker__external_id=worker)
            assert {key: value for key, value in row.answer.items() if key != "fields"} == answer
            assert row.task_id == task.pk and row.time_on_task_ms >= 0


@FUZZ
@given(kind=_kinds, data=st.data())
def test_the_same_valid_answer_twice_is_one_assignment(client, tasks, kind, data):
    task = tasks[kind]
    answer = data.draw(valid_fields(kind, _ids(task)))
    url, own = _identity_fields("valid", task, task, "ASG1", "WORKER1")
    with isolated():
        first = _post(client, url, [*own.items(), *answer.fields], JSON)
        again = _post(client, url, [*own.items(), *answer.fields], JSON)
        assert (first.status_code, first.json()["status"]) == (200, "stored")
        assert (again.status_code, again.json()["status"]) == (200, "already_stored")
        assert answer_counts() == _counts_for(kind, {("ASG1", "WORKER1"): {}})


_FORM_NAMES = st.sampled_from(["assignmentId", "workerId", "token", "rating-1", "order", "x"])
_MULTIPART_HEAD = b'--fuzz\r\nContent-Disposition: form-data; name="assignmentId"\r\n\r\n'
_CONTENT_TYPES = [
    "application/x-www-form-urlencoded",
    "application/x-www-form-urlencoded; charset=latin-1",
    "application/x-www-form-urlencoded; charset=no-such-codec",
    "multipart/form-data; boundary=fuzz",
    "multipart/form-data",
    "text/plain",
    "application/json",
    "",
]


@FUZZ
@given(
    body=st.one_of(
        st.binary(max_size=300),
        st.text(max_size=200).map(str.encode),
        st.lists(st.tuples(_FORM_NAMES, st.binary(max_size=20)), max_size=6).map(
            lambda pairs: b"&".join(name.encode() + b"=" + value for name, value in pairs)
        ),
        st.binary(max_size=200).map(lambda junk: _MULTIPART_HEAD + junk),
    ),
    content_type=st.sampled_from(_CONTENT_TYPES),
    wants_json=st.booleans(),
)
def test_an_arbitrary_body_is_a_4xx_and_writes_nothing(client, likert_task, body, content_type, wants_json):
    before = answer_counts()
    with isolated():
        response = client.generic(
            "POST",
            f"/hit/{likert_task.uuid}/submit/",
            body,
            content_type=content_type,
            **(JSON if wants_json else HTML),
        )
        assert response.status_code == 400, response.content[:300]
        assert answer_counts() == before
        if wants_json:
            assert response["Content-Type"] == "application/json", response.content[:300]
            assert response.json()["code"] and response.json()["message"]
            event(f"JSON {response.json()['code']}")
        else:
            assert (
                response["Content-Type"].startswith("text/html")
                and 'class="error-message"' in response.content.decode()
            )


@FUZZ
@given(
    query=st.dictionaries(
        st.sampled_from(["assignmentId", "hitId", "workerId", "turkSubmitTo", "x"]),
        st.one_of(st.text(max_size=70), st.sampled_from([PREVIEW_ASSIGNMENT_ID, "A1", "W1", "https://www.mturk.com"])),
        max_size=5,
    ),
    unknown=st.booleans(),
)
def test_the_hit_page_answers_any_query_and_writes_nothing(client, likert_task, query, unknown):
    with isolated():
        before = answer_counts()
        response = client.get(f"/hit/{uuid.uuid4() if unknown else likert_task.uuid}/", query)
        event(str(response.status_code))
        assert response.status_code in ((404,) if unknown else (200, 400)), response.content[:300]
        assert answer_counts() == before


# --- oversized and hostile requests, and known bugs ----------------------------------------


def _valid_post(task) -> list[tuple[str, str]]:
    """The form fields of a valid Likert answer, as the page posts them."""
    _url, own = _identity_fields("valid", task, task, "ASG1", "WORKER1")
    return [*own.items(), *((f"rating-{pid}", "3") for pid in _ids(task))]


def test_oversized_values_are_refused_with_a_message(client, likert_task, comparison_task):
    huge = "x" * 1_000_000
    last_rating = (f"rating-{_ids(likert_task)[-1]}", huge)
    response = _post(client, f"/hit/{likert_task.uuid}/submit/", [*_valid_post(likert_task)[:-1], last_rating], JSON)
    assert response.status_code == 400 and response.json()["code"] == "invalid_answer"
    url, own = _identity_fields("valid", comparison_task, comparison_task, "ASG1", "WORKER1")
    response = _post(client, url, [*own.items(), ("order", "x" * 1_000_000)], JSON)
    assert response.status_code == 400 and response.json()["code"] == "invalid_answer"
    assert answer_counts() == {"Worker": 0, "Assignment": 0, "LikertLabel": 0, "Comparison": 0}


@pytest.mark.parametrize(
    "where",
    [
        "elapsed_ms",
        "rating-name",
        "rating-score",
        "order",
        "order-leading-zeros",
    ],
)
def test_numbers_over_4300_digits_are_refused_with_a_message(client, likert_task, comparison_task, where):
    digits = "1" * 4301
    if where.startswith("order"):
        url, own = _identity_fields("valid", comparison_task, comparison_task, "ASG1", "WORKER1")
        ids = [str(pid) for pid in _ids(comparison_task)]
        pairs = [*own.items(), ("order", digits if where == "order" else ",".join(["0" * 4301 + ids[0], *ids[1:]]))]
    else:
        url = f"/hit/{likert_task.uuid}/submit/"
        pairs = _valid_post(likert_task)
        if where == "elapsed_ms":
            pairs.append(("elapsed_ms", digits))
        elif where == "rating-name":
            pairs.append((f"rating-{digits}", "3"))
        else:
            pairs[-1] = (pairs[-1][0], digits)
    response = _post(client, url, pairs, JSON)
    if where in ("elapsed_ms", "order-leading-zeros"):  # elapsed_ms: implausible, ignored; zeros are no digits
        assert response.status_code == 200 and Assignment.objects.get().time_on_task_ms >= 0
    else:
        assert response.status_code == 400 and response.json()["code"] == "invalid_answer"
        assert not Assignment.objects.exists()


@pytest.mark.parametrize("alias", ["rating-0{}", "rating- {}", "rating-{} "])
def test_two_fields_rating_one_statement_are_refused(client, likert_task, alias):
    first = _ids(likert_task)[0]
    pairs = [*_valid_post(likert_task), (alias.format(first), "1")]
    response = _post(client, f"/hit/{likert_task.uuid}/submit/", pairs, JSON)
    assert response.status_code == 400 and response.json()["code"] == "invalid_answer"
    assert response.json()["details"] == [
        {
            "field": alias.format(first),
            "message": f"Not a field of this task: statement {first} is rated in the field rating-{first}.",
        }
    ]
    assert not Assignment.objects.exists()


def test_a_refused_answer_lists_at_most_20_problems(client, likert_task):
    foreign = [(f"rating-{10**9 + n}", "3") for n in range(200)]
    response = _post(client, f"/hit/{likert_task.uuid}/submit/", [*_valid_post(likert_task), *foreign], JSON)
    body = response.json()
    assert response.status_code == 400 and body["code"] == "invalid_answer"
    assert len(body["details"]) == MAX_PROBLEMS and body["message"].endswith("(199 more problems)")
    assert not Assignment.objects.exists()


def _unparseable(client, task, what: str, headers: dict):
    url = f"/hit/{task.uuid}/submit/"
    if what == "bad-multipart":
        return client.generic("POST", url, b"junk", content_type="multipart/form-data", **headers)
    if what == "too-many-fields":
        pairs = [*_valid_post(task), *(("x", "1") for _ in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS))]
    else:
        pairs = [*_valid_post(task), ("x", "y" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE)]
    return _post(client, url, pairs, headers)


UNPARSEABLE = {
    "bad-multipart": ("malformed_form_data", "its form data is malformed"),
    "too-many-fields": ("too_many_fields", f"more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,} fields"),
    "too-large": ("request_too_large", f"more than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes of form data"),
}


@pytest.mark.parametrize("what", sorted(UNPARSEABLE))
@pytest.mark.parametrize("wants_json", [True, False], ids=["json", "html"])
def test_an_unparseable_body_is_a_400_that_says_why_inside_the_hit_frame(client, likert_task, what, wants_json):
    response = _unparseable(client, likert_task, what, JSON if wants_json else HTML)
    code, why = UNPARSEABLE[what]
    assert response.status_code == 400
    assert not Assignment.objects.exists()
    assert_refusal(response, code, wants_json)
    assert why in (response.json()["message"] if wants_json else response.content.decode())
    assert "X-Frame-Options" not in response
    assert " ".join(settings.HIT_FRAME_ANCESTORS) in response["Content-Security-Policy"]
