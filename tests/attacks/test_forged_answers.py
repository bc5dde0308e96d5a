"""F1: answers posted to our HIT page with assignment ids MTurk never issued — on tasks whose
HITs are complete, so no sync visits them — count nowhere: not in quality control, not in the
aggregation, not in the exports, not in the progress; they are shown as pending, and swept to
unverified once their deadline has passed. Over HTTP: the local MTurk endpoint, our pages,
boto3."""

import csv
import io
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.batching import likert_tasks_build
from annotation.models import Batch, Campaign
from crowd.models import HIT, Assignment, WorkerQuality
from crowd.work.publishing import batch_publish
from crowd.work.sync.listing import LISTING_GRACE
from ranking.models import PropositionScore
from ranking.workflow import loop_run
from tests.faults.topics import small_topic

pytestmark = [pytest.mark.attacks, pytest.mark.mturk, pytest.mark.django_db(transaction=True)]

# 20 invented workers here (100 answers); test_production.py replays the finding's 60 (300 answers).
FORGERS = [f"AFORGED{number:07d}" for number in range(20)]


def test_forged_answers_on_completed_tasks_count_nowhere_and_are_swept(local_turk):
    topic = small_topic(propositions=25)  # five Likert HITs of five statements, three assignments each
    owner = get_user_model().objects.create_user("owner", password="pw")
    Campaign.objects.filter(pk=topic.campaign_id).update(owner=owner)
    likert = likert_tasks_build(topic=topic, seed=1)
    batch_publish(batch_id=likert.pk)
    honest = [local_turk.worker(f"AHONEST{number:07d}") for number in range(3)]
    for hit in HIT.objects.filter(task__batch=likert):
        for number, worker in enumerate(honest):
            worker.complete(hit.hit_id, score=2 + number)
    loop_run()  # confirmed at MTurk; quality control; the topic moves to comparisons
    loop_run()  # approved after quality control: the Likert HITs are complete
    assert set(HIT.objects.filter(task__batch=likert).values_list("complete", flat=True)) == {True}
    counted_before = Assignment.objects.counted().count()
    means_before = dict(PropositionScore.objects.values_list("proposition_id", "likert_mean"))

    # The attack: every forger posts to every completed Likert task with an invented assignment
    # id (task uuids and HIT ids are in every preview), all "extremely important".
    forged = 0
    for worker_id in FORGERS:
        forger = local_turk.worker(worker_id)
        for task in likert.tasks.select_related("hit"):
            response = forger.forge(task_uuid=task.uuid, hit_id=task.hit.hit_id, assignment_id=f"F{worker_id}{task.pk}")
            assert response.status_code == 200
            forged += 1
    assert Assignment.objects.filter(worker__external_id__in=FORGERS).count() == forged == 100
    report = loop_run()

    # Counted nowhere.
    assert Assignment.objects.counted().count() == counted_before
    assert not Assignment.objects.counted().filter(worker__external_id__in=FORGERS).exists()
    assert not WorkerQuality.objects.filter(worker__external_id__in=FORGERS, labels__gt=0).exists()
    assert not WorkerQuality.objects.excluded().exists()  # no honest worker excluded
    assert dict(PropositionScore.objects.values_list("proposition_id", "likert_mean")) == means_before
    assert report.errors == []
    owner_client = Client()
    owner_client.force_login(owner)
    labels = owner_client.get(reverse("ranking:labels-download", args=[topic.campaign.slug, topic.key]))
    workers = {row["worker"] for row in csv.DictReader(io.StringIO(labels.content.decode()))}
    assert workers and not workers & set(FORGERS)
    page = owner_client.get(reverse("dashboard:campaign", args=[topic.campaign.slug])).content.decode()
    assert f"{forged} more answers pending" in page

    # Past their deadline, the sweep marks them unverified: pending no longer.
    later = timezone.now() + timedelta(seconds=topic.campaign.assignment_duration_seconds) + LISTING_GRACE
    swept = loop_run(now=later + timedelta(minutes=1))
    assert swept.sync["unverified"] >= forged
    assert set(Assignment.objects.filter(worker__external_id__in=FORGERS).values_list("verification", flat=True)) == {
        Assignment.Verification.UNVERIFIED
    }
    page = owner_client.get(reverse("dashboard:campaign", args=[topic.campaign.slug])).content.decode()
    assert "pending" not in page
    assert Batch.objects.filter(topic=topic, kind=Batch.Kind.COMPARISON).count() == 1
