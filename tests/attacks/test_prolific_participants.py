"""F2: invented Prolific participants take no place. `/s/prolific/?PROLIFIC_PID=...` opens a
session only once Prolific (the local endpoint, reached over HTTP through the real client)
lists that submission, in progress, of that participant in that study; when Prolific cannot
be asked the participant is told to retry and nothing is written; the completion code is
shown only to a confirmed participant whose tasks are done; answers of a session Prolific
does not list (opened before arrivals were checked) never become verified."""

import random
import uuid
from urllib.parse import urljoin

import pytest
import requests
from django.core.cache import cache, caches
from django.test import Client
from django.urls import reverse

from annotation.models import Campaign
from crowd.hit_page.params import HitParams
from crowd.models import Assignment, Study, TaskHold, Worker, WorkSession
from crowd.sessions import holds
from crowd.simulation.hits import (
    DILIGENT,
    EXTERNAL_SUBMIT_FORM_ID,
    HIT_FORM_ID,
    Judge,
    SimulatedWorker,
    forms_parse,
    hit_form_fill,
)
from crowd.simulation.sessions import Participant
from crowd.work.publishing import batch_publish
from ranking.channel_demo import local_prolific_starter
from ranking.workflow import loop_run
from rehearsal.localprolific import faults
from tests.crowd.channels.prolific.conftest import _own_server_threads_joined, local_prolific, waits  # noqa: F401
from tests.crowd.factories import prolific_batch

pytestmark = [pytest.mark.attacks, pytest.mark.prolific, pytest.mark.django_db(transaction=True)]

INVENTED = [f"5f0000000000000000fake{number:02d}" for number in range(10)]
NOT_LISTED = "Prolific does not list you in this study"


@pytest.fixture(autouse=True)
def _site(local_prolific, settings, waits):  # noqa: F811
    cache.clear()
    caches["ratelimit"].clear()  # the arrivals' counts (issue 24, N4)
    settings.SITE_URL = local_prolific  # the study URL must reach the live server


@pytest.fixture
def study(local_prolific):  # noqa: F811
    """A published study: 3 tasks × 2 answers, 2 tasks a session, so 3 places."""
    batch = prolific_batch()
    batch_publish(batch_id=batch.pk)
    return Study.objects.of_batch(batch).get()


def _arrive(pid: str, study_id: str, session_id: str):
    return Client().get("/s/prolific/", {"PROLIFIC_PID": pid, "STUDY_ID": study_id, "SESSION_ID": session_id})


def _start(base_url: str, study_id: str, participant_id: str) -> dict:
    response = requests.post(
        f"{base_url}/localprolific/_control/studies/{study_id}/participants",
        json={"participant_id": participant_id},
        timeout=30,
    )
    assert response.status_code in (200, 201), response.text
    return response.json()


def _nothing_taken() -> None:
    assert not WorkSession.objects.exists()
    assert not TaskHold.objects.exists()
    assert not Worker.objects.filter(channel=Campaign.Channel.PROLIFIC).exists()


def _participant(name: str) -> Participant:
    return Participant(
        SimulatedWorker(worker_id=name, behaviour=DILIGENT, noise=0.5), Judge(seed=1), random.Random(name)
    )


def test_ten_invented_participants_take_no_place_and_a_real_one_finishes(local_prolific, study):  # noqa: F811
    pages = []
    for pid in INVENTED:
        for session_id in ("x", uuid.uuid4().hex[:24]):
            response = _arrive(pid, study.study_id, session_id)
            pages.append(response)
            assert response.status_code == 403
            assert NOT_LISTED in response.content.decode()
    _nothing_taken()
    assert all(study.completion_code not in page.content.decode() for page in pages)
    assert all(not page.has_header("Location") for page in pages)

    ann = _participant("5f00000000000000000000a1")
    url = local_prolific_starter(local_prolific)(ann.http, study.study_id, ann.worker.worker_id)
    assert url is not None
    done, last = ann.session_work(ann.http.get(url, timeout=30))

    assert done == 2
    assert last.url.startswith(f"{local_prolific}/localprolific/submissions/complete?cc={study.completion_code}")
    session = WorkSession.objects.get()
    assert session.worker.external_id == ann.worker.worker_id and session.submission_id
    assert set(Assignment.objects.values_list("verification", flat=True)) == {"verified"}


def test_a_real_participant_with_another_session_id_is_refused(local_prolific, study):  # noqa: F811
    ann = _start(local_prolific, study.study_id, "5f00000000000000000000a1")
    bob = _start(local_prolific, study.study_id, "5f00000000000000000000b2")

    wrong_session = _arrive(ann["participant_id"], study.study_id, "5f00000000000000000000ff")
    someone_elses = _arrive(ann["participant_id"], study.study_id, bob["submission_id"])

    assert wrong_session.status_code == someone_elses.status_code == 403
    assert NOT_LISTED in someone_elses.content.decode()
    _nothing_taken()
    own = _arrive(ann["participant_id"], study.study_id, ann["submission_id"])
    assert own.status_code == 302
    assert WorkSession.objects.get().submission_id == ann["submission_id"]


def test_when_prolific_cannot_be_asked_the_participant_retries_and_nothing_is_taken(local_prolific, study):  # noqa: F811
    ann = _start(local_prolific, study.study_id, "5f00000000000000000000a1")
    faults.inject(service_fault=10, operations=["submissions.get"])

    refused = _arrive(ann["participant_id"], study.study_id, ann["submission_id"])

    assert refused.status_code == 503 and refused["Retry-After"] == "60"
    assert "Prolific cannot be reached right now: please try again in a minute" in refused.content.decode()
    _nothing_taken()
    faults.clear()
    again = _arrive(ann["participant_id"], study.study_id, ann["submission_id"])
    assert again.status_code == 302
    assert WorkSession.objects.get().submission_id == ann["submission_id"]


def test_a_returning_participant_continues_and_task_pages_do_not_ask_prolific(local_prolific, study):  # noqa: F811
    ann = _start(local_prolific, study.study_id, "5f00000000000000000000a1")
    first = _arrive(ann["participant_id"], study.study_id, ann["submission_id"])
    faults.inject(service_fault=10, operations=["submissions.get"])

    page = Client().get(first["Location"])  # the task page: no call to Prolific

    assert page.status_code == 200 and "Task 1 of 2" in page.content.decode()
    faults.clear()
    again = _arrive(ann["participant_id"], study.study_id, ann["submission_id"])
    assert again["Location"] == first["Location"]
    assert WorkSession.objects.count() == 1 and TaskHold.objects.count() == 1


def _unchecked_session(study: Study, pid: str) -> WorkSession:
    """A session as an invented PID opened it before arrivals were checked with Prolific."""
    campaign = study.topic.campaign
    worker = holds.session_worker(channel=Campaign.Channel.PROLIFIC, external_id=pid)
    return WorkSession.objects.create(
        campaign=campaign, worker=worker, study=study, key=uuid.uuid4(), external_session_id="x", tasks_target=2
    )


def _answer_through_the_hit_page(base_url: str, session: WorkSession) -> requests.Response:
    """The forger answers the task its session holds on the HIT page and posts the copy back."""
    hold = holds.hold_next(session)
    assert hold is not None
    query = HitParams(
        assignment_id=hold.assignment_id,
        hit_id=hold.task.hit.hit_id,
        worker_id=session.worker.external_id,
        turk_submit_to=f"{base_url}/s/{session.key}",
    ).query_string()
    forger = _participant(session.worker.external_id)
    page = forger.http.get(f"{base_url}{reverse('hit:page', args=[hold.task.uuid])}?{query}", timeout=30)
    form = forms_parse(page.text)[HIT_FORM_ID]
    stored = forger.http.post(
        urljoin(page.url, form.action), data=hit_form_fill(forger.judge, forger.worker, form, forger.rng), timeout=30
    )
    assert stored.status_code == 200, stored.text[:300]
    external = forms_parse(stored.text)[EXTERNAL_SUBMIT_FORM_ID]
    return forger.http.post(urljoin(stored.url, external.action), data=external.hidden, timeout=30)


def test_answers_of_sessions_prolific_does_not_list_are_never_verified(local_prolific, study):  # noqa: F811
    pending = _unchecked_session(study, INVENTED[0])
    copy = _answer_through_the_hit_page(local_prolific, pending)
    assert copy.status_code == 409  # the session was never confirmed: the copy does not count it
    # One that got through before the fix: counted, finished, its answer verified.
    earlier = _unchecked_session(study, INVENTED[1])
    _answer_through_the_hit_page(local_prolific, earlier)
    TaskHold.objects.filter(session=earlier).update(submitted_at=TaskHold.objects.get(session=earlier).held_at)
    Assignment.objects.filter(worker=earlier.worker).update(verification=Assignment.Verification.VERIFIED)
    WorkSession.objects.filter(pk=earlier.pk).update(status=WorkSession.Status.FINISHED)
    assert Assignment.objects.filter(worker__external_id__in=INVENTED[:2]).count() == 2

    report = loop_run()

    forged = Assignment.objects.filter(worker__external_id__in=INVENTED[:2])
    assert set(forged.values_list("verification", flat=True)) == {"unverified"}
    assert not Assignment.objects.counted().exists()
    assert set(WorkSession.objects.values_list("status", flat=True)) == {WorkSession.Status.ABANDONED}
    assert not TaskHold.objects.filter(released_at__isnull=True).exists()  # every place free again
    assert report.sync["prolific"]["withdrawn"] == 2
    for session in (pending, earlier):
        page = Client().get(reverse("sessions:session", args=[session.key]))
        assert page.status_code == 403 and study.completion_code not in page.content.decode()
    loop_run()
    assert set(forged.values_list("verification", flat=True)) == {"unverified"}
    # The places are there for a real participant.
    ann = _participant("5f00000000000000000000a1")
    url = local_prolific_starter(local_prolific)(ann.http, study.study_id, ann.worker.worker_id)
    assert url is not None
    done, _ = ann.session_work(ann.http.get(url, timeout=30))
    assert done == 2


# ---- N4 (issue 24): a flood of arrivals is bounded ------------------------------------------


@pytest.fixture
def calls(monkeypatch):
    """The calls arrivals make to Prolific (the local endpoint, over HTTP), counted; and the
    arrival counters' minute held for the test, so a flood slower than a minute on a loaded
    machine still meets one window (the budgets are per minute)."""
    from crowd.marketplaces.prolific import client as prolific
    from crowd.marketplaces.prolific import participants

    minute = participants._minute()
    monkeypatch.setattr(participants, "_minute", lambda: minute)
    made: list[str] = []
    original = prolific.ProlificClient.submission_get

    def counted(self, submission_id):
        made.append(submission_id)
        return original(self, submission_id)

    monkeypatch.setattr(prolific.ProlificClient, "submission_get", counted)
    return made


def test_600_invented_arrivals_make_a_bounded_number_of_calls_and_a_real_participant_gets_in(
    local_prolific,  # noqa: F811
    study,
    calls,
    settings,
):
    settings.PROLIFIC_ARRIVALS_PER_ADDRESS = 20
    settings.PROLIFIC_ARRIVAL_CALLS_PER_MINUTE = 60
    flood = Client(REMOTE_ADDR="198.51.100.7")
    answers = [
        flood.get(
            "/s/prolific/",
            {"PROLIFIC_PID": f"5f00000000000000fake{n:04d}", "STUDY_ID": study.study_id, "SESSION_ID": f"S{n:023d}"},
        )
        for n in range(600)
    ]

    codes = [answer.status_code for answer in answers]
    assert codes == [403] * 20 + [429] * 580
    assert all(answer["Retry-After"] == "60" for answer in answers[20:])
    assert "please try again in a minute" in answers[-1].content.decode()
    assert len(calls) == 20  # not 600
    _nothing_taken()

    # A real participant, from their own address, still gets in.
    ann = _start(local_prolific, study.study_id, "5f00000000000000000000a1")
    real = Client(REMOTE_ADDR="203.0.113.9").get(
        "/s/prolific/",
        {"PROLIFIC_PID": ann["participant_id"], "STUDY_ID": study.study_id, "SESSION_ID": ann["submission_id"]},
    )
    assert real.status_code == 302


def test_a_distributed_flood_gets_a_polite_503_once_the_arrivals_budget_is_spent(
    local_prolific,  # noqa: F811
    study,
    calls,
    settings,
):
    settings.PROLIFIC_ARRIVAL_CALLS_PER_MINUTE = 30
    answers = [
        Client(REMOTE_ADDR=f"10.0.{n // 250}.{n % 250}").get(
            "/s/prolific/",
            {"PROLIFIC_PID": f"5f00000000000000fake{n:04d}", "STUDY_ID": study.study_id, "SESSION_ID": f"S{n:023d}"},
        )
        for n in range(60)
    ]

    assert [answer.status_code for answer in answers] == [403] * 30 + [503] * 30
    assert answers[-1]["Retry-After"] == "60" and "try again in a minute" in answers[-1].content.decode()
    assert len(calls) == 30
    _nothing_taken()


def test_the_same_arrival_repeated_asks_prolific_once(local_prolific, study, calls):  # noqa: F811
    ann = _start(local_prolific, study.study_id, "5f00000000000000000000a1")
    for _ in range(5):
        _arrive("5f0000000000000000fake01", study.study_id, ann["submission_id"])  # someone else's session id
    answers = [_arrive(ann["participant_id"], study.study_id, ann["submission_id"]) for _ in range(5)]

    assert len(calls) == 2  # one verdict each, kept PROLIFIC_VERDICT_SECONDS
    assert {answer["Location"] for answer in answers} == {answers[0]["Location"]}
    assert WorkSession.objects.count() == 1
