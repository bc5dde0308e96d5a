"""Handing tasks out to sessions: slots, holds, answers, completion (participant links)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.batching import likert_tasks_build
from annotation.models import Batch, Campaign, Proposition
from config.errors import ApplicationError, Conflict, Gone
from crowd.channels.links import links
from crowd.hit_page.content import hit_content_get
from crowd.hit_page.store import answer_submit
from crowd.models import HIT, Assignment, WorkerQuality, WorkSession
from crowd.qc.worker_quality import campaign_quality_refresh
from crowd.sessions import holds
from crowd.work import ledger
from crowd.work.publishing import batch_publish
from tests.factories import AssignmentFactory, CampaignFactory, PropositionFactory, TopicFactory

from .conftest import links_batch


def _session(link, code):
    worker = holds.session_worker(channel="links", external_id=f"link{link.pk}-{code}")
    return holds.link_session_open(link=link, worker=worker)


def _answer(hold):
    """What the HIT page stores for the hold's assignment."""
    return AssignmentFactory(
        task=hold.task,
        worker=hold.session.worker,
        assignment_id=hold.assignment_id,
        submitted_at=timezone.now(),
        verification=Assignment.Verification.PENDING,
    )


def test_publishing_on_links_offers_every_task_and_costs_nothing(db):
    batch = links_batch(propositions=25)

    hits = HIT.objects.filter(task__batch=batch)
    assert hits.count() == batch.tasks.count() == 5
    assert set(hits.values_list("channel", flat=True)) == {"links"}
    assert all(hit.hit_id.startswith("L") for hit in hits)
    assert batch.status == Batch.Status.PUBLISHED
    assert ledger.campaign_money(campaign=batch.topic.campaign).committed == 0


def test_a_session_gets_each_task_once_and_never_more_holders_than_needed(open_link):
    first, second, third = (_session(open_link, code) for code in ("ann", "bob", "cyd"))

    held = [holds.hold_next(s) for s in (first, second, third)]

    # Two assignments per task: the third participant gets the second task.
    assert held[0].task_id == held[1].task_id != held[2].task_id
    assert len({h.assignment_id for h in held}) == 3
    # Asking again returns the hold in hand, not a new task.
    assert holds.hold_next(first).pk == held[0].pk


def test_a_participant_never_gets_a_task_they_did(open_link):
    session = _session(open_link, "ann")
    hold = holds.hold_next(session)
    _answer(hold)
    holds.hold_submit(session=session, assignment_id=hold.assignment_id)

    later = holds.hold_next(session)

    assert later.task_id != hold.task_id and later.position == 2


def test_an_abandoned_hold_is_released_after_the_assignment_duration(open_link):
    campaign = open_link.campaign
    campaign.assignments_per_hit = 1
    campaign.save()
    campaign.topics.get().batches.get().tasks.update(assignments_needed=1)
    slow, other = _session(open_link, "slow"), _session(open_link, "other")
    held = holds.hold_next(slow)
    later = timezone.now() + timedelta(seconds=campaign.assignment_duration_seconds + 1)

    assert holds.hold_next(other).task_id != held.task_id  # the slot is taken for now
    report = holds.sessions_verify(now=later)
    third = _session(open_link, "third")

    assert report.released == 2
    assert holds.hold_next(third, now=later).task_id == held.task_id


def test_an_answer_counts_only_through_its_own_hold(open_link):
    session, intruder = _session(open_link, "ann"), _session(open_link, "eve")
    hold = holds.hold_next(session)

    with pytest.raises(Conflict, match="not handed to you"):
        holds.hold_submit(session=intruder, assignment_id=hold.assignment_id)
    with pytest.raises(ApplicationError, match="not saved"):
        holds.hold_submit(session=session, assignment_id=hold.assignment_id)
    answer = _answer(hold)
    holds.hold_submit(session=session, assignment_id=hold.assignment_id)
    holds.hold_submit(session=session, assignment_id=hold.assignment_id)  # a repeat changes nothing

    answer.refresh_from_db()
    assert answer.verification == Assignment.Verification.VERIFIED
    assert holds.progress(session).done == 1


def test_an_answer_no_hold_covers_is_never_counted(open_link):
    session = _session(open_link, "ann")
    hold = holds.hold_next(session)
    other_task = open_link.campaign.topics.get().batches.get().tasks.exclude(pk=hold.task_id).first()
    forged = AssignmentFactory(
        task=other_task,
        worker=session.worker,
        assignment_id="SFORGED",
        submitted_at=timezone.now(),
        verification=Assignment.Verification.PENDING,
    )
    lost_copy = _answer(hold)  # stored by the page, its copy never reached the session

    report = holds.sessions_verify()

    forged.refresh_from_db()
    lost_copy.refresh_from_db()
    assert forged.verification == Assignment.Verification.UNVERIFIED
    assert lost_copy.verification == Assignment.Verification.VERIFIED
    assert (report.unverified, report.counted) == (1, 1)


def test_the_session_finishes_after_its_last_task(open_link):
    session = _session(open_link, "ann")
    for _ in range(session.tasks_target):
        hold = holds.hold_next(session)
        _answer(hold)
        holds.hold_submit(session=session, assignment_id=hold.assignment_id)

    session.refresh_from_db()
    assert session.status == WorkSession.Status.FINISHED
    assert holds.hold_next(session) is None
    assert holds.progress(session).finished


def test_the_pool_running_dry_ends_the_hand_out(db):
    batch = links_batch(propositions=10, tasks_per_session=5, assignments=1)  # 2 tasks, 1 slot each
    link = links.link_create(campaign=batch.topic.campaign, kind="open")
    session = _session(link, "ann")
    for _ in range(2):
        hold = holds.hold_next(session)
        _answer(hold)
        holds.hold_submit(session=session, assignment_id=hold.assignment_id)

    assert holds.hold_next(session) is None
    assert holds.hold_next(_session(link, "bob")) is None


def test_excluded_and_blocked_workers_are_turned_away(open_link):
    session = _session(open_link, "ann")
    assert not holds.worker_turned_away(campaign=open_link.campaign, worker=session.worker)
    WorkerQuality.objects.create(campaign=open_link.campaign, worker=session.worker, computed_status="excluded")
    assert holds.worker_turned_away(campaign=open_link.campaign, worker=session.worker)


def test_revoking_a_link_stops_new_sessions_and_frees_the_task_in_hand(db):
    batch = links_batch()
    link = links.link_create(campaign=batch.topic.campaign, label="Dr. Expert")
    session = holds.link_session_open(link=link, worker=link.worker)
    hold = holds.hold_next(session)

    stopped = links.link_revoke(link=link)

    hold.refresh_from_db()
    assert stopped == 1 and hold.released_at is not None
    with pytest.raises(Gone):
        holds.link_session_open(link=link, worker=link.worker)


def test_links_need_a_links_campaign(db):
    batch = links_batch()
    campaign = batch.topic.campaign
    campaign.channel = "mturk"
    with pytest.raises(ApplicationError, match="participant links"):
        links.link_create(campaign=campaign)


def test_participant_counts(db):
    batch = links_batch()
    campaign = batch.topic.campaign
    personal = links.link_create(campaign=campaign, label="Dr. Expert")
    idle = links.link_create(campaign=campaign, label="Prof. Idle")
    session = holds.link_session_open(link=personal, worker=personal.worker)
    hold = holds.hold_next(session)
    _answer(hold)
    holds.hold_submit(session=session, assignment_id=hold.assignment_id)

    rows = {row.participant: row for row in links.participants(campaign=campaign)}

    assert rows["Dr. Expert"].tasks == 1 and rows["Dr. Expert"].sessions == 1
    assert rows["Prof. Idle"].tasks == 0 and rows["Prof. Idle"].link == idle


def test_every_participant_of_a_full_session_meets_the_qc_minimum_of_traps_of_both_kinds(db):
    """The trap rule of annotation.batching, as sessions hand the tasks out and quality control
    counts them: a 150-proposition topic with both kinds of trap, the default settings."""
    campaign = CampaignFactory(channel=Campaign.Channel.LINKS, assignments_per_hit=2)
    topic = TopicFactory(campaign=campaign)
    PropositionFactory.create_batch(150, topic=topic)
    PropositionFactory.create_batch(3, topic=topic, trap_kind=Proposition.TrapKind.SUBTLE)
    batch_publish(batch_id=likert_tasks_build(topic=topic, seed=topic.pk).pk)
    link = links.link_create(campaign=campaign, kind="open")

    for code in ("ann", "bob", "cyd", "dan", "eve", "fay"):
        session = _session(link, code)
        while (hold := holds.session_next(session)) is not None:
            content = hit_content_get(hold.task.uuid)
            answer_submit(
                content=content,
                assignment_id=hold.assignment_id,
                worker_external_id=session.worker.external_id,
                fields={f"rating-{pid}": ["3"] for pid in content.item_ids},
            )
            holds.hold_submit(session=session, assignment_id=hold.assignment_id)
    campaign_quality_refresh(campaign_id=campaign.pk)

    rows = WorkerQuality.objects.filter(campaign=campaign)
    assert rows.count() == 6 and {row.labels for row in rows} == {50}  # 10 tasks of 5 statements each
    for row in rows:
        assert row.traps_seen >= campaign.qc_min_traps == 2
        assert row.obvious_traps_seen >= 1 and row.subtle_traps_seen >= 1


def test_the_session_page_hands_out_a_task_in_a_bounded_number_of_queries(db, client, django_assert_max_num_queries):
    """A participant sees the session page once per task: it reads the task's page, HIT and kind
    with the task it hands out, and counts the session's answers once (18 queries before, 13
    on a reload)."""
    from django.urls import reverse

    batch = links_batch(propositions=50, tasks_per_session=5, assignments=2)
    link = links.link_create(campaign=batch.topic.campaign, kind="open", label="lab")
    session = _session(link, "ann")
    page = reverse("sessions:session", args=[session.key])
    with django_assert_max_num_queries(14):
        first = client.get(page)
    assert first.status_code == 200 and "Task 1 of 5" in first.content.decode()
    with django_assert_max_num_queries(11):
        again = client.get(page)
    hold = holds.hold_current(session)
    assert hold.task.hit.hit_id in again.content.decode()
    _answer(hold)
    holds.hold_submit(session=session, assignment_id=hold.assignment_id)
    with django_assert_max_num_queries(14):
        second = client.get(page)
    assert "Task 2 of 5" in second.content.decode()
