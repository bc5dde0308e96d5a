"""Answers that may complete a batch, reported the moment they are stored or confirmed.

The loop's beat pass (ranking.workflow) finds a complete batch at the latest one interval
after its last answer. So that the next batch goes out within seconds instead, the places
where an answer lands report it here (`task_answered`):

* the HIT page stored an answer (crowd.hit_page.views.hit_submit): still `pending` until its
  channel confirms it (MTurk: the sync sees the assignment Submitted);
* a session counted an answer (crowd.sessions.holds.hold_submit): confirmed on its hold.

When the task then holds every answer it needs (confirmed or pending; refused ones never
count) and so does every other task of its batch, the batch *may* be complete: its id goes
to the listeners after commit. Whether it is complete is not decided here: the loop's owner
confirms the batch's answers with their channel (crowd.channels.registry.batch_sync_report)
and steps the topic only if the batch's answers are counted (ranking.pipeline.topic_ready),
so a forged or unconfirmed answer makes no step.

crowd enqueues nothing of ranking's: the owner of the loop registers its listener when its
app is ready (ranking.apps). Reporting costs the HIT page nothing but a subquery of its one
statement (the batch, when the answer filled its task and the batch is `REPORTING`), and one
query when it did: a count over the batch's tasks (`batch_answered`).
"""

import functools
from collections.abc import Callable

from django.db import connection, transaction

from annotation.models import Batch, Task
from config.postgresql.prepared import PreparedStatement
from crowd.models import CONFIRMED, Assignment

Listener = Callable[[int], None]  # called with the batch id, after commit

_listeners: list[Listener] = []
ANSWERED = (Assignment.Verification.PENDING, *CONFIRMED)  # refused (unverified) answers never count
# Only a batch out for answers is reported: before it goes out and once it is done, answers step nothing.
REPORTING = Batch.Status.PUBLISHED


def batch_full_listen(listener: Listener) -> None:
    """Register `listener(batch_id)`, called once a batch may be complete (the loop's owner)."""
    if listener not in _listeners:
        _listeners.append(listener)


def task_answered(*, task_id: int) -> int | None:
    """An answer to the task was stored or confirmed: when its batch is `REPORTING` and now
    holds every answer it needs, report the batch to the listeners after commit. The batch id
    when reported."""
    task = Task.objects.filter(pk=task_id, batch__status=REPORTING).order_by("pk")  # not Meta's: 3 joins
    row = task.values("batch_id", "assignments_needed").first()
    if row is None:
        return None
    answered = Assignment.objects.filter(task_id=task_id, verification__in=ANSWERED).count()
    if answered < row["assignments_needed"]:
        return None
    return batch_answered(batch_id=row["batch_id"])


def batch_answered(*, batch_id: int) -> int | None:
    """A task of batch `batch_id`, which is `REPORTING`, now holds every answer it needs (the
    caller counted them: `task_answered`, or the HIT page's one statement, crowd.hit_page.store):
    when every other task of the batch does too, report it to the listeners after commit. The
    batch id when reported."""
    with connection.cursor() as cursor:
        _batch_short.execute(cursor, [batch_id])
        (short,) = cursor.fetchone()
    if short:
        return None
    for listener in list(_listeners):
        transaction.on_commit(functools.partial(listener, batch_id))
    return batch_id


def answered_count_sql(task: str) -> str:
    """SQL: the number of answers, not refused (`ANSWERED`), of the task row aliased `task`.
    The HIT page's path writes its queries in SQL: the ORM took longer compiling them than
    the database running them (benchmarks/hit_page_bench.py)."""
    answered = ", ".join(f"'{state}'" for state in ANSWERED)  # constants, not input
    return f"""(
        SELECT count(*) FROM {connection.ops.quote_name(Assignment._meta.db_table)} AS answer
        WHERE answer.task_id = {task}.id AND answer.verification IN ({answered})
    )"""


def _batch_short_sql() -> str:
    """Whether a task of batch %s holds fewer answers than it needs."""
    return f"""
        SELECT EXISTS (
            SELECT 1 FROM {connection.ops.quote_name(Task._meta.db_table)} AS task
            WHERE task.batch_id = %s AND task.assignments_needed > {answered_count_sql("task")}
        )
    """


_batch_short = PreparedStatement("batch_short", _batch_short_sql)
