"""Answer validation and storage: every error writes nothing; repeats are idempotent."""

import enum
import logging
from datetime import timedelta
from uuid import UUID

import pytest
from django.core.cache import cache
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from annotation.models import Batch
from config.errors import ApplicationError, Conflict
from crowd.hit_page.answers import InvalidAnswer, answer_parse
from crowd.hit_page.content import ProcessCache, hit_content_get
from crowd.hit_page.store import answer_submit, time_on_task
from crowd.models import Assignment, Comparison, LikertLabel, Worker
from tests.concurrently import at_once
from tests.factories import (
    BatchFactory,
    HITFactory,
    PropositionFactory,
    TaskFactory,
    TopicFactory,
    ordered_propositions,
)


@pytest.fixture(autouse=True)
def _fresh_cache():
    # HIT content is cached per task uuid, in this process and in Django's cache.
    cache.clear()
    ProcessCache.clear_all()


# A task uuid whose seeds are pinned below, so orders compared across workers are fixed.
FIXED_UUID = UUID("5a1e0ce0-0000-4000-8000-000000000001")


def _task(kind=Batch.Kind.LIKERT, n=5, **fields):
    topic = TopicFactory()
    return TaskFactory(
        batch=BatchFactory(topic=topic, kind=kind),
        propositions=PropositionFactory.create_batch(n, topic=topic),
        **fields,
    )


def _ids(task):
    return [p.pk for p in ordered_propositions(task)]


def _shown(task, worker="WORKER1"):
    """The order `worker` is shown the task's statements in."""
    return list(hit_content_get(task.uuid).shown_order(worker))


def _ratings(task, scores=(5, 4, 3, 2, 1)):
    return {f"rating-{pid}": [str(score)] for pid, score in zip(_ids(task), scores, strict=True)}


def _order(ids):
    return {"order": [",".join(str(pid) for pid in ids)]}


def _submit(task, fields, *, assignment_id="ASG1", worker="WORKER1", **extra):
    content = hit_content_get(task.uuid)
    return answer_submit(
        content=content, assignment_id=assignment_id, worker_external_id=worker, fields=fields, **extra
    )


def _nothing_written():
    return not (Assignment.objects.exists() or LikertLabel.objects.exists() or Comparison.objects.exists())


# --- parsing (pure) ------------------------------------------------------------------------


def _likert_problems(fields, ids=(1, 2, 3)):
    with pytest.raises(InvalidAnswer) as raised:
        answer_parse(kind=Batch.Kind.LIKERT, item_ids=list(ids), fields=fields)
    return [(problem["field"], problem["message"]) for problem in raised.value.details]


def test_likert_parse_keeps_display_order_and_ignores_other_fields():
    answer = answer_parse(
        kind=Batch.Kind.LIKERT,
        item_ids=[3, 1, 2],
        fields={"rating-1": ["5"], "rating-2": ["1"], "rating-3": ["3"], "token": ["x"], "order": ["junk"]},
    )
    assert answer.ratings == ((3, 3), (1, 5), (2, 1))
    assert answer.fields() == [("rating-3", "3"), ("rating-1", "5"), ("rating-2", "1")]


RATED_1_2 = {"rating-1": ["5"], "rating-2": ["4"]}
NOT_A_RATING = "is not a rating: use 1 to 5."


@pytest.mark.parametrize(
    "extra, problem",
    [
        ({}, ("rating-3", "This statement is not rated.")),
        ({"rating-3": ["6"]}, ("rating-3", f"'6' {NOT_A_RATING}")),
        ({"rating-3": ["0"]}, ("rating-3", f"'0' {NOT_A_RATING}")),
        ({"rating-3": ["-1"]}, ("rating-3", f"'-1' {NOT_A_RATING}")),
        ({"rating-3": ["high"]}, ("rating-3", f"'high' {NOT_A_RATING}")),
        ({"rating-3": [""]}, ("rating-3", f"'' {NOT_A_RATING}")),
        ({"rating-3": ["2", "3"]}, ("rating-3", "This statement was rated more than once.")),
        ({"rating-3": ["2"], "rating-9": ["2"]}, ("rating-9", "This statement is not part of this task.")),
        ({"rating-3": ["2"], "rating-x": ["2"]}, ("rating-x", "This statement is not part of this task.")),
    ],
)
def test_likert_parse_names_each_problem(extra, problem):
    assert _likert_problems({**RATED_1_2, **extra}) == [problem]


def test_likert_parse_reports_every_problem_and_summarises():
    with pytest.raises(InvalidAnswer) as raised:
        answer_parse(kind=Batch.Kind.LIKERT, item_ids=[1, 2, 3], fields={"rating-1": ["9"]})
    assert len(raised.value.details) == 3
    assert raised.value.message.startswith("Please rate every statement once, from 1 to 5.")
    assert "(2 more problems)" in raised.value.message


@pytest.mark.parametrize(
    "value, message",
    [
        (None, "The order is missing."),
        ("", "Statement 1 is missing from the order."),
        ("1,2", "Statement 3 is missing from the order."),
        ("1,2,3,3", "Statement 3 appears more than once."),
        ("1,2,3,4", "'4' is not a statement of this task."),
        ("1,2,x", "'x' is not a statement of this task."),
        ("1;2;3", "'1;2;3' is not a statement of this task."),
    ],
)
def test_ordering_parse_requires_a_permutation_of_the_task(value, message):
    fields = {} if value is None else {"order": [value]}
    with pytest.raises(InvalidAnswer) as raised:
        answer_parse(kind=Batch.Kind.COMPARISON, item_ids=[1, 2, 3], fields=fields)
    assert raised.value.details[0] == {"field": "order", "message": message}


def test_ordering_parse_refuses_two_orders():
    with pytest.raises(InvalidAnswer, match="more than once"):
        answer_parse(kind=Batch.Kind.COMPARISON, item_ids=[1, 2], fields={"order": ["1,2", "2,1"]})


def test_ordering_yields_every_pair_with_the_upper_item_winning():
    answer = answer_parse(kind=Batch.Kind.COMPARISON, item_ids=[1, 2, 3, 4, 5], fields={"order": ["3, 1,5,2,4"]})
    assert answer.order == (3, 1, 5, 2, 4)
    assert not answer.untouched
    pairs = answer.pairs()
    assert len(pairs) == 10 and len(set(pairs)) == 10
    assert pairs[:4] == [(3, 1), (3, 5), (3, 2), (3, 4)]
    assert (4, 2) not in pairs and (2, 4) in pairs


def test_ordering_in_the_shown_order_is_untouched():
    answer = answer_parse(kind=Batch.Kind.COMPARISON, item_ids=[4, 2, 9], fields={"order": ["4,2,9"]})
    assert answer.untouched


def test_time_on_task_prefers_the_page_measure_when_plausible():
    issued = timezone.now() - timedelta(seconds=30)
    now = issued + timedelta(seconds=30)
    assert time_on_task(reported_ms="29500", issued_at=issued, now=now) == 29500
    assert time_on_task(reported_ms="", issued_at=issued, now=now) == 30000
    assert time_on_task(reported_ms="-5", issued_at=issued, now=now) == 30000
    assert time_on_task(reported_ms="99999999", issued_at=issued, now=now) == 30000


# --- storing ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_likert_submission_stores_assignment_and_labels():
    task = _task()
    hit = HITFactory(task=task)
    accepted = timezone.now() - timedelta(minutes=2)
    result = _submit(task, _ratings(task), accepted_at=accepted, time_on_task_ms=41_000)

    assert result.created
    assignment = Assignment.objects.get()
    assert assignment == result.assignment
    assert (assignment.task, assignment.hit, assignment.worker.external_id) == (task, hit, "WORKER1")
    assert assignment.worker.channel == "mturk"
    assert assignment.verification == Assignment.Verification.PENDING
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.accepted_at == accepted and assignment.time_on_task_ms == 41_000
    assert assignment.submitted_at is not None and not assignment.untouched
    ids = _ids(task)
    assert assignment.answer["ratings"] == {str(pid): score for pid, score in zip(ids, (5, 4, 3, 2, 1))}
    assert assignment.answer["fields"] == {f"rating-{pid}": str(score) for pid, score in zip(ids, (5, 4, 3, 2, 1))}
    labels = {label.proposition_id: label.score for label in LikertLabel.objects.filter(assignment=assignment)}
    assert labels == dict(zip(ids, (5, 4, 3, 2, 1)))
    assert set(LikertLabel.objects.values_list("worker_id", flat=True)) == {assignment.worker_id}


@pytest.mark.django_db
def test_comparison_submission_stores_ten_pairs():
    task = _task(Batch.Kind.COMPARISON)
    shown = _shown(task)
    order = [shown[2], shown[0], shown[4], shown[1], shown[3]]
    _submit(task, _order(order))

    assignment = Assignment.objects.get()
    assert not assignment.untouched and assignment.shown_order == shown
    assert assignment.answer["order"] == order
    pairs = set(Comparison.objects.values_list("winner_id", "loser_id"))
    assert len(pairs) == 10 == Comparison.objects.count()
    assert all((order[i], order[j]) in pairs for i in range(5) for j in range(i + 1, 5))


@pytest.mark.django_db
def test_untouched_comparison_is_stored_and_flagged():
    task = _task(Batch.Kind.COMPARISON)
    _submit(task, _order(_shown(task)))
    assert Assignment.objects.get().untouched
    assert Comparison.objects.count() == 10


@pytest.mark.django_db
def test_untouched_means_the_order_this_worker_was_shown_not_the_tasks():
    task = _task(Batch.Kind.COMPARISON, uuid=FIXED_UUID)
    ids = _ids(task)
    # The seeds of these two workers on this task (crowd.hit_page.content.start_order).
    first, second = [ids[i] for i in (4, 2, 1, 0, 3)], [ids[i] for i in (1, 0, 4, 3, 2)]
    assert (_shown(task, "WORKER1"), _shown(task, "WORKER2")) == (first, second)

    _submit(task, _order(first), assignment_id="ASG1", worker="WORKER1")
    _submit(task, _order(first), assignment_id="ASG2", worker="WORKER2")
    _submit(task, _order(ids), assignment_id="ASG3", worker="WORKER3")

    stored = {a.worker.external_id: a for a in Assignment.objects.select_related("worker")}
    assert stored["WORKER1"].untouched and stored["WORKER1"].shown_order == first
    assert not stored["WORKER2"].untouched and stored["WORKER2"].shown_order == second
    # The task's own order is one the third worker was not shown: a judgement like any other.
    assert not stored["WORKER3"].untouched and stored["WORKER3"].shown_order == _shown(task, "WORKER3") != ids


@pytest.mark.django_db
def test_a_likert_answer_stores_the_workers_own_order_as_shown():
    task = _task(uuid=FIXED_UUID)
    ids = _ids(task)
    first, second = _shown(task, "WORKER1"), _shown(task, "WORKER2")
    assert sorted(first) == sorted(ids) and first != second  # each worker their own shuffle of the statements

    _submit(task, _ratings(task), assignment_id="ASG1", worker="WORKER1")
    _submit(task, _ratings(task), assignment_id="ASG2", worker="WORKER2")

    stored = dict(Assignment.objects.values_list("worker__external_id", "shown_order"))
    assert stored == {"WORKER1": first, "WORKER2": second}


@pytest.mark.django_db
@pytest.mark.parametrize("kind", [Batch.Kind.LIKERT, Batch.Kind.COMPARISON])
def test_the_same_answer_twice_is_one_assignment(kind):
    task = _task(kind)
    fields = _ratings(task) if kind == Batch.Kind.LIKERT else _order(_ids(task))
    first = _submit(task, fields)
    again = _submit(task, fields)  # refused by the unique constraint, then read back
    assert not again.created and again.assignment == first.assignment
    assert Assignment.objects.count() == 1
    assert LikertLabel.objects.count() + Comparison.objects.count() in (5, 10)


@pytest.mark.django_db
def test_a_different_answer_for_a_stored_assignment_is_a_logged_conflict(caplog):
    task = _task()
    _submit(task, _ratings(task))
    with caplog.at_level(logging.WARNING, logger="crowd.hit_page.store"), pytest.raises(Conflict) as raised:
        _submit(task, _ratings(task, (1, 1, 1, 1, 1)))
    assert raised.value.code == "answer_conflict" and raised.value.http_status == 409
    assert "answer conflict: assignment ASG1" in caplog.text
    assert sorted(LikertLabel.objects.values_list("score", flat=True)) == [1, 2, 3, 4, 5]


@pytest.mark.django_db
def test_a_stored_assignment_id_cannot_answer_another_task():
    task, other = _task(), _task()
    _submit(task, _ratings(task))
    with pytest.raises(Conflict):
        _submit(other, _ratings(other))
    assert Assignment.objects.count() == 1


@pytest.mark.django_db
def test_a_reused_assignment_id_of_another_worker_is_a_new_assignment():
    # MTurk hands a returned assignment id to the next worker (reference/mturk.md §7, pitfall 5).
    task = _task()
    _submit(task, _ratings(task), worker="FIRST")
    _submit(task, _ratings(task, (1, 2, 3, 4, 5)), worker="SECOND")
    assert Assignment.objects.filter(assignment_id="ASG1").count() == 2
    assert Worker.objects.count() == 2 and LikertLabel.objects.count() == 10


@pytest.mark.django_db
@pytest.mark.parametrize(
    "assignment_id, worker, code",
    [
        ("", "W1", "missing_ids"),
        ("A1", "", "missing_ids"),
        ("A" * 65, "W1", "invalid_ids"),
        ("A 1", "W1", "invalid_ids"),
    ],
)
def test_unusable_ids_are_refused_and_nothing_is_written(assignment_id, worker, code):
    task = _task()
    with pytest.raises(ApplicationError) as raised:
        _submit(task, _ratings(task), assignment_id=assignment_id, worker=worker)
    assert raised.value.code == code
    assert _nothing_written() and not Worker.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "kind, broken",
    [
        (Batch.Kind.LIKERT, lambda ids: {f"rating-{pid}": ["3"] for pid in ids[:4]}),
        (Batch.Kind.LIKERT, lambda ids: {**{f"rating-{pid}": ["3"] for pid in ids}, f"rating-{ids[0]}": ["7"]}),
        (Batch.Kind.COMPARISON, lambda ids: _order(ids[:4])),
        (Batch.Kind.COMPARISON, lambda ids: _order([*ids, ids[0]])),
        (Batch.Kind.COMPARISON, lambda ids: _order([*ids[:4], 10**9])),
    ],
)
def test_an_invalid_answer_writes_nothing(kind, broken):
    task = _task(kind)
    with pytest.raises(InvalidAnswer):
        _submit(task, broken(_ids(task)))
    assert _nothing_written() and not Worker.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_identical_submissions_store_one_assignment():
    if connection.vendor != "postgresql":
        pytest.skip("needs a database with concurrent writers (PostgreSQL: make test)")
    task = _task()
    fields = _ratings(task)

    results, errors = at_once([lambda: _submit(task, fields)] * 8)

    assert errors == []
    assert sum(result.created for result in results) == 1
    assert len({result.assignment.pk for result in results}) == 1
    assert Assignment.objects.count() == 1 and LikertLabel.objects.count() == 5


@pytest.mark.django_db(transaction=True)
def test_concurrent_first_submissions_of_a_new_worker_make_one_worker():
    if connection.vendor != "postgresql":
        pytest.skip("needs a database with concurrent writers (PostgreSQL: make test)")
    task = _task()
    fields = _ratings(task)

    results, errors = at_once(
        [lambda number=number: _submit(task, fields, assignment_id=f"ASG{number}") for number in range(8)]
    )

    assert errors == []
    assert all(result.created for result in results) and len(results) == 8
    worker = Worker.objects.get()
    assert {result.assignment.worker_id for result in results} == {worker.pk}
    assert Assignment.objects.filter(worker=worker).count() == 8 and LikertLabel.objects.count() == 40


@pytest.mark.django_db
def test_a_submission_inside_the_callers_transaction_is_part_of_it():
    # Assignment sync stores MTurk's copy of an answer inside its own transaction.
    task = _task()
    with transaction.atomic():
        first = _submit(task, _ratings(task))
        again = _submit(task, _ratings(task))
        assert first.created and not again.created and again.assignment.pk == first.assignment.pk
        transaction.set_rollback(True)
    assert _nothing_written() and not Worker.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_task_deleted_after_its_page_was_shown_writes_nothing():
    task = _task()
    content, fields = hit_content_get(task.uuid), _ratings(task)
    task.delete()
    with pytest.raises(IntegrityError):
        answer_submit(content=content, assignment_id="ASG1", worker_external_id="WORKER1", fields=fields)
    assert _nothing_written() and not Worker.objects.exists()


@pytest.mark.django_db
def test_the_created_assignment_is_the_stored_one():
    task = _task()
    result = _submit(task, _ratings(task), time_on_task_ms=5_000)
    stored = Assignment.objects.get()
    assert (result.assignment.pk, result.assignment.worker_id) == (stored.pk, stored.worker_id)
    assert result.assignment.answer == stored.answer and result.assignment.submitted_at == stored.submitted_at
    assert stored.status == Assignment.Status.SUBMITTED and stored.reject_reason == "" and stored.reviewed_at is None
    result.assignment.save(update_fields=["verification"])  # as assignment sync does
    assert Assignment.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("kind", [Batch.Kind.LIKERT, Batch.Kind.COMPARISON])
def test_a_stored_assignment_reads_as_the_orm_reads_it(kind):
    # store._stored reads the row with its own statement and the ORM's converters.
    from crowd.hit_page import store

    task = _task(kind=kind)
    fields = _ratings(task) if kind == Batch.Kind.LIKERT else _order(_ids(task))
    created = _submit(task, fields, time_on_task_ms=5_000).assignment
    read = store._stored(worker=Worker(channel=created.worker.channel, external_id="WORKER1"), assignment_id="ASG1")
    expected = Assignment.objects.get(pk=created.pk)
    assert read is not None and not read._state.adding and read._state.db == expected._state.db
    for field in Assignment._meta.concrete_fields:
        value, wanted = getattr(read, field.attname), getattr(expected, field.attname)
        assert type(value) is type(wanted) and value == wanted, field.attname
    assert (
        store._stored(worker=Worker(channel=created.worker.channel, external_id="WORKER2"), assignment_id="ASG1")
        is None
    )


@pytest.mark.django_db
def test_the_one_statement_sends_what_the_orm_would_send():
    # store._db_values hands some values to the driver without the ORM's conversion
    # (store._as_is): each one must be what get_db_prep_save itself returns, the rest must go
    # through it (JSON, choices' enum members, naive datetimes), JSON then sent as its text and
    # a member as its value.
    from psycopg2.extras import Json

    from crowd.hit_page import store

    if connection.vendor != "postgresql":
        pytest.skip("the one statement is PostgreSQL's (make test)")
    worker = Worker(channel="mturk", external_id="WORKER1")
    assignment = Assignment(
        task_id=7,
        hit_id=None,
        assignment_id="ASG1",
        verification=Assignment.Verification.PENDING,
        answer={"ratings": [[1, 5]]},
        untouched=False,
        shown_order=[1],
        accepted_at=timezone.now() - timedelta(minutes=1),
        submitted_at=timezone.now(),
        time_on_task_ms=60_000,
    )
    as_is = set()
    for instance, fields in (
        (worker, store._insert_fields(Worker)),
        (assignment, store._insert_fields(Assignment, skip="worker_id")),
    ):
        sent = store._db_values(instance, fields)
        for field, value in zip(fields, sent, strict=True):
            expected = field.get_db_prep_save(getattr(instance, field.attname), connection)
            if store._as_is(field, getattr(instance, field.attname)):
                as_is.add(field.attname)
                assert type(value) is type(expected) and value == expected, field.attname
            elif isinstance(expected, Json):  # sent as the text the ORM's adapter would send
                assert value == expected.dumps(expected.adapted), field.attname
            elif isinstance(expected, enum.Enum):  # sent as the member's value
                assert type(value) is type(expected.value) and value == expected.value, field.attname
            else:
                assert type(value) is type(expected), field.attname
    # The conversions skipped: the ids, texts, numbers, flags and aware times of an answer.
    assert {"external_id", "created_at", "task_id", "hit_id", "assignment_id", "submitted_at"} <= as_is
    assert not {"answer", "shown_order", "verification"} & as_is
    naive = timezone.now().replace(tzinfo=None)
    assert not store._as_is(Assignment._meta.get_field("submitted_at"), naive)
