"""An answer our HIT page stored for an assignment MTurk does not hold: the worker accepted
the HIT, our page took the answer, and the worker returned the HIT instead of submitting it
to MTurk. MTurk never lists that assignment; once the listing grace is over the answer is
unverified, and it never counts — for the batch's completeness nor for the Likert means.

tests/crowd/test_sync.py covers forged assignment ids and a deadline long past; this is the
boundary: an assignment MTurk issued, one second either side of the grace.
"""

from datetime import timedelta

import pytest
import requests

from annotation.batching import likert_tasks_build
from annotation.models import Batch, Topic
from crowd.models import Assignment
from crowd.work.publishing import batch_publish
from crowd.work.sync import assignments_sync
from crowd.work.sync.listing import LISTING_GRACE
from ranking.models import PropositionScore
from ranking.pipeline import batch_is_complete
from ranking.workflow import loop_run
from tests.crowd.conftest import TurkWorker

from .topics import small_topic

pytestmark = [pytest.mark.faults, pytest.mark.mturk]
Verification = Assignment.Verification


def test_an_answer_mturk_never_received_is_unverified_after_the_listing_grace(local_endpoint):
    topic = small_topic(propositions=5)  # one Likert HIT, three assignments
    likert = likert_tasks_build(topic=topic, seed=1)
    batch_publish(batch_id=likert.pk)
    hit_id = likert.tasks.get().hit.hit_id

    quitter = TurkWorker(local_endpoint, "AQUITTER000001")
    accepted = quitter.accept(hit_id)
    quitter.store(accepted["url"], score=5)
    returned = requests.post(
        f"{local_endpoint}/localturk/worker/return/{accepted['assignmentId']}/?format=json",
        data={"workerId": quitter.worker_id},
    )
    assert returned.json()["status"] == "Returned"
    honest = [TurkWorker(local_endpoint, f"AHONEST{i:07d}") for i in range(3)]
    for worker in honest[:2]:
        worker.complete(hit_id, score=1)

    lost = Assignment.objects.get(worker__external_id=quitter.worker_id)
    campaign = topic.campaign
    grace_ends = (
        (lost.accepted_at or lost.submitted_at)
        + timedelta(seconds=campaign.assignment_duration_seconds)
        + LISTING_GRACE
    )
    assert assignments_sync(now=grace_ends).verified == 2
    lost.refresh_from_db()
    assert lost.verification == Verification.PENDING  # MTurk may still list it until the grace is over

    report = assignments_sync(now=grace_ends + timedelta(seconds=1))

    lost.refresh_from_db()
    assert (report.unverified, lost.verification) == (1, Verification.UNVERIFIED)
    assert not Assignment.objects.counted().filter(pk=lost.pk).exists()
    assert not batch_is_complete(likert)  # two counted answers of three: the stored one fills no slot
    assert Topic.objects.get(pk=topic.pk).state != Topic.State.COMPARISONS  # not advanced

    honest[2].complete(hit_id, score=1)
    loop_run()  # the third answer completes the batch; the loop runs QC and advances the topic

    lost.refresh_from_db()
    assert lost.verification == Verification.UNVERIFIED
    assert Topic.objects.get(pk=topic.pk).state == Topic.State.COMPARISONS
    assert Batch.objects.filter(topic=topic, kind=Batch.Kind.COMPARISON).exists()
    scores = PropositionScore.objects.filter(proposition__topic=topic)
    assert {(score.likert_n, score.likert_mean) for score in scores} == {(3, 1.0)}  # the 5s never counted
