"""What a HIT page shows and needs to know, read once and then served from the cache.

MTurk loads the page for every preview and every accepted assignment, so the page must be
cheap (benchmarks/hit_page_bench.py). A task's content is fixed when its batch is built;
only the campaign's wording or a proposition's text can be edited afterwards, and such an
edit reaches the pages within CACHE_SECONDS.
"""

from dataclasses import dataclass
from typing import NamedTuple
from uuid import UUID

from django.core.cache import cache

from annotation.models import Task, TaskItem
from crowd.models import HIT

CACHE_SECONDS = 300
UNPUBLISHED_CACHE_SECONDS = 10  # until its HIT exists, a task's HIT link may appear any time


class Statement(NamedTuple):
    id: int
    text: str


@dataclass(frozen=True)
class HitContent:
    task_id: int
    uuid: UUID
    kind: str
    campaign_id: int
    channel: str  # the marketplace the workers come from (Worker.channel)
    environment: str  # local | sandbox | production: where a missing turkSubmitTo points
    assignment_duration_seconds: int
    question: str
    statements: tuple[Statement, ...]  # in display order
    hit_pk: int | None  # the published HIT, when there was one at caching time

    @property
    def item_ids(self) -> list[int]:
        return [statement.id for statement in self.statements]


def hit_content_get(task_uuid: UUID) -> HitContent | None:
    """The content of task `task_uuid`, or None when there is no such task."""
    key = f"annotation:hit-content:{task_uuid}"
    content = cache.get(key)
    if content is None:
        content = _hit_content_read(task_uuid)
        if content is not None:
            seconds = CACHE_SECONDS if content.hit_pk is not None else UNPUBLISHED_CACHE_SECONDS
            cache.set(key, content, seconds)
    return content


def _hit_content_read(task_uuid: UUID) -> HitContent | None:
    task = Task.objects.select_related("batch__topic__campaign").filter(uuid=task_uuid).first()
    if task is None:
        return None
    topic = task.batch.topic
    campaign = topic.campaign
    items = TaskItem.objects.filter(task=task).select_related("proposition").order_by("position")
    return HitContent(
        task_id=task.pk,
        uuid=task.uuid,
        kind=task.kind,
        campaign_id=campaign.pk,
        channel=campaign.channel,
        environment=campaign.mturk_environment,
        assignment_duration_seconds=campaign.assignment_duration_seconds,
        question=campaign.question_for(topic),
        statements=tuple(Statement(item.proposition_id, item.proposition.text) for item in items),
        hit_pk=HIT.objects.filter(task=task).values_list("pk", flat=True).first(),
    )
