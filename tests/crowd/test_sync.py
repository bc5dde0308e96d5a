"""Assignment sync against the local endpoint: what MTurk holds decides what counts."""

from datetime import timedelta
from decimal import Decimal as D
from io import StringIO

import pytest
import requests
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.models import Batch
from crowd.channels.links import links
from crowd.marketplaces.mturk.answers import InvalidAnswerXML, answer_fields
from crowd.models import HIT, Assignment, LikertLabel, Worker, WorkerQuality
from crowd.sessions import holds
from crowd.tasks import sync_open_hits
from crowd.work import ledger
from crowd.work.expiry import batch_expire
from crowd.work.publishing import batch_publish
from crowd.work.sync import assignments_sync
from rehearsal.localturk import faults
from tests.factories import AssignmentFactory

from .factories import likert_batch
from .sessions.conftest import links_batch

Verification = Assignment.Verification
ANSWERS_NS = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/QuestionFormAnswers.xsd"


def _published(*, slots: int = 2, propositions: int = 5, **campaign_fields) -> HIT:
    """A one-task Likert batch published with `slots` assignments; its HIT."""
    batch = likert_batch(propositions=propositions, assignments_per_hit=slots, **campaign_fields)
    batch_publish(batch_id=batch.pk)
    return HIT.objects.select_related("task__batch__topic__campaign").get(task__batch=batch)


def _qc_ran(hit: HIT, worker_id: str) -> None:
    WorkerQuality.objects.update_or_create(
        campaign=hit.task.batch.topic.campaign,
        worker=Worker.objects.get(external_id=worker_id),
        defaults={"computed_at": timezone.now()},
    )


# ---- Answer XML --------------------------------------------------------------------------


def test_answer_xml_becomes_form_fields_without_reserved_names():
    xml = (
        f'<?xml version="1.0" encoding="ASCII"?><QuestionFormAnswers xmlns="{ANSWERS_NS}">'
        "<Answer><QuestionIdentifier>rating-7</QuestionIdentifier><FreeText>4</FreeText></Answer>"
        "<Answer><QuestionIdentifier>assignmentId</QuestionIdentifier><FreeText>X</FreeText></Answer>"
        "<Answer><QuestionIdentifier>order</QuestionIdentifier><FreeText>3,1,2</FreeText></Answer>"
        "<Answer><QuestionIdentifier>note</QuestionIdentifier><FreeText>caf&#233; &lt;ok&gt;</FreeText></Answer>"
        "</QuestionFormAnswers>"
    )
    assert answer_fields(xml) == {"rating-7": ["4"], "order": ["3,1,2"], "note": ["café <ok>"]}
    assert answer_fields("") == {}


@pytest.mark.parametrize("xml", ["<QuestionFormAnswers>", '<!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>'])
def test_answer_xml_that_mturk_never_sends_is_refused(xml):
    with pytest.raises(InvalidAnswerXML):
        answer_fields(xml)


# ---- Matching ----------------------------------------------------------------------------


@pytest.mark.mturk
def test_an_answer_both_we_and_mturk_hold_is_verified(local_turk):
    hit = _published()
    assignment_id = local_turk.worker("AWORKERONE0001").complete(hit.hit_id, score=4)
    assert Assignment.objects.get().verification == Verification.PENDING

    report = assignments_sync()

    stored = Assignment.objects.get()
    assert (stored.assignment_id, stored.verification, stored.status) == (
        assignment_id,
        Verification.VERIFIED,
        "Submitted",
    )
    assert Assignment.objects.counted().filter(pk=stored.pk).exists()
    assert (report.hits, report.verified, report.recovered, report.unverified) == (1, 1, 0, 0)
    assert report.approved == 0  # no quality control yet, auto-approval is days away


@pytest.mark.mturk
def test_a_forged_submission_is_never_counted(local_turk):
    hit = _published(slots=2)
    local_turk.worker("AFORGER0000001").forge(
        task_uuid=hit.task.uuid, hit_id=hit.hit_id, assignment_id="3FORGEDASSIGNMENT0000000000000", score=5
    )
    forged = Assignment.objects.get()
    assert forged.verification == Verification.PENDING  # our page stored it, as it stores everything

    assignments_sync()
    forged.refresh_from_db()
    assert forged.verification == Verification.PENDING  # MTurk may still list it: its deadline is ahead

    for worker_id in ("AWORKERONE0001", "AWORKERTWO0002"):
        local_turk.worker(worker_id).complete(hit.hit_id)
    report = assignments_sync()

    forged.refresh_from_db()
    assert forged.verification == Verification.UNVERIFIED
    assert not Assignment.objects.counted().filter(pk=forged.pk).exists()
    assert report.unverified == 1 and report.verified == 2
    counted = list(Assignment.objects.counted().values_list("worker__external_id", flat=True))
    assert sorted(counted) == ["AWORKERONE0001", "AWORKERTWO0002"]


@pytest.mark.mturk
def test_a_stored_answer_unknown_to_mturk_after_its_deadline_is_unverified(local_turk):
    hit = _published(slots=3)
    local_turk.worker("AFORGER0000001").forge(
        task_uuid=hit.task.uuid, hit_id=hit.hit_id, assignment_id="3FORGEDASSIGNMENT0000000000000"
    )

    report = assignments_sync(now=timezone.now() + timedelta(hours=1))  # the 30-minute duration is over

    assert Assignment.objects.get().verification == Verification.UNVERIFIED
    assert report.unverified == 1


@pytest.mark.mturk
def test_a_submission_only_mturk_received_is_recovered_from_its_answer_xml(local_turk):
    hit = _published(propositions=5)
    items = list(hit.task.items.order_by("position").values_list("proposition_id", flat=True))
    scores = dict(zip(items, [5, 4, 3, 2, 1], strict=True))
    fields = {"task": str(hit.task.uuid), **{f"rating-{pid}": str(score) for pid, score in scores.items()}}
    assignment_id = local_turk.worker("ALOSTPOST00001").submit_to_mturk_only(hit.hit_id, fields)
    assert not Assignment.objects.exists()
    assert assignments_sync().hits == 0  # no news of ours: MTurk says when the HIT's work is all in
    local_turk.worker("AWORKERTWO0002").complete(hit.hit_id)  # the last slot: ListReviewableHITs lists it

    report = assignments_sync()

    recovered = Assignment.objects.get(worker__external_id="ALOSTPOST00001")
    assert (recovered.assignment_id, recovered.worker.external_id) == (assignment_id, "ALOSTPOST00001")
    assert recovered.verification == Verification.RECOVERED
    assert Assignment.objects.counted().filter(pk=recovered.pk).exists()
    assert recovered.hit == hit
    remote = local_turk.client.get_assignment(AssignmentId=assignment_id)["Assignment"]
    assert recovered.submitted_at == remote["SubmitTime"]
    assert dict(LikertLabel.objects.filter(assignment=recovered).values_list("proposition_id", "score")) == scores
    assert (report.hits, report.recovered, report.verified) == (1, 1, 1)


@pytest.mark.mturk
def test_a_copy_that_is_no_answer_to_the_task_is_reported_not_stored(local_turk):
    hit = _published(slots=1)  # its one slot taken: MTurk lists the HIT as reviewable
    local_turk.worker("ASPAMMER000001").submit_to_mturk_only(hit.hit_id, {"comment": "hello"})

    report = assignments_sync()

    assert report.invalid == 1
    assert not Assignment.objects.exists()


@pytest.mark.mturk
def test_a_hit_the_marketplace_no_longer_knows_is_reported_and_no_longer_synced(local_turk):
    hit = _published()
    local_turk.worker("AWORKERONE0001").forge(  # news: an answer waits for MTurk's word
        task_uuid=hit.task.uuid, hit_id=hit.hit_id, assignment_id="3FORGEDASSIGNMENT0000000000000"
    )
    HIT.objects.filter(pk=hit.pk).update(hit_id="3UNKNOWNHIT0000000000000000000")

    report = assignments_sync()

    assert report.hits == 0 and report.errors[0].startswith("3UNKNOWNHIT0000000000000000000: ")
    assert HIT.objects.get().deleted
    assert assignments_sync().errors == []


# ---- Approval ----------------------------------------------------------------------------


@pytest.mark.mturk
def test_work_is_approved_once_quality_control_has_run_for_it(local_turk):
    hit = _published()
    assignment_id = local_turk.worker("AWORKERONE0001").complete(hit.hit_id)
    assignments_sync()
    _qc_ran(hit, "AWORKERONE0001")

    report = assignments_sync()

    assert report.approved == 1
    assert Assignment.objects.get().status == Assignment.Status.APPROVED
    remote = local_turk.client.get_assignment(AssignmentId=assignment_id)["Assignment"]
    assert remote["AssignmentStatus"] == "Approved"
    money = ledger.campaign_money(campaign=hit.task.batch.topic.campaign)
    assert money.spent == D("0.07")


@pytest.mark.mturk
def test_work_is_approved_before_mturk_would_approve_it_automatically(local_turk):
    hit = _published()
    local_turk.worker("AWORKERONE0001").complete(hit.hit_id)
    campaign = hit.task.batch.topic.campaign

    assert assignments_sync().approved == 0
    near = timezone.now() + timedelta(seconds=campaign.auto_approval_delay_seconds) - timedelta(hours=1)
    assert assignments_sync(now=near).approved == 1
    assert Assignment.objects.get().status == Assignment.Status.APPROVED


@pytest.mark.mturk
def test_a_collected_and_reviewed_hit_is_complete_and_deleted(local_turk):
    hit = _published(slots=2)
    for worker_id in ("AWORKERONE0001", "AWORKERTWO0002"):
        local_turk.worker(worker_id).complete(hit.hit_id)
    assert assignments_sync().completed == 0  # collected, not yet reviewed
    for worker_id in ("AWORKERONE0001", "AWORKERTWO0002"):
        _qc_ran(hit, worker_id)

    report = assignments_sync()

    hit.refresh_from_db()
    assert report.approved == 2 and report.completed == 1
    assert hit.complete and hit.deleted and hit.status == HIT.Status.DISPOSED
    assert local_turk.hits() == []
    money = ledger.campaign_money(campaign=hit.task.batch.topic.campaign)
    assert (money.committed, money.spent, money.committed - money.spent) == (D("0.14"), D("0.14"), D("0.00"))
    assert assignments_sync().hits == 0  # complete HITs are not synced again


def _operations(local_turk) -> dict[str, int]:
    """Calls per operation since the last reset, from the local endpoint's meter over HTTP."""
    response = requests.get(f"{local_turk.base_url}/localturk/_control/calls", timeout=10)
    assert response.status_code == 200, response.text
    return {name: figures["calls"] for name, figures in response.json()["operations"].items()}


def _operations_reset(local_turk) -> None:
    assert requests.delete(f"{local_turk.base_url}/localturk/_control/calls", timeout=10).status_code == 204


def _settled(local_turk, *, slots: int, answered: int) -> tuple[HIT, list[str]]:
    """A HIT with `answered` of its `slots` answered and verified, quality control run for
    each worker: due for approval. Its assignment ids."""
    hit = _published(slots=slots)
    workers = [f"AWORKER{number:07d}" for number in range(answered)]
    assignment_ids = [local_turk.worker(worker_id).complete(hit.hit_id) for worker_id in workers]
    assignments_sync()  # verified: one listing
    for worker_id in workers:
        _qc_ran(hit, worker_id)
    _operations_reset(local_turk)
    return hit, assignment_ids


@pytest.mark.mturk
def test_a_hit_whose_every_slot_is_confirmed_is_approved_and_deleted_without_a_second_listing(local_turk):
    hit, _ = _settled(local_turk, slots=2, answered=2)

    report = assignments_sync()

    calls = _operations(local_turk)
    assert "ListAssignmentsForHIT" not in calls
    assert (calls["ApproveAssignment"], calls["DeleteHIT"]) == (2, 1)
    assert (report.approved, report.completed) == (2, 1)
    hit.refresh_from_db()
    assert hit.complete and hit.deleted
    assert set(Assignment.objects.values_list("status", flat=True)) == {Assignment.Status.APPROVED}
    money = ledger.campaign_money(campaign=hit.task.batch.topic.campaign)
    assert money.committed == money.spent == D("0.14")


@pytest.mark.mturk
def test_a_decision_taken_at_mturk_since_the_last_listing_is_read_back_not_overwritten(local_turk):
    hit, assignment_ids = _settled(local_turk, slots=2, answered=2)
    rejected = assignment_ids[0]
    local_turk.client.reject_assignment(AssignmentId=rejected, RequesterFeedback="on the requester website")

    report = assignments_sync()

    calls = _operations(local_turk)
    assert "ListAssignmentsForHIT" not in calls
    assert (calls["ApproveAssignment"], calls["GetAssignment"]) == (2, 1)  # refused once, read back
    assert report.approved == 1
    statuses = dict(Assignment.objects.values_list("assignment_id", "status"))
    assert statuses == {rejected: Assignment.Status.REJECTED, assignment_ids[1]: Assignment.Status.APPROVED}
    money = ledger.campaign_money(campaign=hit.task.batch.topic.campaign)
    assert money.spent == D("0.07")  # the rejected assignment is not paid


@pytest.mark.mturk
def test_a_hit_with_a_slot_not_confirmed_is_listed_and_an_answer_only_mturk_got_recovered(local_turk):
    hit, _ = _settled(local_turk, slots=3, answered=2)
    items = hit.task.items.order_by("position").values_list("proposition_id", flat=True)
    fields = {"task": str(hit.task.uuid), **{f"rating-{pid}": "4" for pid in items}}
    lost = local_turk.worker("ALOSTPOST00001").submit_to_mturk_only(hit.hit_id, fields)  # the third slot

    report = assignments_sync()

    assert _operations(local_turk)["ListAssignmentsForHIT"] == 1
    recovered = Assignment.objects.get(assignment_id=lost)
    assert recovered.verification == Verification.RECOVERED and report.recovered == 1
    assert Assignment.objects.counted().filter(task=hit.task).count() == 3


@pytest.mark.mturk
def test_expired_hits_release_the_budget_of_slots_nobody_took(local_turk):
    hit = _published(slots=3)
    local_turk.worker("AWORKERONE0001").complete(hit.hit_id)
    out = StringIO()

    call_command("expire_hits", campaign=hit.task.batch.topic.campaign.slug, stdout=out)

    assert "expired 1 HITs" in out.getvalue()
    remote = local_turk.client.get_hit(HITId=hit.hit_id)["HIT"]
    assert remote["Expiration"] <= timezone.now() and remote["NumberOfAssignmentsAvailable"] == 0
    assert Batch.objects.get().status == Batch.Status.EXPIRED
    _qc_ran(hit, "AWORKERONE0001")
    report = assignments_sync(now=timezone.now() + timedelta(hours=1))  # past the last possible deadline

    assert report.completed == 1
    released = ledger.LedgerEntry.objects.get(kind=ledger.Kind.RELEASED)
    assert released.amount == D("0.14")  # two slots at $0.07
    money = ledger.campaign_money(campaign=hit.task.batch.topic.campaign)
    assert money.committed == money.spent == D("0.07")


@pytest.mark.mturk
def test_expiring_a_batch_leaves_a_hit_whose_every_slot_holds_a_confirmed_answer(local_turk):
    """A topic that finishes before the pass approved its last batch expires that batch: a HIT
    with every answer in offers nothing, so it costs no UpdateExpirationForHIT."""
    full, open_hit = _published(slots=1), _published(slots=2)
    local_turk.worker("AWORKERFULL001").complete(full.hit_id)
    local_turk.worker("AWORKERHALF001").complete(open_hit.hit_id)
    assignments_sync()
    assert Assignment.objects.filter(verification=Verification.VERIFIED).count() == 2
    offered_until = HIT.objects.get(pk=full.pk).expires_at

    results = [batch_expire(batch_id=hit.task.batch_id) for hit in (full, open_hit)]

    assert [result.expired for result in results] == [0, 1]
    assert HIT.objects.get(pk=full.pk).expires_at == offered_until
    assert HIT.objects.get(pk=open_hit.pk).expires_at <= timezone.now()


@pytest.mark.django_db
def test_expiring_a_batch_releases_what_was_committed_for_unpublished_tasks():
    batch = likert_batch(propositions=10)
    campaign = batch.topic.campaign
    for task in batch.tasks.all():
        ledger.entry_record(
            campaign_id=campaign.pk,
            kind=ledger.Kind.COMMITTED,
            reference=ledger.task_reference(task.uuid),
            amount=D("0.35"),
        )

    result = batch_expire(batch_id=batch.pk)

    assert (result.expired, result.unpublished) == (0, 2)
    assert ledger.campaign_money(campaign=campaign).committed == D("0.00")


# ---- The pipeline hook and retries -------------------------------------------------------


@pytest.mark.mturk
def test_sync_reports_the_synced_topics_and_campaigns_and_enqueues_nothing(
    local_turk, django_capture_on_commit_callbacks
):
    hit = _published()
    local_turk.worker("AWORKERONE0001").complete(hit.hit_id)

    with django_capture_on_commit_callbacks() as callbacks:
        report = assignments_sync()

    assert callbacks == []  # what happens next is ranking.workflow's
    assert report.topic_ids == {hit.task.batch.topic_id}
    assert report.campaign_ids == {hit.task.batch.topic.campaign_id}


@pytest.mark.mturk
def test_the_sync_task_outlasts_throttling(local_turk, monkeypatch):
    hit = _published()
    local_turk.worker("AWORKERONE0001").complete(hit.hit_id)
    monkeypatch.setattr("crowd.marketplaces.mturk.client.MAX_ATTEMPTS", 0)
    monkeypatch.setitem(sync_open_hits.app.conf, "task_eager_propagates", False)
    faults.inject(throttle=2, operations=["ListAssignmentsForHIT"])

    result = sync_open_hits.delay().get()

    assert result["verified"] == 1
    assert faults.active() == []
    assert Assignment.objects.get().verification == Verification.VERIFIED


# ---- Cost per HIT: queries, never times ----------------------------------------------------


def _answered_hits(local_turk, *, hits: int, slots: int = 2) -> list[HIT]:
    """A Likert batch of `hits` HITs, every slot answered through the worker's whole path."""
    batch = likert_batch(propositions=5 * hits, assignments_per_hit=slots)
    batch_publish(batch_id=batch.pk)
    published = list(HIT.objects.filter(task__batch=batch).order_by("pk"))
    for hit in published:
        for number in range(slots):
            local_turk.worker(f"AWORKER{number:07d}").complete(hit.hit_id)
    return published


def _queries(function) -> int:
    with CaptureQueriesContext(connection) as captured:
        function()
    return len(captured.captured_queries)


def _per_hit(counts: list[int]) -> float:
    """Queries per HIT beyond a pass's fixed cost: a pass over 8 HITs against one over 2."""
    return (counts[1] - counts[0]) / 6


@pytest.mark.mturk
def test_the_verify_pass_costs_at_most_five_queries_per_hit(local_turk):
    counts = []
    for hits in (2, 8):
        HIT.objects.update(complete=True)  # the other round's HITs are not visited again
        published = _answered_hits(local_turk, hits=hits)
        counts.append(_queries(assignments_sync))
        answers = Assignment.objects.filter(task__hit__in=published)
        assert set(answers.values_list("verification", flat=True)) == {Verification.VERIFIED}
        assert answers.count() == 2 * hits
    assert _per_hit(counts) <= 5, counts


@pytest.mark.mturk
def test_the_approval_pass_costs_at_most_ten_queries_per_hit(local_turk):
    counts = []
    for hits in (2, 8):
        HIT.objects.update(complete=True)
        published = _answered_hits(local_turk, hits=hits)
        assignments_sync()  # verified
        for hit in published:
            for number in range(2):
                _qc_ran(hit, f"AWORKER{number:07d}")
        counts.append(_queries(assignments_sync))  # approved, complete, deleted
        answers = Assignment.objects.filter(task__hit__in=published)
        assert set(answers.values_list("status", flat=True)) == {Assignment.Status.APPROVED}
        assert HIT.objects.filter(pk__in=[hit.pk for hit in published], complete=True, deleted=True).count() == hits
    assert _per_hit(counts) <= 10, counts


def _two_sessions_answered(batch: Batch) -> None:
    """Two participants of an open link answer every task they are handed, and quality
    control has run for both since: their answers are due for approval."""
    link = links.link_create(campaign=batch.topic.campaign, kind="open", label="lab")
    for code in ("ann", "bob"):
        session = holds.link_session_open(
            link=link, worker=holds.session_worker(channel="links", external_id=f"link{link.pk}-{code}")
        )
        while (hold := holds.hold_next(session)) is not None:
            AssignmentFactory(
                task=hold.task, worker=session.worker, assignment_id=hold.assignment_id, hit=hold.task.hit
            )
            holds.hold_submit(session=session, assignment_id=hold.assignment_id)
        WorkerQuality.objects.create(campaign=batch.topic.campaign, worker=session.worker, computed_at=timezone.now())


@pytest.mark.django_db
def test_the_approval_pass_of_a_session_channel_costs_at_most_ten_queries_per_hit():
    counts = []
    for hits in (2, 8):
        HIT.objects.update(complete=True)
        batch = links_batch(propositions=5 * hits, tasks_per_session=hits, assignments=2)
        _two_sessions_answered(batch)
        counts.append(_queries(assignments_sync))  # approved and complete
        answers = Assignment.objects.filter(task__batch=batch)
        assert answers.count() == 2 * hits
        assert set(answers.values_list("status", flat=True)) == {Assignment.Status.APPROVED}
        assert HIT.objects.filter(task__batch=batch, complete=True).count() == hits
    assert _per_hit(counts) <= 10, counts


@pytest.mark.django_db
def test_a_sync_approves_a_session_channels_answers_in_one_read_not_one_each():
    """The session channels' decisions are ours: a sync approves a chunk's answers by reading
    their statuses at once (crowd.marketplaces.sessions), not with a call (a query) each; an
    answer decided meanwhile keeps its decision."""
    batch = links_batch(propositions=20, tasks_per_session=4, assignments=2)
    _two_sessions_answered(batch)
    answers = list(Assignment.objects.filter(task__batch=batch).order_by("pk").values_list("pk", flat=True))
    assert len(answers) == 8
    Assignment.objects.filter(pk=answers[0]).update(status=Assignment.Status.REJECTED, reject_reason="by hand")

    with CaptureQueriesContext(connection) as queries:
        assignments_sync()

    statuses = dict(Assignment.objects.filter(pk__in=answers).values_list("pk", "status"))
    assert statuses == {pk: "Rejected" if pk == answers[0] else "Approved" for pk in answers}
    one_each = [query["sql"] for query in queries if '"crowd_assignment"."assignment_id" = ' in query["sql"]]
    assert one_each == []
    reads = [
        query["sql"] for query in queries if query["sql"].startswith('SELECT "crowd_assignment"."assignment_id" AS')
    ]
    assert len(reads) == 1 and '"crowd_assignment"."status" AS "status"' in reads[0]
