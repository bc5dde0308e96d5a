"""Marketplace calls in parallel, bounded per channel across the whole deployment.

Publishing (one CreateHIT per HIT) and approvals (one ApproveAssignment per assignment on
MTurk) are many small remote calls whose time is mostly waiting for the marketplace. A
process working a chunk of them (crowd.work.chunks) makes up to
MARKETPLACE_CALLS_PER_PROCESS at once, in threads that make only the remote calls: every
database read and write stays in the calling thread, in its transactions.

The bound. A channel's policy says how many of its calls may be in flight at once over every
process and machine (`ChannelPolicy.concurrent_calls`; MTurk: MTURK_CONCURRENT_CALLS). Each
call in flight holds one of that many *slots*: on PostgreSQL a session advisory lock
(key: the channel's, the slot's number) taken by the calling thread's connection for every
thread it starts, and let go when its calls are done, or when its process dies with the
connection; elsewhere (SQLite: one process) a semaphore of the process. A holder that finds
no slot free blocks on one (`pg_advisory_lock`, no polling): the slot the fewest others wait
for, so waiters spread over the holders; it has that slot the moment its holder lets it go
(or dies), then takes whichever others are free at that moment, up to what it wants. It
waits for its own slot only, not the first of any: a slot let go that nobody waits for is
taken by the next holder that asks. So adding processes adds calls in flight up to the
bound, and never beyond it.

Retries. botocore retries throttling (ThrottlingException) and service faults with
exponential back-off and jitter inside the one call (crowd.marketplaces.mturk.client), holding
its slot; a call that still fails stops the run: no new call starts, the calls in flight finish,
and the caller reports the failure (the Celery task retries it later with back-off).
"""

import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

from django.conf import settings
from django.db import connection

from crowd.marketplaces.base import MarketplaceError, MarketplaceUnavailable, OutcomeUnknown
from crowd.marketplaces.registry import channel_policy

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass(frozen=True)
class Outcome(Generic[Item, Result]):
    """One item's call: its result, or the marketplace error it ended with."""

    item: Item
    result: Result | None = None
    error: MarketplaceError | None = None


def stops_run(error: MarketplaceError) -> bool:
    """A failure after which no new call starts: the marketplace is not answering (or its
    answer may hide an effect); a refusal of one item lets the others go on."""
    return isinstance(error, (MarketplaceUnavailable, OutcomeUnknown))


def calls_run(
    *,
    channel: str,
    items: Sequence[Item],
    call: Callable[[Item], Result],
    done: Callable[[Outcome[Item, Result]], None],
    stop: Callable[[MarketplaceError], bool] = stops_run,
) -> list[Item]:
    """`call(item)` for each item (remote calls only: no database), at most the channel's
    bound in flight deployment-wide and MARKETPLACE_CALLS_PER_PROCESS from this process;
    `done(outcome)` in this thread as each call ends, in the order they end. A MarketplaceError
    is an outcome; after one that `stop` says ends the run no new call starts. Any other
    exception stops the run too and is raised once the calls in flight are done. The items
    whose call never started."""
    wanted = min(len(items), settings.MARKETPLACE_CALLS_PER_PROCESS, channel_policy(channel).concurrent_calls())
    if wanted <= 0:
        return list(items)
    with _slots(channel, wanted) as held:
        if held == 1:
            return _in_turn(items, call, done, stop)
        return _in_threads(items, call, done, stop, threads=held)


def _one(item: Item, call: Callable[[Item], Result]) -> Outcome[Item, Result]:
    try:
        return Outcome(item, result=call(item))
    except MarketplaceError as error:
        return Outcome(item, error=error)


def _in_turn(items: Sequence[Item], call: Callable[[Item], Result], done, stop) -> list[Item]:
    """One call after the other, in this thread (a bound or a share of one)."""
    for position, item in enumerate(items):
        outcome = _one(item, call)
        done(outcome)
        if outcome.error is not None and stop(outcome.error):
            return list(items[position + 1 :])
    return []


def _in_threads(items: Sequence[Item], call: Callable[[Item], Result], done, stop, *, threads: int) -> list[Item]:
    waiting = list(reversed(items))
    stopped = False
    failure: BaseException | None = None
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="marketplace-call") as pool:
        flying: set[Future] = set()
        while flying or (waiting and not stopped):
            while waiting and not stopped and len(flying) < threads:
                flying.add(pool.submit(_one, waiting.pop(), call))
            finished, flying = wait(flying, return_when=FIRST_COMPLETED)
            for future in finished:
                try:
                    outcome = future.result()
                    done(outcome)
                except BaseException as error:  # a bug or a crash: stop, raise when the rest landed
                    failure = failure or error
                    stopped = True
                    continue
                if outcome.error is not None and stop(outcome.error):
                    stopped = True
    if failure is not None:
        raise failure
    return list(reversed(waiting))


# ---- Slots -----------------------------------------------------------------------------------------

_local_slots: dict[str, threading.BoundedSemaphore] = {}
_local_guard = threading.Lock()


def slot_key(channel: str) -> int:
    """The first key of a channel's slot locks (a positive int4 of its name)."""
    return zlib.crc32(f"salience marketplace calls {channel}".encode()) & 0x7FFFFFFF


@contextmanager
def _slots(channel: str, wanted: int) -> Iterator[int]:
    """Up to `wanted` of the channel's slots, at least one (waiting for it); how many."""
    bound = channel_policy(channel).concurrent_calls()
    if connection.vendor == "postgresql":
        with _advisory_slots(slot_key(channel), bound, wanted) as held:
            yield held
        return
    with _local_guard:
        semaphore = _local_slots.setdefault(channel, threading.BoundedSemaphore(bound))
    taken = 0
    try:
        semaphore.acquire()
        taken = 1
        while taken < wanted and semaphore.acquire(blocking=False):
            taken += 1
        yield taken
    finally:
        for _ in range(taken):
            semaphore.release()


@contextmanager
def _advisory_slots(key: int, bound: int, wanted: int) -> Iterator[int]:
    held: list[int] = []  # filled as each lock is taken, so a failure half-way lets go of them all
    try:
        with connection.cursor() as cursor:
            _free_slots_take(cursor, key, range(bound), wanted, held=held)
            if not held:
                slot = _slot_to_wait_for(cursor, key, bound)
                cursor.execute("SELECT pg_advisory_lock(%s, %s)", [key, slot])
                held.append(slot)
                others = [other for other in range(bound) if other != slot]
                _free_slots_take(cursor, key, others, wanted, held=held)
        yield len(held)
    finally:
        with connection.cursor() as cursor:
            for slot in held:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [key, slot])


def _free_slots_take(cursor, key: int, slots: Iterable[int], wanted: int, *, held: list[int]) -> None:
    """Those of `slots` that no one holds, taken without waiting into `held` until it has `wanted`."""
    for slot in slots:
        if len(held) >= wanted:
            return
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [key, slot])
        if cursor.fetchone()[0]:
            held.append(slot)


def _slot_to_wait_for(cursor, key: int, bound: int) -> int:
    """The slot the fewest sessions of this database wait for (ties: the lowest number)."""
    cursor.execute(
        "SELECT objid::int, count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
        "AND classid = %s::oid AND objsubid = 2 "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) GROUP BY objid",
        [key],
    )
    waiting = dict(cursor.fetchall())
    return min(range(bound), key=lambda slot: (waiting.get(slot, 0), slot))
