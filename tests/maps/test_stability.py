"""maps.stability (pure) against cases with known answers, and the topic's numbers from its labels."""

import pytest

from crowd.models import Assignment, LikertLabel
from maps.stability import bootstrap_stability
from maps.stability_report import topic_stability
from tests.factories import AssignmentFactory, WorkerFactory
from tests.maps.builders import chain_topic


def test_workers_who_all_agree_give_a_stable_top():
    scores = {item: [5.0 - item / 10] * 4 for item in range(20)}  # every worker gives the same score
    (point,) = bootstrap_stability(scores, ks=[2], top=5, runs=10, tracked=[0, 1, 19])
    assert point.jaccard == 1.0 and point.spearman == pytest.approx(1.0)
    assert point.tracked_share == pytest.approx(2 / 3)


def test_noise_makes_the_top_move_less_with_more_workers():
    scores = {item: [1.0, 5.0, 3.0, 2.0, 4.0, 5.0 if item % 2 else 1.0] for item in range(40)}
    small, large = bootstrap_stability(scores, ks=[1, 6], top=10, runs=40)
    assert small.jaccard < large.jaccard and small.spearman < large.spearman


def test_the_same_seed_gives_the_same_numbers():
    scores = {item: [1.0, 2.0, 5.0] for item in range(12)}
    assert bootstrap_stability(scores, ks=[1, 3], top=4, runs=5) == bootstrap_stability(
        scores, ks=[1, 3], top=4, runs=5
    )


@pytest.mark.django_db
def test_a_topics_stability_reads_its_counted_likert_labels(campaign):
    topic = chain_topic(campaign=campaign, length=5)
    assert topic_stability(topic=topic) == []
    for number in range(3):
        worker = WorkerFactory(external_id=f"W{number}")
        assignment = AssignmentFactory(
            task__batch__topic=topic, worker=worker, verification=Assignment.Verification.VERIFIED
        )
        for proposition in topic.propositions.all():
            LikertLabel.objects.create(
                assignment=assignment, worker=worker, proposition=proposition, score=3 + number % 2
            )
    points = topic_stability(topic=topic, runs=5)
    assert [p.k for p in points] == [1, 2, 3] and all(p.jaccard == 1.0 for p in points)  # 5 propositions, top 50
