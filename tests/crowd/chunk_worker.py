"""A Celery worker's part in a shared pass (crowd.work.chunks), played by a thread of the test
process with its own database connection, so a test can say who did which chunk.

`dispatch` is the pass's dispatcher: it hands the chunks to the thread, which takes them from
the front through the worker's own entry (`take(chunk, now)`: crowd.work.sync.chunk_sync or
crowd.work.publishing.chunk_publish), as a Celery worker does; it returns once the thread is
working its first chunk, so the pass meets that chunk held. `recorder(work)` wraps a job's
chunk work (sync._chunk_sync, publishing._chunk_publish) to note which thread worked which ids.
"""

import threading
from collections.abc import Callable
from datetime import datetime

from django.db import connection

from crowd.work.chunks import Chunk

PASS = "pass"
WORKER = "worker"


class ChunkWorker:
    def __init__(self, take: Callable[[Chunk, datetime], None]):
        self.take = take
        self.handed: list[Chunk] = []
        self.done: list[tuple[str, list[int]]] = []  # (who, ids) for every chunk worked
        self._started = threading.Event()
        self._thread: threading.Thread | None = None

    def recorder(self, work: Callable) -> Callable:
        def recorded(ids, *args, **kwargs):
            who = WORKER if threading.current_thread() is self._thread else PASS
            if who == WORKER:
                self._started.set()
            self.done.append((who, list(ids)))
            return work(ids, *args, **kwargs)

        return recorded

    def dispatch(self, chunks: list[Chunk], now: datetime) -> int:
        self.handed.extend(chunks)
        self._thread = threading.Thread(target=self._run, args=(chunks, now), name="chunk-worker")
        self._thread.start()
        assert self._started.wait(timeout=60), "the worker thread took no chunk"
        return len(chunks)

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join(timeout=60)

    def by(self, who: str) -> list[list[int]]:
        return [ids for name, ids in self.done if name == who]

    def _run(self, chunks: list[Chunk], now: datetime) -> None:
        try:
            for chunk in chunks:
                self.take(chunk, now)
        finally:
            self._started.set()  # a worker that found nothing to take lets the pass go on
            connection.close()
