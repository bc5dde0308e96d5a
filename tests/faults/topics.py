"""Topics at the stage where a fault interrupts them, built through the real job functions
and published for real at the local MTurk endpoint (the live server)."""

import random

from annotation.batching import likert_tasks_build
from annotation.models import Batch, Topic
from crowd.hit_page.content import hit_content_get
from crowd.hit_page.store import answer_submit
from crowd.models import Assignment
from crowd.work.publishing import batch_publish
from ranking.workflow import topic_step
from tests.factories import CampaignFactory, PropositionFactory, TopicFactory

WORKERS = [f"AFAULTWORKER{i:04d}" for i in range(8)]


def small_topic(*, propositions: int = 10, **campaign_fields) -> Topic:
    """A topic of a local campaign: 3 assignments per HIT, a top 6 compared in groups of 3,
    two tasks (six pairs) per comparison batch, every pair budgeted; no traps."""
    options = {
        "status": "active",
        "assignments_per_hit": 3,
        "top_k": 6,
        "comparison_group_size": 3,
        "batch_pairs": 6,
        "pair_budget_fraction": 1.0,
        "stop_stable_refits": 50,
        "trap_rate": 0,
    }
    campaign = CampaignFactory(**{**options, **campaign_fields})
    topic = TopicFactory(campaign=campaign, state=Topic.State.IMPORTING)
    for index in range(propositions):
        PropositionFactory(topic=topic, subject=f"statement {index}", object=f"aspect {index} of the topic")
    return topic


def batch_answer(batch: Batch, rng: random.Random) -> None:
    """Every task answered by as many workers as it needs, stored by the HIT page's own
    function, and marked verified (the sync's verdict, taken as given here)."""
    for task in batch.tasks.all():
        content = hit_content_get(task.uuid)
        for worker in rng.sample(WORKERS, task.assignments_needed):
            if batch.kind == Batch.Kind.LIKERT:
                fields = {f"rating-{pid}": [str(rng.randint(1, 5))] for pid in content.item_ids}
            else:
                fields = {"order": [",".join(map(str, rng.sample(content.item_ids, len(content.item_ids))))]}
            answer_submit(
                content=content,
                assignment_id=f"3FAULT{task.pk:08d}{worker[-4:]}",
                worker_external_id=worker,
                fields=fields,
            )
    Assignment.objects.filter(task__batch=batch).update(verification=Assignment.Verification.VERIFIED)


def topic_ready_for_refit(rng: random.Random) -> Topic:
    """A topic whose first comparison batch is published and fully answered: the next
    `topic_step` refits the ratings and creates (and publishes) comparison batch 2."""
    topic = small_topic()
    likert = likert_tasks_build(topic=topic, seed=1)
    batch_publish(batch_id=likert.pk)
    batch_answer(likert, rng)
    step = topic_step(topic_id=topic.pk)
    assert step.action == "likert_done", step
    batch_answer(Batch.objects.get(topic=topic, kind=Batch.Kind.COMPARISON, number=1), rng)
    topic.refresh_from_db()
    return topic
