"""Storing a worker's answer: the assignment and its labels in one transaction, once.

Idempotent on (assignmentId, worker): MTurk can hand a returned assignment id to another
worker, so the id alone is not a key (reference/mturk.md §7, pitfall 5). The same answer
sent again (a double click, a reload, a retried request) returns the stored assignment and
writes nothing; a different answer for a stored assignment is a Conflict, logged, never
stored.

Eligibility (blocked, excluded, already answered) is checked when the page is rendered:
only then is a submit token issued, so work in progress is never turned away here.

On PostgreSQL one statement, prepared once per connection, finds or inserts the worker and
inserts the assignment and its labels; a single statement is a transaction of its own (or
part of the caller's), and every further round trip to the server cost more than the rest
of the request (benchmarks/hit_page_bench.py). Other databases take the same steps through the ORM in
`transaction.atomic`. A repeat then reads the stored assignment with a second statement
(`_stored`), prepared on PostgreSQL likewise.
"""

import enum
import functools
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from django.db import IntegrityError, connection, models, transaction
from django.utils import timezone

from annotation.models import Batch, Task
from config.errors import Conflict
from config.postgresql.prepared import PreparedStatement
from crowd.hit_page.access import worker_ids_check
from crowd.hit_page.answers import Answer, answer_parse
from crowd.hit_page.content import HitContent
from crowd.models import Assignment, Comparison, LikertLabel, Worker
from crowd.work.events import REPORTING, answered_count_sql

logger = logging.getLogger(__name__)

MAX_TIME_ON_TASK_MS = 2**31 - 1  # PositiveIntegerField on every database


@dataclass(frozen=True)
class Submission:
    assignment: Assignment
    answer: Answer
    created: bool  # False when this answer was already stored
    # The task's batch, when this answer gave the task the last answer it needs and the batch is
    # out for answers: it may be complete (crowd.work.events.batch_answered).
    filled_batch_id: int | None = None


@dataclass(frozen=True)
class _Labels:
    model: type[models.Model]
    columns: dict[str, list[int]]  # attname -> one value per label, besides assignment and worker


def answer_submit(
    *,
    content: HitContent,
    assignment_id: str,
    worker_external_id: str,
    fields: Mapping[str, Sequence[str]],
    accepted_at: datetime | None = None,
    time_on_task_ms: int | None = None,
) -> Submission:
    """Validate `fields` against the task and store the answer; see the module docstring.

    `content` is the task's `hit_content_get(task.uuid)`. Raises InvalidAnswer or
    ApplicationError (nothing written) or Conflict.
    """
    worker_ids_check(assignment_id=assignment_id, worker_id=worker_external_id)
    # The order this worker was shown (an ordering task's own shuffle): what "untouched" means.
    shown = content.shown_order(worker_external_id)
    # Ratings are stored in the task's order, whatever order they were shown in.
    parsed_ids = shown if content.kind == Batch.Kind.COMPARISON else tuple(content.item_ids)
    answer = answer_parse(kind=content.kind, item_ids=parsed_ids, fields=fields)
    worker = Worker(channel=content.channel, external_id=worker_external_id)
    assignment = Assignment(
        task_id=content.task_id,
        hit_id=content.hit_pk,
        assignment_id=assignment_id,
        verification=Assignment.Verification.PENDING,
        answer={**answer.as_json(), "fields": dict(answer.fields())},
        untouched=answer.untouched,
        shown_order=list(shown),
        accepted_at=accepted_at,
        submitted_at=timezone.now(),
        time_on_task_ms=None if time_on_task_ms is None else max(0, min(time_on_task_ms, MAX_TIME_ON_TASK_MS)),
    )
    insert = _insert_in_one_statement if connection.vendor == "postgresql" else _insert_in_transaction
    stored, filled_batch_id = insert(worker=worker, assignment=assignment, labels=_labels(content.kind, answer))
    if stored is None:
        return Submission(assignment=assignment, answer=answer, created=True, filled_batch_id=filled_batch_id)
    return _repeat_check(stored=stored, content=content, answer=answer)


def _labels(kind: str, answer: Answer) -> _Labels:
    if kind == Batch.Kind.LIKERT:
        return _Labels(
            LikertLabel,
            {"proposition_id": [pid for pid, _ in answer.ratings], "score": [score for _, score in answer.ratings]},
        )
    pairs = answer.pairs()
    return _Labels(Comparison, {"winner_id": [win for win, _ in pairs], "loser_id": [lose for _, lose in pairs]})


def _insert_in_transaction(
    *, worker: Worker, assignment: Assignment, labels: _Labels
) -> tuple[Assignment | None, int | None]:
    """Insert `assignment` (and its worker when new) with its labels; when this worker's
    assignment id is stored already, write nothing and return the stored assignment. And
    the task's batch when the task now holds every answer it needs (`_filled_batch_sql`).

    Insert first and let the unique constraint on (assignment_id, worker) catch a repeat:
    the usual first submission then costs no extra read.
    """
    try:
        with transaction.atomic():
            assignment.worker, _ = Worker.objects.get_or_create(channel=worker.channel, external_id=worker.external_id)
            assignment.save(force_insert=True)
            labels.model._default_manager.bulk_create(
                labels.model(assignment=assignment, worker_id=assignment.worker_id, **columns)
                for columns in _label_rows(labels)
            )
    except IntegrityError:
        stored = _stored(worker=worker, assignment_id=assignment.assignment_id)
        if stored is None:
            raise
        return stored, None
    with connection.cursor() as cursor:
        cursor.execute(_filled_batch_sql(counted=True), [assignment.task_id])
        row = cursor.fetchone()
    return None, None if row is None else row[0]


def _label_rows(labels: _Labels) -> list[dict[str, int]]:
    return [dict(zip(labels.columns, row, strict=True)) for row in zip(*labels.columns.values(), strict=True)]


def _insert_in_one_statement(
    *, worker: Worker, assignment: Assignment, labels: _Labels
) -> tuple[Assignment | None, int | None]:
    """_insert_in_transaction as one PostgreSQL statement (_one_statement_sql)."""
    params = [
        worker.channel,
        worker.external_id,
        *_db_values(worker, _insert_fields(Worker)),
        *_db_values(assignment, _insert_fields(Assignment, skip="worker_id")),
        *labels.columns.values(),
        assignment.task_id,
    ]
    statement = _one_statement(labels.model, tuple(labels.columns))
    # A row that a concurrent submission inserted is invisible to the snapshot of the
    # statement that waited for it (the worker then comes back NULL); the next statement
    # sees it.
    for _ in range(2):
        with connection.cursor() as cursor:
            statement.execute(cursor, params)
            worker_pk, assignment_pk, filled_batch_id = cursor.fetchone()
        if assignment_pk is not None:
            assignment.pk, assignment.worker_id = assignment_pk, worker_pk
            assignment._state.adding, assignment._state.db = False, connection.alias
            return None, filled_batch_id
        if worker_pk is not None:
            stored = _stored(worker=worker, assignment_id=assignment.assignment_id)
            if stored is not None:
                return stored, None
    raise IntegrityError(f"assignment {assignment.assignment_id} of {worker.external_id} neither stored nor found")


def _stored(*, worker: Worker, assignment_id: str) -> Assignment | None:
    """This worker's stored assignment `assignment_id`, as `Assignment.objects.filter(...).first()`
    reads it (the ORM's converters, `from_db`) from one statement prepared once per connection:
    every answer sent twice reads it, and building the ORM's query cost more than storing an
    answer (benchmarks/load)."""
    with connection.cursor() as cursor:
        _STORED.execute(cursor, [assignment_id, worker.channel, worker.external_id])
        row = cursor.fetchone()
    if row is None:
        return None
    fields = Assignment._meta.concrete_fields
    values = []
    for field, value in zip(fields, row, strict=True):
        column = field.get_col(Assignment._meta.db_table)
        for convert in [*connection.ops.get_db_converters(column), *column.get_db_converters(connection)]:
            value = convert(value, column, connection)
        values.append(value)
    return Assignment.from_db(connection.alias, [field.attname for field in fields], values)


def _stored_sql() -> str:
    quote = connection.ops.quote_name
    columns = ", ".join(f"assignment.{quote(cast(str, field.column))}" for field in Assignment._meta.concrete_fields)
    return f"""
        SELECT {columns} FROM {quote(Assignment._meta.db_table)} AS assignment
        JOIN {quote(Worker._meta.db_table)} AS worker ON worker.id = assignment.worker_id
        WHERE assignment.assignment_id = %s AND worker.channel = %s AND worker.external_id = %s
    """


_STORED = PreparedStatement("hit_stored_assignment", _stored_sql)


@functools.cache
def _insert_fields(model: type[models.Model], *, skip: str = "") -> tuple[models.Field, ...]:
    return tuple(field for field in model._meta.concrete_fields if not field.primary_key and field.attname != skip)


def _db_values(instance: models.Model, fields: tuple[models.Field, ...]) -> list:
    """What the ORM would insert for `instance` on PostgreSQL: defaults, auto_now_add,
    database types. A value the ORM would hand to the driver unchanged (`_as_is`) skips the
    conversion, which cost more than the rest of the answer's own Python (benchmarks/load);
    the rest are converted as the ORM does, then made plain (`_plain`)."""
    values = []
    for field in fields:
        value = field.pre_save(instance, add=True)
        values.append(value if _as_is(field, value) else _plain(field, value))
    return values


def _plain(field: models.Field, value: object) -> object:
    """`value` as the ORM would send it, but a JSON object as its text (what the ORM's adapter
    sends: json.dumps with the field's encoder) and a choices' member as its value. The
    statement casts every value to its column's type, and psycopg2's quoting of the adapter
    and the members cost more than the rest of the statement's values (benchmarks/load)."""
    if isinstance(field, models.JSONField) and type(value) in (dict, list):
        return json.dumps(field.get_prep_value(value), cls=field.encoder)
    value = field.get_db_prep_save(value, connection)
    if isinstance(value, enum.Enum) and type(value.value) in (str, int):
        return value.value
    return value


# Field classes (exactly these, not subclasses) whose get_db_prep_save on PostgreSQL returns a
# value of these Python types (exactly), or None, as it is. tests/crowd/hit_page/test_store.py
# compares with the ORM's conversion.
_AS_IS_TYPES: dict[type[models.Field], tuple[type, ...]] = {
    models.CharField: (str,),
    models.TextField: (str,),
    models.BooleanField: (bool,),
    models.IntegerField: (int,),
    models.PositiveIntegerField: (int,),
    models.PositiveSmallIntegerField: (int,),
    models.BigIntegerField: (int,),
    models.BigAutoField: (int,),
    models.AutoField: (int,),
}


def _as_is(field: models.Field, value: object) -> bool:
    if isinstance(field, models.ForeignKey) and type(field) is models.ForeignKey:
        return _as_is(field.target_field, value)
    if type(field) is models.DateTimeField:
        return value is None or (type(value) is datetime and value.tzinfo is not None)
    types = _AS_IS_TYPES.get(type(field))
    return types is not None and (value is None or type(value) in types)


@functools.cache
def _one_statement(label_model: type[models.Model], label_columns: tuple[str, ...]) -> PreparedStatement:
    """_one_statement_sql, prepared once per connection: PostgreSQL takes longer to plan it
    than to run it."""
    name = f"hit_submit_{label_model._meta.model_name}"
    return PreparedStatement(name, lambda: _one_statement_sql(label_model, label_columns))


@functools.cache
def _one_statement_sql(label_model: type[models.Model], label_columns: tuple[str, ...]) -> str:
    """Find the worker or insert them; insert the assignment unless this worker's assignment
    id is stored already; insert its labels from one array per column. Returns one row:
    (worker id, assignment id), the assignment id NULL when nothing was inserted, the worker
    id NULL when a concurrent statement inserted the worker first; and `_filled_batch_sql`
    counting this answer beside the ones the task held (the statement's snapshot does not see
    its own insert). Values are cast to their columns' types, which INSERT ... SELECT does not
    infer."""
    quote = connection.ops.quote_name
    by_attname = {field.attname: field for field in _insert_fields(label_model)}
    if set(by_attname) - {"assignment_id", "worker_id"} != set(label_columns):
        raise TypeError(f"{label_model.__name__} labels need the columns {sorted(by_attname)}")
    worker_fields, assignment_fields = _insert_fields(Worker), _insert_fields(Assignment, skip="worker_id")
    label_fields = [by_attname[column] for column in label_columns]

    def names(fields):
        return ", ".join(quote(field.column) for field in fields)

    def casts(fields, suffix=""):
        return ", ".join(f"CAST(%s AS {field.cast_db_type(connection)}{suffix})" for field in fields)

    return f"""
        WITH known AS (
            SELECT id FROM {quote(Worker._meta.db_table)} WHERE channel = %s AND external_id = %s
        ), inserted AS (
            INSERT INTO {quote(Worker._meta.db_table)} ({names(worker_fields)})
            SELECT {casts(worker_fields)} WHERE NOT EXISTS (SELECT FROM known)
            ON CONFLICT ON CONSTRAINT worker_unique_external_id DO NOTHING
            RETURNING id
        ), worker AS (
            SELECT id FROM known UNION ALL SELECT id FROM inserted
        ), assignment AS (
            INSERT INTO {quote(Assignment._meta.db_table)} ({names(assignment_fields)}, worker_id)
            SELECT {casts(assignment_fields)}, worker.id FROM worker
            ON CONFLICT ON CONSTRAINT assignment_unique_worker DO NOTHING
            RETURNING id, worker_id
        ), labels AS (
            INSERT INTO {quote(label_model._meta.db_table)} (assignment_id, worker_id, {names(label_fields)})
            SELECT assignment.id, assignment.worker_id, {", ".join(f"item.{quote(cast(str, f.column))}" for f in label_fields)}
            FROM assignment, unnest({casts(label_fields, "[]")}) WITH ORDINALITY AS item({names(label_fields)}, n)
            ORDER BY item.n
        )
        SELECT (SELECT id FROM worker), (SELECT id FROM assignment), ({_filled_batch_sql(counted=False)})
    """


@functools.cache
def _filled_batch_sql(*, counted: bool) -> str:
    """The batch of task %s when the task holds every answer it needs (its answers not
    refused, crowd.work.events.ANSWERED, plus this one unless the query sees it: `counted`)
    and the batch is out for answers (events.REPORTING); else no row."""
    quote = connection.ops.quote_name
    return f"""
        SELECT task.batch_id FROM {quote(Task._meta.db_table)} AS task
        JOIN {quote(Batch._meta.db_table)} AS batch ON batch.id = task.batch_id AND batch.status = '{REPORTING}'
        WHERE task.id = %s AND task.assignments_needed <= {0 if counted else 1} + {answered_count_sql("task")}
    """


def _repeat_check(*, stored: Assignment, content: HitContent, answer: Answer) -> Submission:
    """A second submission of a stored assignment: the same answer is a success, else a conflict."""
    stored_answer = {key: value for key, value in stored.answer.items() if key != "fields"}
    if stored.task_id == content.task_id and stored_answer == answer.as_json():
        return Submission(assignment=stored, answer=answer, created=False)
    logger.warning(
        "answer conflict: assignment %s of worker %s was stored for task %s; "
        "a different answer for task %s was refused",
        stored.assignment_id,
        stored.worker_id,
        stored.task_id,
        content.task_id,
    )
    raise Conflict(
        "This assignment was already submitted with a different answer. The first answer is kept.",
        code="answer_conflict",
    )


def time_on_task(*, reported_ms: str | None, issued_at: datetime, now: datetime | None = None) -> int:
    """Milliseconds from page load to submit: the page's own measure when it sent a sane one,
    else the time since the form's token was issued."""
    since_issue = int(((now or timezone.now()) - issued_at).total_seconds() * 1000)
    reported = (reported_ms or "").strip()
    sane = reported.isascii() and reported.isdigit() and len(reported) <= 12  # int() of 4,300+ digits raises
    if sane and int(reported) <= max(since_issue, 0) + 60_000:
        return int(reported)
    return max(since_issue, 0)
