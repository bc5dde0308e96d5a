"""A pass's work in chunks, done by the pass and by Celery workers at once.

A pass — a sync (crowd.work.sync, run by the loop's one owner) or a publish
(crowd.work.publishing) — splits its HITs or tasks into chunks and hands
every chunk but the first to the workers (`Dispatch`: a task per chunk), then works through
the chunks itself — the first, then from the last back, as workers take them from the front —
taking each one nobody holds. Whoever takes a chunk holds a PostgreSQL advisory lock on it
(key: the pass's random `run`, the chunk's index) for as long as it works, so no chunk is
worked twice at once, and a holder that dies lets go with its connection. A worker reports
its chunk's result to the pass by NOTIFY before it lets go. Then the pass takes every
chunk's lock once more, waiting for those still held, and does itself any chunk nobody
reported done (its holder died, failed, or never came). So a pass finishes with or without
workers (none started, the broker down, a single pool process busy with the pass itself),
and every added worker process takes chunks off the pass.

A worker's task that comes late does nothing. The pass holds (`run`, RUN_SLOT) for as long
as it runs, and workers probe it with a shared lock, so their probes never pass for the
pass; since the pass ends only after taking every chunk's lock, a worker holding a chunk's
lock that finds the pass alive reads in `done` whether this pass's chunk was finished.
Results are summed: a change is made once, under row locks, by whoever got there first,
and counted in that one's report.

How big a chunk is (`chunks_split`): when the pass is shared, PASS_CHUNKS of them when it is
small enough, so a pass of a few hundred HITs with news is shared by every process there is, each chunk no
smaller than its job's floor (a chunk costs a task, a transaction and a report) and no larger
than its ceiling (one transaction's rows): a paper-scale pass is many chunks of the ceiling.

Without PostgreSQL, inside a transaction (workers could not see its rows) or without a
dispatcher, the pass works every chunk itself.
"""

import json
import logging
import math
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import connection

logger = logging.getLogger(__name__)

RUN_SLOT = -1  # the second key of the lock the pass holds while it runs
CHANNEL = "salience_pass_{run}"
NOTIFY_LIMIT = 7900  # bytes: PostgreSQL refuses a NOTIFY payload of 8,000 or more


@dataclass(frozen=True)
class Chunk:
    run: int  # the pass's key: the first key of its advisory locks
    index: int
    ids: list[int]  # what the chunk's job works: HITs of a sync, tasks of a publish
    job: str = "sync"  # "sync" | "publish": which worker function takes it (crowd.tasks)


# Enqueue one task per chunk (crowd.tasks.chunks_dispatch); how many were enqueued.
Dispatch = Callable[[list[Chunk], datetime], int]
Work = Callable[[list[int]], dict]


@dataclass
class _Pass:
    run: int
    chunks: list[list[int]]
    work: Work
    results: dict[int, list[dict]] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)


def chunks_split(ids: list[int], *, floor: int, ceiling: int, shared: bool) -> list[list[int]]:
    """`ids` in order, in PASS_CHUNKS chunks of one size (the last may be shorter), but never
    below `floor` nor above `ceiling` a chunk (the ceiling wins when they cross). A pass that
    shares nothing (no dispatcher) goes in chunks of the ceiling: each chunk costs its own
    statements, and there is nobody to give the smaller ones to."""
    wanted = math.ceil(len(ids) / settings.PASS_CHUNKS) if shared else ceiling
    size = max(1, min(ceiling, max(floor, wanted)))
    return [ids[start : start + size] for start in range(0, len(ids), size)]


def chunks_work(
    *, chunks: list[list[int]], now: datetime, work: Work, dispatch: Dispatch | None, job: str = "sync"
) -> list[dict]:
    """Every chunk worked (`work(ids)`), by this process or by workers of `job`; every result."""
    shared = dispatch is not None and len(chunks) > 1
    if not shared or connection.vendor != "postgresql" or connection.in_atomic_block:
        return [work(chunk) for chunk in chunks]
    assert dispatch is not None
    state = _Pass(run=secrets.randbelow(2**31), chunks=chunks, work=work)
    with _listening(state.run), _locked(state.run, RUN_SLOT):
        handed = [Chunk(state.run, index, ids, job) for index, ids in enumerate(chunks)][1:]
        if dispatch(handed, now) == 0:
            return [work(chunk) for chunk in chunks]
        # The first chunk, then from the last back: workers take them from the front.
        for index in [0, *range(len(chunks) - 1, 0, -1)]:
            _try_work(state, index)
        # Then every chunk's lock once more: those held finish (or their holder dies), and no
        # worker holds one when the pass ends, so none works a chunk after its pass.
        for index in range(len(chunks)):
            with _locked(state.run, index, wait=True):
                _own_if_needed(state, index)
    return [result for index in range(len(chunks)) for result in state.results.get(index, [])]


def _try_work(state: _Pass, index: int) -> None:
    """Work the chunk unless someone holds it."""
    if not _try_lock(state.run, index):
        return
    try:
        _own_if_needed(state, index)
    finally:
        _unlock(state.run, index)


def _own_if_needed(state: _Pass, index: int) -> None:
    """With the chunk's lock held: work it here unless a worker reported it done."""
    _reports_read(state)
    if index in state.results:
        return
    if index in state.failed:
        logger.warning("chunk %d of the pass failed on a worker (%s): the pass does it", index, state.failed[index])
    state.results[index] = [state.work(state.chunks[index])]


def chunk_work(*, chunk: Chunk, work: Callable[[], dict], done: Callable[[], bool]) -> None:
    """A worker's share: the chunk, reported to its pass; nothing when someone holds the
    chunk, the pass is over, or someone finished the chunk (`done`). The chunk's lock comes
    first: while a worker holds it its pass cannot end, so what `done` reads is this pass's."""
    if not _try_lock(chunk.run, chunk.index):
        return
    try:
        if _pass_over(chunk.run):
            return
        if done():
            return
        try:
            result = work()
        except Exception as error:
            _notify(chunk, {"index": chunk.index, "error": str(error)[:1000]})
            raise
        _notify(chunk, {"index": chunk.index, "result": result})
    finally:
        _unlock(chunk.run, chunk.index)


# ---- PostgreSQL: advisory locks, LISTEN / NOTIFY -------------------------------------------------


def _try_lock(run: int, index: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [run, index])
        return bool(cursor.fetchone()[0])


def _pass_over(run: int) -> bool:
    """Whether the pass has let go of its lock on (`run`, RUN_SLOT). A shared lock probes it:
    workers probing at once never see each other's probe as the pass."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock_shared(%s, %s)", [run, RUN_SLOT])
        over = bool(cursor.fetchone()[0])
        if over:
            cursor.execute("SELECT pg_advisory_unlock_shared(%s, %s)", [run, RUN_SLOT])
    return over


def _unlock(run: int, index: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [run, index])


@contextmanager
def _locked(run: int, index: int, *, wait: bool = False) -> Iterator[None]:
    with connection.cursor() as cursor:
        if wait:
            cursor.execute("SELECT pg_advisory_lock(%s, %s)", [run, index])
        else:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [run, index])
            assert cursor.fetchone()[0], "a fresh run's key is nobody else's"
    try:
        yield
    finally:
        _unlock(run, index)


@contextmanager
def _listening(run: int) -> Iterator[None]:
    channel = CHANNEL.format(run=run)
    with connection.cursor() as cursor:
        cursor.execute(f'LISTEN "{channel}"')
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f'UNLISTEN "{channel}"')


def _notify(chunk: Chunk, message: dict) -> None:
    payload = json.dumps(message)
    if len(payload.encode()) > NOTIFY_LIMIT:
        payload = json.dumps({"index": chunk.index, "error": "the chunk's report is too long to send"})
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL.format(run=chunk.run), payload])


def _reports_read(state: _Pass) -> None:
    """The reports workers sent so far. A statement first: a NOTIFY committed before our
    lock was granted reaches us at the latest with the answer to the next statement."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    raw = connection.connection
    raw.poll()
    channel = CHANNEL.format(run=state.run)
    while raw.notifies:
        notice = raw.notifies.pop(0)
        if notice.channel != channel:
            continue
        message = json.loads(notice.payload)
        if "result" in message:
            state.results.setdefault(message["index"], []).append(message["result"])
        else:
            state.failed[message["index"]] = message["error"]
