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
taken by the next holder that asks — or by a holder short of its share, which tries for the
free ones (one round trip) each time a call of its ends while all it holds are busy. So adding processes adds calls in flight up to the
bound, and never beyond it.

Retries. botocore retries throttling (ThrottlingException) and service faults with
exponential back-off and jitter inside the one call (crowd.marketplaces.mturk.client), holding
its slot; a call that still fails stops the run: no new call starts, the calls in flight finish,
and the caller reports the failure (the Celery task retries it later with back-off).
"""

import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
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
    with _slots(channel, wanted) as slots:
        if wanted == 1:
            return _in_turn(items, call, done, stop)
        return _in_threads(items, call, done, stop, slots=slots)


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


def _in_threads(items: Sequence[Item], call: Callable[[Item], Result], done, stop, *, slots: "Slots") -> list[Item]:
    """As many calls in flight as slots held; a holder short of its share takes slots let go
    by others as its calls end (so a late holder does not finish its items on fewer)."""
    waiting = list(reversed(items))
    stopped = False
    failure: BaseException | None = None
    with ThreadPoolExecutor(max_workers=slots.wanted, thread_name_prefix="marketplace-call") as pool:
        flying: set[Future] = set()
        while flying or (waiting and not stopped):
            while waiting and not stopped and len(flying) < slots.held:
                flying.add(pool.submit(_one, waiting.pop(), call))
            if waiting and not stopped and slots.held < slots.wanted:  # every slot held is busy
                slots.more()
                while waiting and len(flying) < slots.held:
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


@dataclass
class Slots:
    """The slots a holder has (`held`, at least one) of the `wanted` it may use; `more()` takes
    any let go since, up to `wanted`, without waiting (in the thread that took the first)."""

    wanted: int
    taken: list[int]
    take_more: Callable[[], None]

    @property
    def held(self) -> int:
        return len(self.taken)

    def more(self) -> None:
        self.take_more()


@contextmanager
def _slots(channel: str, wanted: int) -> Iterator[Slots]:
    """Up to `wanted` of the channel's slots, at least one (waiting for it)."""
    bound = channel_policy(channel).concurrent_calls()
    if connection.vendor == "postgresql":
        with _advisory_slots(slot_key(channel), bound, wanted) as slots:
            yield slots
        return
    with _local_guard:
        semaphore = _local_slots.setdefault(channel, threading.BoundedSemaphore(bound))
    taken: list[int] = []

    def take_more() -> None:
        while len(taken) < wanted and semaphore.acquire(blocking=False):
            taken.append(len(taken))

    try:
        semaphore.acquire()
        taken.append(0)
        take_more()
        yield Slots(wanted, taken, take_more)
    finally:
        for _ in taken:
            semaphore.release()


@contextmanager
def _advisory_slots(key: int, bound: int, wanted: int) -> Iterator[Slots]:
    held: list[int] = []  # filled as each lock is taken, so a failure half-way lets go of them all

    def take_more() -> None:
        """Every free slot tried in one round trip; any beyond `wanted` let go at once."""
        candidates = [slot for slot in range(bound) if slot not in held]
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT slot FROM unnest(%s::int[]) AS slot WHERE pg_try_advisory_lock(%s, slot)", [candidates, key]
            )
            taken = [row[0] for row in cursor.fetchall()]
            keep = max(0, wanted - len(held))
            held.extend(taken[:keep])
            for slot in taken[keep:]:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [key, slot])

    try:
        take_more()
        if not held:
            with connection.cursor() as cursor:
                slot = _slot_to_wait_for(cursor, key, bound)
                cursor.execute("SELECT pg_advisory_lock(%s, %s)", [key, slot])
            held.append(slot)
            take_more()
        yield Slots(wanted, held, take_more)
    finally:
        with connection.cursor() as cursor:
            for slot in held:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [key, slot])


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
