"""What one submission costs the database, over HTTP: its one statement (PostgreSQL), and one
query more only when it fills its task in a batch out for answers (crowd.work.events).
Counted so that the cost cannot creep back (benchmarks/hit_page_bench.py measures it)."""

from urllib.parse import urlencode

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.models import Batch
from crowd.hit_page.content import ProcessCache, hit_content_get
from crowd.hit_page.tokens import submit_token_make
from crowd.models import Assignment, LikertLabel
from crowd.work import events
from tests.factories import BatchFactory, PropositionFactory, TaskFactory, TopicFactory, ordered_propositions

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    ProcessCache.clear_all()


@pytest.fixture
def heard():
    """The batch ids reported to a listener of crowd.work.events (after commit)."""
    reports: list[int] = []
    events.batch_full_listen(reports.append)
    yield reports
    events._listeners.remove(reports.append)


def _batch(*, status: str, tasks: int = 2, needed: int = 1) -> list:
    topic = TopicFactory()
    batch = BatchFactory(topic=topic, status=status)
    return [
        TaskFactory(
            batch=batch, assignments_needed=needed, propositions=PropositionFactory.create_batch(5, topic=topic)
        )
        for _ in range(tasks)
    ]


def _submitted(task, *, worker: str, assignment: str) -> list[str]:
    """Post a Likert answer to `task` as the page's form does; the statements it sent, by
    their first word (PREPARE ...; EXECUTE ... on a connection's first submission counts as
    its EXECUTE), savepoints left out. After-commit callbacks (the reports) run only where a
    test runs them, outside the count."""
    query = {"assignmentId": assignment, "hitId": "HIT1", "workerId": worker, "turkSubmitTo": ""}
    token = submit_token_make(task_uuid=task.uuid, assignment_id=assignment, worker_id=worker)
    ratings = {f"rating-{p.pk}": "4" for p in ordered_propositions(task)}
    body = urlencode({**query, "token": token, "elapsed_ms": "30000", **ratings})
    hit_content_get(task.uuid)  # the page was shown first: the task's content is cached
    with CaptureQueriesContext(connection) as queries:
        response = Client().post(f"/hit/{task.uuid}/submit/", body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 200, response.content[:300]
    words = [q["sql"].split()[0].upper() for q in queries]
    return ["EXECUTE" if word == "PREPARE" else word for word in words if word not in ("SAVEPOINT", "RELEASE")]


def _one_write() -> list[str]:
    """The statements that store a new worker's answer: one on PostgreSQL; on other databases
    the worker's get_or_create, the assignment, its labels, then whether it filled its task."""
    if connection.vendor == "postgresql":
        return ["EXECUTE"]
    return ["SELECT", "INSERT", "INSERT", "INSERT", "SELECT"]


def _batch_count() -> list[str]:
    """The one count over a batch's tasks (crowd.work.events.batch_answered): prepared on PostgreSQL."""
    return ["EXECUTE" if connection.vendor == "postgresql" else "SELECT"]


def test_an_answer_that_fills_no_task_is_its_one_statement(django_capture_on_commit_callbacks, heard):
    (task,) = _batch(status=Batch.Status.PUBLISHED, tasks=1, needed=2)

    with django_capture_on_commit_callbacks(execute=True):
        assert _submitted(task, worker="WORKER1", assignment="ASG1") == _one_write()

    assert heard == [] and Assignment.objects.count() == 1 and LikertLabel.objects.count() == 5


def test_an_answer_that_fills_its_task_costs_one_query_more(django_capture_on_commit_callbacks, heard):
    first, second = _batch(status=Batch.Status.PUBLISHED)

    # It fills its task; the batch's other task is short: one count over the batch's tasks.
    with django_capture_on_commit_callbacks(execute=True):
        assert _submitted(first, worker="WORKER1", assignment="ASG1") == _one_write() + _batch_count()
    assert heard == []
    # The batch's last answer: the same one count, and the batch reported once.
    with django_capture_on_commit_callbacks(execute=True):
        assert _submitted(second, worker="WORKER2", assignment="ASG2") == _one_write() + _batch_count()
    assert heard == [second.batch_id]


@pytest.mark.parametrize("status", [Batch.Status.CREATED, Batch.Status.COMPLETE, Batch.Status.EXPIRED])
def test_an_answer_to_a_batch_not_out_for_answers_reports_nothing_and_costs_nothing_more(
    django_capture_on_commit_callbacks, heard, status
):
    (task,) = _batch(status=status, tasks=1)

    with django_capture_on_commit_callbacks(execute=True):
        for number in (1, 2):  # the answer that fills the task, and one more
            assert _submitted(task, worker=f"WORKER{number}", assignment=f"ASG{number}") == _one_write()

    assert heard == [] and Assignment.objects.filter(task=task).count() == 2
