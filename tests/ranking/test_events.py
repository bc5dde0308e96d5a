"""The event path (ranking.workflow, crowd.work.events): a batch's last confirmed answer steps
its topic and publishes the next batch without waiting for beat. A real Celery worker on Redis
and PostgreSQL, whose beat is an hour away, so every step here is an event's; workers answer
through the local worker site, our HIT pages and the local externalSubmit."""

import threading
import time

import psycopg2
import pytest
from django.db import connection
from django.utils import timezone

from annotation.batching import likert_tasks_build
from annotation.models import Batch, Campaign, Topic
from crowd.channels.registry import batch_sync_report
from crowd.models import HIT, Assignment, QualityStatistics, Worker, WorkerQuality
from crowd.work import events
from crowd.work.publishing import batch_publish
from ranking import tasks, workflow
from ranking.models import RankingSnapshot, StepRequest
from ranking.pipeline import topic_start
from tests.conftest import (
    celery_connections_reset,
    celery_sending_to,
    celery_worker_started,
    require_service,
    runner_database_url,
)
from tests.crowd.conftest import LocalTurk
from tests.factories import (
    AssignmentFactory,
    CampaignFactory,
    PropositionFactory,
    TopicFactory,
    WorkerQualityFactory,
)

pytestmark = [pytest.mark.mturk, pytest.mark.django_db(transaction=True)]
WAIT = 90  # seconds: a deadline for what the worker does, never an assertion on time


@pytest.fixture(scope="module")
def _module_worker(django_db_setup, live_server):
    """One Celery worker for the module's tests that need one (starting it is most of a short
    test's time), on the runner's test database, which each test empties as ever. Its beat sends
    no pass (an hour away): whatever steps a topic is an event. The tests without a worker come
    first in the module, so that no task of a worker's runs beside them."""
    with celery_worker_started(
        database_url=runner_database_url(),
        redis_url=require_service("SALIENCE_TEST_REDIS_URL", "Redis"),
        site_url=live_server.url,
        sync_interval="3600",
    ) as process:
        yield process


@pytest.fixture
def event_worker(_module_worker, redis_url, transactional_db):
    with celery_sending_to(redis_url) as app:
        celery_connections_reset(app)  # enqueue on the worker's Redis, not a broker an earlier test met
        yield _module_worker


@pytest.fixture
def turk(live_server, settings) -> LocalTurk:
    """The local endpoint and our HIT pages on the live server (tests/crowd/conftest.py's)."""
    settings.MTURK_ENVIRONMENT = "local"
    settings.SITE_URL = live_server.url
    settings.MTURK_LOCAL_ENDPOINT_URL = live_server.url + "/localturk/"
    return LocalTurk(live_server.url)


def _likert_round(*, hits: int) -> tuple[Topic, list[HIT]]:
    """A topic in its Likert round: `hits` one-answer HITs published at the local endpoint."""
    campaign = CampaignFactory(
        status=Campaign.Status.ACTIVE,
        assignments_per_hit=1,
        top_k=4,
        batch_pairs=4,
        trap_rate=0,
        pair_budget_fraction=1,
    )
    topic = TopicFactory(campaign=campaign)
    PropositionFactory.create_batch(5 * hits, topic=topic)
    batch = likert_tasks_build(topic=topic, seed=1)
    batch_publish(batch_id=batch.pk)
    topic_start(topic_id=topic.pk)
    return topic, list(HIT.objects.filter(task__batch=batch).order_by("pk"))


def _published_comparisons(topic: Topic) -> bool:
    return HIT.objects.filter(task__batch__topic=topic, task__batch__kind=Batch.Kind.COMPARISON).exists()


def _comparison_batches(topic: Topic) -> list[Batch]:
    return list(Batch.objects.filter(topic=topic, kind=Batch.Kind.COMPARISON))


def _until(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"the worker did not get there: {what}"
        time.sleep(0.2)


def _stepped_once(topic: Topic) -> None:
    """The topic's Likert round was scored once and its first comparison batch published,
    and nothing more happens after the event's request is gone."""
    _until(
        lambda: HIT.objects.filter(task__batch__topic=topic, task__batch__kind=Batch.Kind.COMPARISON).exists(), "a step"
    )
    _until(lambda: not StepRequest.objects.filter(topic=topic).exists(), "the request taken")
    time.sleep(3)  # room for a second step, if one were coming
    topic.refresh_from_db()
    assert topic.state == Topic.State.COMPARISONS
    (batch,) = _comparison_batches(topic)
    assert batch.status == Batch.Status.PUBLISHED
    assert HIT.objects.filter(task__batch=batch).count() == batch.tasks.count()
    assert not StepRequest.objects.exists()


def _holder() -> psycopg2.extensions.connection:
    """A connection of its own, as a pass's in another process would be."""
    settings_dict = connection.settings_dict
    holder = psycopg2.connect(
        dbname=settings_dict["NAME"],
        user=settings_dict["USER"],
        host=settings_dict["HOST"],
        port=settings_dict["PORT"],
        password=settings_dict["PASSWORD"] or None,
    )
    holder.autocommit = True
    return holder


# ---- Without a worker: what the event path reports and where it stops ------------------------


def test_an_answer_reports_its_batch_only_when_every_task_holds_its_answers(django_capture_on_commit_callbacks):
    campaign = CampaignFactory(status=Campaign.Status.ACTIVE, assignments_per_hit=1, trap_rate=0)
    topic = TopicFactory(campaign=campaign)
    PropositionFactory.create_batch(10, topic=topic)
    batch = likert_tasks_build(topic=topic, seed=1)
    Batch.objects.filter(pk=batch.pk).update(status=Batch.Status.PUBLISHED)
    first, second = batch.tasks.order_by("position")
    AssignmentFactory(task=first)
    assert events.task_answered(task_id=first.pk) is None  # the other task has nothing yet
    refused = AssignmentFactory(task=second, verification=Assignment.Verification.UNVERIFIED)
    assert events.task_answered(task_id=second.pk) is None  # a refused answer fills nothing
    Assignment.objects.filter(pk=refused.pk).update(verification=Assignment.Verification.PENDING)
    heard: list[int] = []
    events.batch_full_listen(heard.append)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            assert events.task_answered(task_id=second.pk) == batch.pk
    finally:
        events._listeners.remove(heard.append)
    assert heard == [batch.pk]


def test_a_pass_takes_the_requests_that_came_due_before_it_lets_go(settings):
    settings.STEP_EVENT_DEBOUNCE_SECONDS = 0
    campaign = CampaignFactory(status=Campaign.Status.ACTIVE, assignments_per_hit=1, trap_rate=0)
    topic = TopicFactory(campaign=campaign)
    PropositionFactory.create_batch(5, topic=topic)
    batch = likert_tasks_build(topic=topic, seed=1)
    Batch.objects.filter(pk=batch.pk).update(status=Batch.Status.PUBLISHED)
    Topic.objects.filter(pk=topic.pk).update(state=Topic.State.LIKERT)
    assert workflow.step_request_record(batch_id=batch.pk) is True
    assert workflow.step_request_record(batch_id=batch.pk) is False  # one request covers a burst

    workflow.loop_run_exclusive()

    assert not StepRequest.objects.exists()  # nothing answered: dropped without a step
    topic.refresh_from_db()
    assert topic.state == Topic.State.LIKERT


def _unanswered_likert(campaign: Campaign) -> Batch:
    topic = TopicFactory(campaign=campaign)
    PropositionFactory.create_batch(5, topic=topic)
    batch = likert_tasks_build(topic=topic, seed=1)
    Batch.objects.filter(pk=batch.pk).update(status=Batch.Status.PUBLISHED)
    Topic.objects.filter(pk=topic.pk).update(state=Topic.State.LIKERT)
    return batch


def test_an_event_task_takes_one_due_request_and_leaves_the_next_to_another_task(settings):
    """So the tasks of two topics' requests step them side by side, not one after the other."""
    settings.STEP_EVENT_DEBOUNCE_SECONDS = 0
    campaign = CampaignFactory(status=Campaign.Status.ACTIVE, assignments_per_hit=1, trap_rate=0)
    first, second = _unanswered_likert(campaign), _unanswered_likert(campaign)
    assert workflow.step_request_record(batch_id=first.pk) is True
    assert workflow.step_request_record(batch_id=second.pk) is True

    report = workflow.step_requests_run()

    assert report.dropped == [first.topic_id]  # nothing answered: the earliest request taken, no step
    assert list(StepRequest.objects.values_list("topic_id", flat=True)) == [second.topic_id]
    assert report.next_due is not None and report.next_due <= timezone.now()  # due: the task goes again at once


def test_a_pass_leaves_a_topic_an_event_is_stepping_to_it_and_steps_the_others(turk):
    held, held_hits = _likert_round(hits=2)
    free, free_hits = _likert_round(hits=2)
    for index, hit in enumerate(held_hits + free_hits):
        turk.worker(f"ALEFT{index:09d}").complete(hit.hit_id)
    event = _holder()
    try:
        with event.cursor() as cursor:  # an event is stepping the one topic
            cursor.execute("SELECT pg_advisory_lock(%s, %s)", [workflow.TOPIC_LOCK_CLASS, held.pk])

        report = workflow.loop_run_exclusive()

        assert report is not None and report.elsewhere == [held.pk]
        assert [step["topic"] for step in report.steps] == [free.pk]
        assert _published_comparisons(free) and not _published_comparisons(held)
    finally:
        event.close()
    report = workflow.loop_run_exclusive()  # let go: the next pass steps it
    assert report is not None and [step["topic"] for step in report.steps] == [held.pk]
    assert _published_comparisons(held)


def test_the_event_paths_confirmation_approves_nothing_and_leaves_approvals_to_the_pass(turk):
    """A step needs its batch's answers confirmed, not approved: once another topic's QC made
    them due, approving a Likert batch (five calls a HIT) in the confirmation held the step."""
    topic, hits = _likert_round(hits=2)
    for index, hit in enumerate(hits):
        turk.worker(f"ACONFIRM{index:06d}").complete(hit.hit_id)
    for worker in Worker.objects.filter(assignments__task__batch__topic=topic):  # QC ran for them since
        WorkerQualityFactory(campaign=topic.campaign, worker=worker, computed_at=timezone.now())

    report = batch_sync_report(batch_id=hits[0].task.batch_id)

    answers = Assignment.objects.filter(task__batch__topic=topic)
    assert report.hits == 2 and report.approved == 0 and report.completed == 0
    assert set(answers.values_list("verification", "status")) == {
        (Assignment.Verification.VERIFIED, Assignment.Status.SUBMITTED)
    }
    workflow.loop_run_exclusive()  # the pass approves them
    assert set(answers.values_list("status", flat=True)) == {Assignment.Status.APPROVED}


def test_an_events_qc_stores_the_workers_and_leaves_the_reports_statistics_to_the_pass(turk, settings):
    """The step waits for the event's QC: the exclusions it needs are stored, the report's
    crowd-level statistics (the bootstrap curve, two thirds of an event's QC at 3 x 1,750) wait
    for the next pass, or are stored once the step finished the topic."""
    settings.STEP_EVENT_DEBOUNCE_SECONDS = 0
    topic, hits = _likert_round(hits=2)
    for index, hit in enumerate(hits):
        turk.worker(f"ASTATS{index:08d}").complete(hit.hit_id)
    assert workflow.step_request_record(batch_id=hits[0].task.batch_id) is True

    report = workflow.step_requests_run()

    assert [step["action"] for step in report.steps] == ["likert_done"] and report.quality_runs == [topic.campaign_id]
    assert WorkerQuality.objects.filter(campaign=topic.campaign).count() == 2
    assert not QualityStatistics.objects.filter(campaign=topic.campaign).exists()
    workflow.loop_run_exclusive()
    assert QualityStatistics.objects.filter(campaign=topic.campaign, topic__isnull=True).exists()

    # The event that finishes the topic stores them itself: no pass runs QC for a campaign
    # whose topics are all done.
    (batch,) = _comparison_batches(topic)
    Campaign.objects.filter(pk=topic.campaign_id).update(pair_budget_fraction=0.01)  # this batch spends it
    QualityStatistics.objects.filter(campaign=topic.campaign).delete()
    for index, hit in enumerate(HIT.objects.filter(task__batch=batch)):
        turk.worker(f"AORDER{index:08d}").complete(hit.hit_id)
    assert workflow.step_request_record(batch_id=batch.pk) is True
    report = workflow.step_requests_run()
    assert [step["state"] for step in report.steps] == [Topic.State.DONE]
    assert QualityStatistics.objects.filter(campaign=topic.campaign, topic__isnull=True).exists()


def test_a_topic_finished_while_others_wait_leaves_the_statistics_to_the_pass(turk, settings):
    """Only the campaign's last topic to finish stores the report's statistics from its event:
    while another topic waits for its crowd, passes run QC, and 30 topics finishing one by one
    would each compute them for the whole campaign."""
    settings.STEP_EVENT_DEBOUNCE_SECONDS = 0
    topic, hits = _likert_round(hits=2)
    other = TopicFactory(campaign=topic.campaign, key="other", state=Topic.State.LIKERT)
    for index, hit in enumerate(hits):
        turk.worker(f"AWAITS{index:08d}").complete(hit.hit_id)
    assert workflow.step_request_record(batch_id=hits[0].task.batch_id) is True
    workflow.step_requests_run()
    (batch,) = _comparison_batches(topic)
    Campaign.objects.filter(pk=topic.campaign_id).update(pair_budget_fraction=0.01)  # this batch spends it
    for index, hit in enumerate(HIT.objects.filter(task__batch=batch)):
        turk.worker(f"AWAITO{index:08d}").complete(hit.hit_id)
    assert workflow.step_request_record(batch_id=batch.pk) is True

    report = workflow.step_requests_run()

    assert [step["state"] for step in report.steps] == [Topic.State.DONE]
    assert not QualityStatistics.objects.filter(campaign=topic.campaign).exists()
    assert Topic.objects.get(pk=other.pk).state == Topic.State.LIKERT  # its answers' pass runs QC


def test_with_celery_eager_an_event_enqueues_nothing_and_leaves_it_to_the_pass(settings):
    campaign = CampaignFactory(status=Campaign.Status.ACTIVE)
    topic = TopicFactory(campaign=campaign)
    PropositionFactory.create_batch(5, topic=topic)
    batch = likert_tasks_build(topic=topic, seed=1)

    tasks.batch_full_heard(batch.pk)

    assert not StepRequest.objects.exists()


# ---- With a worker: the event path end to end -----------------------------------------------


def test_the_last_answer_of_a_batch_steps_its_topic_once_and_publishes_the_next_batch(event_worker, turk):
    topic, hits = _likert_round(hits=3)
    for index, hit in enumerate(hits[:-1]):
        turk.worker(f"AWORKER{index:07d}").complete(hit.hit_id)
    time.sleep(2)  # answers that fill no batch ask for nothing
    assert not StepRequest.objects.exists() and topic.batches.count() == 1

    turk.worker("AWORKERLAST0001").complete(hits[-1].hit_id)

    _stepped_once(topic)
    assert set(Assignment.objects.values_list("verification", flat=True)) == {Assignment.Verification.VERIFIED}


def test_a_burst_of_answers_for_one_batch_makes_one_step(event_worker, turk):
    topic, hits = _likert_round(hits=6)
    threads = [
        threading.Thread(target=turk.worker(f"ABURST{index:08d}").complete, args=(hit.hit_id,))
        for index, hit in enumerate(hits)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    _stepped_once(topic)


def test_an_event_that_finds_a_pass_stepping_its_topic_is_taken_once_the_pass_lets_go(event_worker, turk):
    topic, hits = _likert_round(hits=2)
    pass_connection = _holder()
    try:
        with pass_connection.cursor() as cursor:  # a pass of the loop is stepping the topic
            cursor.execute("SELECT pg_advisory_lock(%s, %s)", [workflow.TOPIC_LOCK_CLASS, topic.pk])
        for index, hit in enumerate(hits):
            turk.worker(f"APASS{index:09d}").complete(hit.hit_id)
        _until(lambda: StepRequest.objects.exists(), "the request recorded")
        time.sleep(4)  # the event's task came, found the topic held, and looks again later
        topic.refresh_from_db()
        assert topic.state == Topic.State.LIKERT and StepRequest.objects.filter(topic=topic).exists()
    finally:
        pass_connection.close()  # the pass ends: its lock goes with its connection

    _stepped_once(topic)


def test_an_event_steps_its_topic_while_a_pass_syncs(event_worker, turk):
    """A pass holds the loop's lock for all of its sync, which is most of it; the event
    needs only its topic's lock, so its topic moves on before that pass ends."""
    topic, hits = _likert_round(hits=2)
    pass_connection = _holder()
    try:
        with pass_connection.cursor() as cursor:  # a pass is running (syncing: no step lock)
            cursor.execute("SELECT pg_advisory_lock(%s)", [workflow.LOOP_LOCK_KEY])
        for index, hit in enumerate(hits):
            turk.worker(f"ASYNCING{index:06d}").complete(hit.hit_id)

        _stepped_once(topic)
        assert workflow.loop_run_exclusive() is None  # and the pass is still the only one
    finally:
        pass_connection.close()


def test_events_for_two_topics_step_each_topic_apart(event_worker, turk):
    """Events hold each topic's own lock: while another event holds one topic (here a
    connection of the test's), the other topic is stepped all the same, and the held one
    once it is let go."""
    held, held_hits = _likert_round(hits=2)
    free, free_hits = _likert_round(hits=2)
    other_event = _holder()
    try:
        with other_event.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s, %s)", [workflow.TOPIC_LOCK_CLASS, held.pk])
        for index, hit in enumerate(held_hits + free_hits):
            turk.worker(f"ATWO{index:010d}").complete(hit.hit_id)

        _until(lambda: _published_comparisons(free), "the free topic stepped")
        held.refresh_from_db()
        assert held.state == Topic.State.LIKERT and _comparison_batches(held) == []
        assert StepRequest.objects.filter(topic=held).exists()  # left to the event that holds it
    finally:
        other_event.close()

    # A request goes before its step commits: wait for the step's HITs.
    _until(lambda: _published_comparisons(held), "the held topic stepped once let go")
    _until(lambda: not StepRequest.objects.exists(), "every request taken")
    for topic in (held, free):
        topic.refresh_from_db()
        assert topic.state == Topic.State.COMPARISONS and len(_comparison_batches(topic)) == 1


def test_a_forged_answer_that_fills_a_batch_makes_no_step(event_worker, turk):
    topic, hits = _likert_round(hits=2)
    turk.worker("AHONEST0000001").complete(hits[0].hit_id)
    forger = turk.worker("AFORGER0000001")
    forger.forge(task_uuid=hits[1].task.uuid, hit_id=hits[1].hit_id, assignment_id="FORGEDASSIGNMENT0001")

    # The request is made (the batch looks full) and the channel asked, twice, in vain.
    _until(lambda: StepRequest.objects.filter(topic=topic, attempts__gte=2).exists(), "two confirmations tried")
    topic.refresh_from_db()
    assert topic.state == Topic.State.LIKERT
    assert _comparison_batches(topic) == [] and not RankingSnapshot.objects.exists()
    forged = Assignment.objects.get(assignment_id="FORGEDASSIGNMENT0001")
    assert forged.verification == Assignment.Verification.PENDING  # never counted
