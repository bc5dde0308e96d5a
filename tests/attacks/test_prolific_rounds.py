"""A study per round (issue 25): a study's sessions are handed tasks from any of its open
batches, and from nothing else. Two campaigns of two researchers run their comparison stages
on the local Prolific endpoint (real client, HTTP); a real participant of the first campaign's
study tries to take and answer the second campaign's tasks."""

import random
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
from django.core.cache import cache, caches
from django.test import Client
from django.urls import reverse

from annotation.models import Task
from crowd.channels.registry import channels_sync
from crowd.hit_page.params import HitParams
from crowd.models import Assignment, Study, TaskHold, WorkSession
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
from tests.crowd.channels.prolific.conftest import _own_server_threads_joined, local_prolific, waits  # noqa: F401
from tests.crowd.channels.prolific.test_study_rounds import comparison_batch, comparison_topic

pytestmark = [pytest.mark.attacks, pytest.mark.prolific, pytest.mark.django_db(transaction=True)]

MALLORY = "5f00000000000000000a11ce"


@pytest.fixture(autouse=True)
def _site(local_prolific, settings, waits):  # noqa: F811
    cache.clear()
    caches["ratelimit"].clear()
    settings.SITE_URL = local_prolific


@pytest.fixture
def two_stages(local_prolific, django_user_model):  # noqa: F811
    """Campaign A's and campaign B's comparison stages, each with two batches in one study."""
    studies = []
    for name in ("alice", "bob"):
        owner = django_user_model.objects.create_user(name, password="x")
        topic = comparison_topic(owner=owner)
        for number, groups in ((1, 2), (2, 1)):
            batch_publish(batch_id=comparison_batch(topic, number, groups).pk)
        studies.append(Study.objects.get(topic=topic))
    return studies


def _arrived(base_url: str, study: Study) -> tuple[Participant, str]:
    mallory = Participant(
        SimulatedWorker(worker_id=MALLORY, behaviour=DILIGENT, noise=0.5), Judge(seed=1), random.Random(1)
    )
    url = local_prolific_starter(base_url)(mallory.http, study.study_id, MALLORY)
    assert url is not None
    return mallory, url


def test_a_session_of_one_campaigns_study_never_takes_another_campaigns_tasks(local_prolific, two_stages):  # noqa: F811
    own, other = two_stages
    mallory, url = _arrived(local_prolific, own)
    session_page = mallory.http.get(url, timeout=30)
    session = WorkSession.objects.get(worker__external_id=MALLORY)
    [hold] = TaskHold.objects.filter(session=session)
    assert hold.task.batch.topic_id == own.topic_id

    # The HIT page of the other campaign's task, with her own hold's assignment id and session.
    target = Task.objects.filter(batch__topic=other.topic).order_by("pk").first()
    query = HitParams(
        assignment_id=hold.assignment_id,
        hit_id=target.hit.hit_id,
        worker_id=MALLORY,
        turk_submit_to=f"{local_prolific}/s/{session.key}",
    ).query_string()
    page = mallory.http.get(f"{local_prolific}{reverse('hit:page', args=[target.uuid])}?{query}", timeout=30)
    form = forms_parse(page.text)[HIT_FORM_ID]
    data = hit_form_fill(mallory.judge, mallory.worker, form, mallory.rng)
    stored = mallory.http.post(urljoin(page.url, form.action), data=data, timeout=30)
    external = forms_parse(stored.text)[EXTERNAL_SUBMIT_FORM_ID]  # the page stores any answer, to judge later
    copy = mallory.http.post(urljoin(stored.url, external.action), data=external.hidden, timeout=30)
    assert copy.status_code == 400  # no answer of hers to the task her session holds: nothing counted

    channels_sync()  # the forged answer matches no hold of hers on that task: never counted
    assert not TaskHold.objects.filter(task__batch__topic=other.topic).exists()
    assert not Assignment.objects.filter(task__batch__topic=other.topic).counted().exists()
    forged = Assignment.objects.get(task__batch__topic=other.topic)
    assert forged.verification == "unverified"
    # Her session's page hands her only her own study's tasks, never the other campaign's.
    again = mallory.http.get(session_page.url, timeout=30)
    assert again.status_code == 200
    held = TaskHold.objects.filter(session=session)
    assert {hold.task.batch.topic_id for hold in held} == {own.topic_id}

    # Her submission in the first study is no way into the second.
    [submission] = parse_qs(urlsplit(url).query)["SESSION_ID"]
    refused = Client().get(
        "/s/prolific/", {"PROLIFIC_PID": MALLORY, "STUDY_ID": other.study_id, "SESSION_ID": submission}
    )
    assert refused.status_code == 403
    assert WorkSession.objects.filter(worker__external_id=MALLORY).count() == 1
    mallory.http.close()
