"""The worker simulator: HTML pages for people, JSON for programs, MTurk's worker rules."""

from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from rehearsal.localturk import marketplace, state
from rehearsal.localturk.errors import WorkerActionError
from rehearsal.localturk.models import Assignment
from rehearsal.localturk.qualifications import LOCALE, PERCENT_APPROVED, worker_qualifications_set

from .conftest import EXTERNAL_QUESTION, HIT_TYPE, hit_create

pytestmark = pytest.mark.mturk

US_95 = [
    {"QualificationTypeId": LOCALE, "Comparator": "EqualTo", "LocaleValues": [{"Country": "US"}]},
    {"QualificationTypeId": PERCENT_APPROVED, "Comparator": "GreaterThanOrEqualTo", "IntegerValues": [95]},
]


def test_accept_gives_the_task_url_with_mturk_parameters(live_server, mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id)

    accepted = worker_factory("A1WORKER00001").accept(hit["HITId"]).json()

    url = urlsplit(accepted["url"])
    query = parse_qs(url.query)
    assert f"{url.scheme}://{url.netloc}{url.path}" == "https://tasks.example.org/hit/42"
    assert query == {
        "x": ["1"],
        "y": ["2"],
        "assignmentId": [accepted["assignmentId"]],
        "hitId": [hit["HITId"]],
        "workerId": ["A1WORKER00001"],
        "turkSubmitTo": [live_server.url + "/localturk"],
    }
    assert accepted["workerId"] == "A1WORKER00001"


def test_worker_list_and_preview_in_json(live_server, mturk, hit_type_id):
    hit = hit_create(mturk, hit_type_id)

    listed = requests.get(f"{live_server.url}/localturk/worker/?format=json&workerId=A1WORKER00001").json()
    preview = requests.get(listed["hits"][0]["previewUrl"] + "?format=json").json()

    assert listed["workerId"] == "A1WORKER00001"
    assert [(h["hitId"], h["reward"], h["available"]) for h in listed["hits"]] == [(hit["HITId"], "0.06", 3)]
    assert parse_qs(urlsplit(preview["url"]).query)["assignmentId"] == ["ASSIGNMENT_ID_NOT_AVAILABLE"]
    assert "workerId" not in parse_qs(urlsplit(preview["url"]).query)


def test_one_assignment_per_worker_per_hit(mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id)
    worker = worker_factory("A1WORKER00001")

    first = worker.accept(hit["HITId"]).json()["assignmentId"]
    again = worker.accept(hit["HITId"]).json()["assignmentId"]
    worker.submit(first, answer="1")
    after_submit = worker.accept(hit["HITId"])

    assert again == first
    assert after_submit.status_code == 409 and after_submit.json()["code"] == "already_worked"


def test_the_list_leaves_out_the_hits_the_worker_did_and_keeps_the_one_they_hold(
    live_server, mturk, hit_type_id, worker_factory
):
    done, held, untouched = (hit_create(mturk, hit_type_id)["HITId"] for _ in range(3))
    worker = worker_factory("A1WORKER00001")
    worker.complete(done)
    worker.accept(held)

    def listed(worker_id: str) -> list[str]:
        url = f"{live_server.url}/localturk/worker/?format=json&workerId={worker_id}"
        return [hit["hitId"] for hit in requests.get(url).json()["hits"]]

    page = requests.get(f"{live_server.url}/localturk/worker/?workerId=A1WORKER00001").text
    assert sorted(listed("A1WORKER00001")) == sorted([held, untouched])
    assert done not in page and untouched in page
    assert sorted(listed("A1WORKER00002")) == sorted([done, held, untouched])  # others still see it


def test_full_hit_cannot_be_accepted(mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id, MaxAssignments=1)
    worker_factory("A1WORKER00001").accept(hit["HITId"])

    refused = worker_factory("A1WORKER00002").accept(hit["HITId"])

    assert refused.status_code == 409 and refused.json()["code"] == "not_available"
    assert mturk.get_hit(HITId=hit["HITId"])["HIT"]["HITStatus"] == "Unassignable"


def test_returned_assignment_id_goes_to_the_next_worker(mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id, MaxAssignments=1)
    first, second = worker_factory("A1WORKER00001"), worker_factory("A1WORKER00002")
    assignment_id = first.accept(hit["HITId"]).json()["assignmentId"]

    returned = first.release(assignment_id)
    reused = second.accept(hit["HITId"]).json()
    second.submit(assignment_id, answer="5")
    late = first.submit(assignment_id, answer="1")

    assert returned.json()["status"] == "Returned"
    assert reused["assignmentId"] == assignment_id
    (listed,) = mturk.list_assignments_for_hit(HITId=hit["HITId"])["Assignments"]
    assert (listed["AssignmentId"], listed["WorkerId"]) == (assignment_id, "A1WORKER00002")
    assert late.json()["workerId"] == "A1WORKER00002"  # the same submission, not a second one
    assert Assignment.objects.filter(assignment_id=assignment_id).count() == 2


def test_abandoned_and_overdue_assignments_free_their_slot(mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id, MaxAssignments=2)
    first, second = worker_factory("A1WORKER00001"), worker_factory("A1WORKER00002")
    abandoned_id = first.accept(hit["HITId"]).json()["assignmentId"]
    overdue_id = second.accept(hit["HITId"]).json()["assignmentId"]

    first.release(abandoned_id, action="abandon")
    Assignment.objects.filter(assignment_id=overdue_id).update(deadline=datetime.now(UTC))
    state.next_tick_sweeps()  # as after a second: the sweep runs at most once a second
    late = second.submit(overdue_id, answer="1")

    assert late.status_code == 409
    counters = mturk.get_hit(HITId=hit["HITId"])["HIT"]
    assert (counters["NumberOfAssignmentsAvailable"], counters["NumberOfAssignmentsPending"]) == (2, 0)
    assert set(Assignment.objects.values_list("status", flat=True)) == {"Abandoned"}


def test_blocked_worker_cannot_accept(mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id)
    mturk.create_worker_block(WorkerId="A1WORKER00001", Reason="Spam")

    refused = worker_factory("A1WORKER00001").accept(hit["HITId"])
    mturk.delete_worker_block(WorkerId="A1WORKER00001")
    accepted = worker_factory("A1WORKER00001").accept(hit["HITId"])

    assert refused.status_code == 403 and refused.json()["code"] == "blocked"
    assert accepted.status_code == 200


def test_qualification_requirements_guard_accept(live_server, mturk, worker_factory):
    hit = mturk.create_hit(
        **HIT_TYPE, QualificationRequirements=US_95, LifetimeInSeconds=600, Question=EXTERNAL_QUESTION
    )["HIT"]
    worker_qualifications_set(worker_id="A1LOWRATE0001", qualifications={PERCENT_APPROVED: 80})
    worker_qualifications_set(worker_id="A1ABROAD00001", qualifications={LOCALE: {"Country": "IN"}})

    default = worker_factory("A1WORKER00001").accept(hit["HITId"])
    low = worker_factory("A1LOWRATE0001").accept(hit["HITId"])
    abroad = worker_factory("A1ABROAD00001").accept(hit["HITId"])

    assert default.status_code == 200
    assert low.status_code == abroad.status_code == 403
    assert low.json()["code"] == "not_qualified"


def test_workers_are_configured_over_http(live_server, mturk):
    hit = mturk.create_hit(
        **HIT_TYPE, QualificationRequirements=US_95, LifetimeInSeconds=600, Question=EXTERNAL_QUESTION
    )["HIT"]
    url = f"{live_server.url}/localturk/_control/workers/A1LOWRATE0001"

    configured = requests.put(url, json={"qualifications": {PERCENT_APPROVED: 90}})
    refused = requests.put(url, json={"qualifications": {PERCENT_APPROVED: "high"}})
    accept = requests.post(
        f"{live_server.url}/localturk/worker/accept/{hit['HITId']}/?format=json", data={"workerId": "A1LOWRATE0001"}
    )

    assert configured.json()["qualifications"][PERCENT_APPROVED] == 90
    assert configured.json()["qualifications"][LOCALE] == {"Country": "US"}
    assert refused.status_code == 400
    assert accept.status_code == 403


def test_hidden_hits_are_not_listed_to_unqualified_workers(live_server, mturk):
    hidden = [{**US_95[0], "ActionsGuarded": "DiscoverPreviewAndAccept"}]
    mturk.create_hit(**HIT_TYPE, QualificationRequirements=hidden, LifetimeInSeconds=600, Question=EXTERNAL_QUESTION)
    worker_qualifications_set(worker_id="A1ABROAD00001", qualifications={LOCALE: {"Country": "IN"}})

    abroad = requests.get(f"{live_server.url}/localturk/worker/?format=json&workerId=A1ABROAD00001").json()
    home = requests.get(f"{live_server.url}/localturk/worker/?format=json&workerId=A1WORKER00001").json()

    assert abroad["hits"] == [] and len(home["hits"]) == 1


def test_external_submit_needs_an_answer_field_and_a_real_assignment(mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id)
    worker = worker_factory("A1WORKER00001")
    assignment_id = worker.accept(hit["HITId"]).json()["assignmentId"]

    bare = worker.submit(assignment_id)
    reserved_only = worker.submit(assignment_id, workerId="A1WORKER00001", hitId=hit["HITId"])
    preview = worker.submit("ASSIGNMENT_ID_NOT_AVAILABLE", answer="1")
    unknown = worker.submit("3" * 30, answer="1")

    assert bare.status_code == reserved_only.status_code == preview.status_code == 400
    assert unknown.status_code == 404
    assert Assignment.objects.get().status == "Accepted"


def test_html_flow_of_a_person(live_server, mturk, hit_type_id):
    hit = hit_create(mturk, hit_type_id)
    base = live_server.url + "/localturk"

    with requests.Session() as browser:
        home = browser.get(f"{base}/worker/")
        worker_id = browser.cookies["localturk_worker"]
        preview = browser.get(f"{base}/worker/preview/{hit['HITId']}/")
        work = browser.post(f"{base}/worker/accept/{hit['HITId']}/")
        assignment_id = Assignment.objects.get().assignment_id
        submitted = browser.post(f"{base}/mturk/externalSubmit", data={"assignmentId": assignment_id, "rating": "2"})
        back = browser.get(f"{base}/worker/?submitted={assignment_id}")

    assert marketplace.WORKER_ID.match(worker_id)
    assert HIT_TYPE["Title"] in home.text
    assert "assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE" in preview.text
    assert work.url.startswith(f"{base}/worker/work/{assignment_id}/")
    assert f"assignmentId={assignment_id}" in work.text and "turkSubmitTo=" in work.text
    assert submitted.url.startswith(f"{base}/worker/submitted/{assignment_id}/")
    assert submitted.headers["X-Frame-Options"] == "SAMEORIGIN"
    assert f"Assignment {assignment_id} submitted" in back.text
    assert Assignment.objects.get().worker_id == worker_id


def test_messages_reach_workers_with_reviewed_work(live_server, mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id)
    assignment_id = worker_factory("A1WORKER00001").complete(hit["HITId"])
    mturk.approve_assignment(AssignmentId=assignment_id)

    result = mturk.notify_workers(
        Subject="New HITs", MessageText="More work tomorrow.", WorkerIds=["A1WORKER00001", "A1STRANGER001"]
    )

    assert [f["WorkerId"] for f in result["NotifyWorkersFailureStatuses"]] == ["A1STRANGER001"]
    page = requests.get(f"{live_server.url}/localturk/worker/?workerId=A1WORKER00001")
    assert "More work tomorrow." in page.text


def test_worker_blocks_are_listed_in_pages(mturk):
    for n in range(12):
        mturk.create_worker_block(WorkerId=f"A{n:013d}", Reason=f"reason {n}")
    mturk.create_worker_block(WorkerId="A0000000000000", Reason="updated")

    pages = list(mturk.get_paginator("list_worker_blocks").paginate(PaginationConfig={"PageSize": 5}))

    blocks = {b["WorkerId"]: b["Reason"] for page in pages for b in page["WorkerBlocks"]}
    assert len(pages) == 3 and len(blocks) == 12
    assert blocks["A0000000000000"] == "updated"


@pytest.mark.parametrize("worker_id", ["lowercase", "B1WORKER00001", "A", "A" + "1" * 64])
def test_invalid_worker_id_is_refused(worker_id):
    with pytest.raises(WorkerActionError):
        marketplace.worker_id_check(worker_id)
