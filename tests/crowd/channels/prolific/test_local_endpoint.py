"""The local Prolific endpoint over raw HTTP: tokens, JSON shapes, validation, transitions,
pagination, the control endpoints and the participant pages."""

import pytest
import requests

from rehearsal.localprolific import faults
from rehearsal.localprolific.models import Study, Submission

from .conftest import TOKEN

pytestmark = pytest.mark.prolific

DRAFT = {
    "name": "Rate statements",
    "internal_name": "raw-1",
    "description": "How important is each statement?",
    "external_study_url": "https://tasks.example.org/s/?PROLIFIC_PID={{%PROLIFIC_PID%}}&SESSION_ID={{%SESSION_ID%}}",
    "prolific_id_option": "url_parameters",
    "completion_codes": [{"code": "ABC123", "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}],
    "total_available_places": 2,
    "estimated_completion_time": 5,
    "reward": 100,
}


class Api:
    def __init__(self, base: str, token: str = TOKEN):
        self.base = f"{base}/localprolific/api/v1/"
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Token {token}"

    def __getattr__(self, method):
        return lambda path, **kwargs: self.http.request(method.upper(), self.base + path, **kwargs)


@pytest.fixture
def api(local_prolific):
    session = Api(local_prolific)
    yield session
    session.http.close()


@pytest.fixture
def draft(api) -> dict:
    created = api.post("studies/", json=DRAFT)
    assert created.status_code == 201, created.text
    return created.json()


def test_every_call_needs_the_workspace_token(local_prolific):
    for headers in ({}, {"Authorization": "Token wrong"}, {"Authorization": f"Bearer {TOKEN}"}):
        response = requests.get(f"{local_prolific}/localprolific/api/v1/studies/", headers=headers)
        assert response.status_code == 401
        assert response.json() == {
            "error": {"status": 401, "title": "Unauthorized", "detail": "No valid API token was provided."}
        }


def test_a_draft_has_prolifics_fields(draft):
    assert draft["status"] == "UNPUBLISHED"
    assert len(draft["id"]) == 24 and int(draft["id"], 16) >= 0
    assert (draft["reward"], draft["total_available_places"], draft["places_taken"]) == (100, 2, 0)
    assert draft["device_compatibility"] == ["desktop", "tablet", "mobile"]
    assert draft["published_at"] is None and draft["date_created"].endswith("Z")


def test_missing_and_invalid_fields_are_named_and_nothing_is_written(api):
    missing = api.post("studies/", json={"name": "x"})
    assert missing.status_code == 400
    assert set(missing.json()["error"]["detail"]) == {
        "description",
        "external_study_url",
        "prolific_id_option",
        "completion_codes",
        "total_available_places",
        "estimated_completion_time",
        "reward",
    }

    bad = api.post(
        "studies/",
        json={**DRAFT, "prolific_id_option": "cookie", "total_available_places": 0, "device_compatibility": ["watch"]},
    )
    assert set(bad.json()["error"]["detail"]) == {
        "prolific_id_option",
        "total_available_places",
        "device_compatibility",
    }
    assert Study.objects.count() == 0


def test_overlong_names_and_codes_are_refused_not_truncated(api):
    long = api.post(
        "studies/",
        json={
            **DRAFT,
            "name": "n" * 256,
            "completion_codes": [{"code": "C" * 65, "code_type": "COMPLETED", "actions": []}],
        },
    )

    assert long.status_code == 400
    assert set(long.json()["error"]["detail"]) == {"name", "completion_codes"}
    assert Study.objects.count() == 0


def test_a_url_without_the_participant_placeholder_and_underpaying_studies_are_refused(api):
    no_id = api.post("studies/", json={**DRAFT, "external_study_url": "https://tasks.example.org/s/"})
    cheap = api.post("studies/", json={**DRAFT, "reward": 10})

    assert "external_study_url" in no_id.json()["error"]["detail"]
    assert "below the minimum" in cheap.json()["error"]["detail"]["reward"][0]
    assert Study.objects.count() == 0


def test_only_a_draft_is_published_and_only_places_and_name_change_afterwards(api, draft):
    path = f"studies/{draft['id']}/"
    assert api.patch(path, json={"reward": 120}).json()["reward"] == 120

    assert api.post(path + "transition/", json={"action": "PUBLISH"}).json()["status"] == "ACTIVE"
    again = api.post(path + "transition/", json={"action": "PUBLISH"})
    assert again.status_code == 400
    assert again.json()["error"]["title"] == "Invalid status transition"

    assert "reward" in api.patch(path, json={"reward": 200}).json()["error"]["detail"]
    assert api.patch(path, json={"internal_name": "renamed", "total_available_places": 3}).status_code == 200
    assert api.patch(path, json={"total_available_places": 2}).status_code == 400
    assert Study.objects.get().total_available_places == 3


def test_pause_start_and_stop(api, draft):
    path = f"studies/{draft['id']}/transition/"
    api.post(path, json={"action": "PUBLISH"})

    assert api.post(path, json={"action": "PAUSE"}).json()["status"] == "PAUSED"
    assert api.post(path, json={"action": "START"}).json()["status"] == "ACTIVE"
    assert api.post(path, json={"action": "STOP"}).json()["status"] == "COMPLETED"
    assert api.post(path, json={"action": "START"}).status_code == 400
    assert api.post(path, json={"action": "ARCHIVE"}).status_code == 400


def test_lists_are_paginated_with_links(api, draft, participant_factory):
    api.post(f"studies/{draft['id']}/transition/", json={"action": "PUBLISH"})
    Study.objects.filter(study_id=draft["id"]).update(total_available_places=3)
    ids = [participant_factory().started(draft["id"])["submission_id"] for _ in range(3)]

    first = api.get("submissions/", params={"study": draft["id"], "page_size": 2}).json()
    second = requests.get(first["_links"]["next"]["href"], headers=api.http.headers).json()

    assert [s["id"] for s in first["results"] + second["results"]] == ids
    assert first["meta"] == {"count": 3}
    assert second["_links"]["next"]["href"] is None
    assert set(first["results"][0]) >= {"id", "participant_id", "status", "started_at", "completed_at", "study_code"}
    by_study = api.get(f"studies/{draft['id']}/submissions/").json()
    assert [s["id"] for s in by_study["results"]] == ids


def test_a_submission_is_reviewed_only_once_it_awaits_review(api, draft, participant_factory):
    api.post(f"studies/{draft['id']}/transition/", json={"action": "PUBLISH"})
    participant = participant_factory()
    started = participant.started(draft["id"])
    path = f"submissions/{started['submission_id']}/transition/"

    early = api.post(path, json={"action": "APPROVE"})
    assert early.status_code == 400
    participant.follow(f"{api.base.removesuffix('api/v1/')}submissions/complete", cc="ABC123")
    no_reason = api.post(path, json={"action": "REJECT"})
    assert set(no_reason.json()["error"]["detail"]) == {"message", "rejection_category"}

    approved = api.post(path, json={"action": "APPROVE"})
    assert approved.json() == {
        "id": started["submission_id"],
        "started_at": approved.json()["started_at"],
        "status": "APPROVED",
        "study_id": draft["id"],
        "completed_at": approved.json()["completed_at"],
        "entered_code": "ABC123",
        "participant": started["participant_id"],
    }
    detail = api.get(f"submissions/{started['submission_id']}/").json()
    assert (detail["status"], detail["bonus_payments"]) == ("APPROVED", [])


def test_starting_twice_resumes_and_the_completion_page_needs_a_participant(
    api, draft, participant_factory, local_prolific
):
    api.post(f"studies/{draft['id']}/transition/", json={"action": "PUBLISH"})
    participant = participant_factory("5f00000000000000000000aa")
    first = participant.start(draft["id"])
    again = participant.start(draft["id"])

    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json() == again.json()
    assert first.json()["url"] == (
        f"https://tasks.example.org/s/?PROLIFIC_PID=5f00000000000000000000aa&SESSION_ID={first.json()['session_id']}"
    )
    anonymous = requests.get(f"{local_prolific}/localprolific/submissions/complete", params={"cc": "ABC123"})
    assert anonymous.status_code == 400
    by_parameter = requests.get(
        f"{local_prolific}/localprolific/submissions/complete",
        params={"cc": "ABC123", "participant": "5f00000000000000000000aa", "format": "json"},
    )
    assert by_parameter.json()["status"] == "AWAITING REVIEW"


def test_readable_participant_ids_are_taken_and_odd_ones_refused(api, draft, participant_factory):
    api.post(f"studies/{draft['id']}/transition/", json={"action": "PUBLISH"})

    readable = participant_factory("ANN0000000000000000000001").start(draft["id"])
    odd = participant_factory("x" * 65).start(draft["id"])
    spaced = participant_factory("ann smith").start(draft["id"])

    assert readable.status_code == 201
    assert (odd.status_code, odd.json()["code"]) == (400, "participant_invalid")
    assert spaced.status_code == 400
    assert Submission.objects.get().participant_id == "ANN0000000000000000000001"


def test_the_browser_start_redirects_to_the_study_with_ids_filled_in(api, draft, local_prolific):
    api.post(f"studies/{draft['id']}/transition/", json={"action": "PUBLISH"})
    browser = requests.Session()

    started = browser.get(f"{local_prolific}/localprolific/studies/{draft['id']}/start", allow_redirects=False)
    submission = Submission.objects.get()
    assert started.status_code == 302
    assert started.headers["Location"] == (
        f"https://tasks.example.org/s/?PROLIFIC_PID={submission.participant_id}&SESSION_ID={submission.submission_id}"
    )
    done = browser.get(f"{local_prolific}/localprolific/submissions/complete", params={"cc": "ABC123"})
    assert "Thanks, your submission is recorded" in done.text
    browser.close()


def test_time_out_frees_the_place(api, draft, participant_factory, local_prolific):
    api.post(f"studies/{draft['id']}/transition/", json={"action": "PUBLISH"})
    started = participant_factory().started(draft["id"])
    participant_factory().started(draft["id"])

    timed_out = requests.post(
        f"{local_prolific}/localprolific/_control/submissions/{started['submission_id']}/time-out"
    )

    assert timed_out.json()["status"] == "TIMED-OUT"
    assert participant_factory().start(draft["id"]).status_code == 201


def test_bonus_csv_errors_name_the_lines(api, draft):
    refused = api.post(
        "submissions/bonus-payments/", json={"study_id": draft["id"], "csv_bonuses": "nobody,1.00\nnobody2,abc\n"}
    )

    assert refused.status_code == 400
    assert refused.json()["error"]["detail"]["csv_bonuses"] == [
        f"Line 1: nobody has not taken part in study {draft['id']}.",
        "Line 2: 'abc' is not an amount like 1.50.",
    ]


def test_faults_over_http(local_prolific, api):
    control = f"{local_prolific}/localprolific/_control/faults"
    created = requests.post(control, json={"throttle": 1, "retry_after": 2, "operations": ["studies.list"]})
    assert created.status_code == 201
    assert requests.get(control).json()["faults"] == [
        {"kind": "throttle", "remaining": 1, "latency_ms": 0, "retry_after": 2, "operations": ["studies.list"]}
    ]

    throttled = api.get("studies/")
    assert (throttled.status_code, throttled.headers["Retry-After"]) == (429, "2")
    assert api.get("studies/").status_code == 200

    assert requests.post(control, json={"operations": ["studies.delete"]}).status_code == 400
    faults.inject(service_fault=3)
    assert requests.delete(control).status_code == 204
    assert faults.active() == []


def test_other_methods_are_not_allowed(api, draft):
    assert api.delete(f"studies/{draft['id']}/").status_code == 405
