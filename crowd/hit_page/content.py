"""What a HIT page shows and needs to know, read once and then served from the cache.

MTurk loads the page for every preview and every accepted assignment, so the page must be
cheap (benchmarks/hit_page_bench.py). A task's content is fixed when its batch is built;
only the campaign's wording or a proposition's text can be edited afterwards, and such an
edit reaches the pages within CACHE_SECONDS.

Entries live in the Django cache and, in front of it, in a `ProcessCache` of each process,
which spares the request unpickling them. An entry keeps the expiry it was built with in
both layers, so neither serves it longer than CACHE_SECONDS after it was read. Clearing the
Django cache does not reach copies a process already holds: `ProcessCache.clear_all()`
forgets those (tests do both).
"""

import hashlib
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple
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
    statements: tuple[Statement, ...]  # in the task's order; an ordering task shows each worker its own
    hit_pk: int | None  # the published HIT, when there was one at caching time
    expires_at: float = 0.0  # time.time() when this copy, and pages made from it, are due to be read again

    @property
    def item_ids(self) -> list[int]:
        return [statement.id for statement in self.statements]

    def shown_order(self, worker_id: str) -> tuple[int, ...]:
        """The proposition ids in the order `worker_id` is shown them: `start_order` for that
        worker, for ordering and Likert tasks alike (a statement's place on a rating page
        biases its rating as a starting order biases an ordering); a task's without a worker
        (a preview) as the task holds them."""
        if not worker_id:
            return tuple(self.item_ids)
        return start_order(task_uuid=self.uuid, worker_id=worker_id, item_ids=self.item_ids)


def start_order(*, task_uuid: UUID, worker_id: str, item_ids: list[int]) -> tuple[int, ...]:
    """The starting order of an ordering task for one worker: its items shuffled by a seed
    of the task and the worker, SHA-256("salience:start-order:<task uuid>:<worker id>"),
    first 8 bytes, big-endian, into `random.Random(seed).sample`.

    Every worker starts from their own order, so a position bias (people leave items near
    where they found them) averages out over a task's workers instead of favouring the
    items one shared order puts on top. The same worker gets the same order on every load
    of the page, and at submit time, where it is stored with the answer
    (`Assignment.shown_order`) and tells an untouched ordering from a judged one. The seed
    names nothing the worker chooses: their id is the channel's, and an answer under an id
    that is not theirs is never counted.
    """
    digest = hashlib.sha256(f"salience:start-order:{task_uuid}:{worker_id}".encode()).digest()
    return tuple(random.Random(int.from_bytes(digest[:8], "big")).sample(item_ids, len(item_ids)))


class ProcessCache:
    """A dict of (expires_at, value) in this process, in front of the Django cache."""

    # Version 1 of these keys held bare values; a shared cache may still hold some.
    VERSION = 2
    _instances: ClassVar[list["ProcessCache"]] = []

    def __init__(self, max_entries: int = 2000):
        self.max_entries = max_entries
        self._entries: dict[str, tuple[float, Any]] = {}
        # gunicorn's gthread workers serve requests on several threads: eviction walks the
        # dict while others may add to it.
        self._lock = threading.Lock()
        ProcessCache._instances.append(self)

    @classmethod
    def clear_all(cls) -> None:
        for instance in cls._instances:
            instance._entries.clear()

    def get(self, key: str, build: Callable[[], tuple[float, Any] | None]) -> Any:
        """The value under `key`. Else `build()` gives (expires_at, value), which both layers
        keep until expires_at; when it gives None, nothing is kept and None is returned."""
        now = time.time()
        entry = self._entries.get(key)
        if entry is None or entry[0] <= now:
            entry = cache.get(key, version=self.VERSION)
            if entry is None or entry[0] <= now:
                entry = build()
                if entry is None:
                    return None
                cache.set(key, entry, max(1, round(entry[0] - now)), version=self.VERSION)
            self._keep(key, entry, now)
        return entry[1]

    def _keep(self, key: str, entry: tuple[float, Any], now: float) -> None:
        with self._lock:
            if len(self._entries) >= self.max_entries:
                for old_key, (expires_at, _) in list(self._entries.items()):
                    if expires_at <= now:
                        self._entries.pop(old_key, None)
                if len(self._entries) >= self.max_entries:
                    self._entries.clear()
            self._entries[key] = entry


_contents = ProcessCache()


def hit_content_get(task_uuid: UUID) -> HitContent | None:
    """The content of task `task_uuid`, or None when there is no such task."""
    return _contents.get(f"annotation:hit-content:{task_uuid}", lambda: _hit_content_read(task_uuid))


def _hit_content_read(task_uuid: UUID) -> tuple[float, HitContent] | None:
    task = Task.objects.select_related("batch__topic__campaign").filter(uuid=task_uuid).first()
    if task is None:
        return None
    topic = task.batch.topic
    campaign = topic.campaign
    items = TaskItem.objects.filter(task=task).select_related("proposition").order_by("position")
    hit_pk = HIT.objects.filter(task=task).values_list("pk", flat=True).first()
    expires_at = time.time() + (CACHE_SECONDS if hit_pk is not None else UNPUBLISHED_CACHE_SECONDS)
    content = HitContent(
        task_id=task.pk,
        uuid=task.uuid,
        kind=task.kind,
        campaign_id=campaign.pk,
        channel=campaign.channel,
        environment=campaign.environment,
        assignment_duration_seconds=campaign.assignment_duration_seconds,
        question=campaign.question_for(topic),
        statements=tuple(Statement(item.proposition_id, item.proposition.text) for item in items),
        hit_pk=hit_pk,
        expires_at=expires_at,
    )
    return expires_at, content
