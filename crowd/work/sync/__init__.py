"""Assignment sync: what the marketplace holds, reconciled with what our HIT pages stored.

A pass (`assignments_sync`; the loop's one owner, ranking.workflow, runs one at a time)
visits only the open HITs with news (`hits_with_news`):

* an answer of ours is pending: our page stored it, its channel has not confirmed it yet;
* work is due for approval (`approval_due`, below);
* the HIT's deadlines passed (it expired, and the last accepted assignment's deadline with
  it): the sweep that collects it;
* the marketplace lists the HIT as reviewable — every slot in, or expired with nothing in
  flight (MTurk's ListReviewableHITs; the session channels have none) — and we hold fewer
  confirmed answers than it has slots: the marketplace holds answers our page never stored.

The HITs go in chunks (crowd.work.chunks.chunks_split: PASS_CHUNKS of them, at least
CHUNK_FLOOR and at most CHUNK_SIZE HITs each; SHARED_CHUNK_SIZE when workers share the pass),
which the pass and every Celery worker take (crowd.work.chunks): adding workers shortens a
pass, a pass of a few dozen HITs too. For each chunk (`hits_sync`):

1. Each HIT's assignments are listed at its marketplace (`assignments_by_hit`: MTurk one
   ListAssignmentsForHIT per HIT, every status and page, a few at once within the channel's
   bound, crowd.work.calls; a session channel one read for the chunk), but for a settled
   HIT (every slot holds an answer its channel confirmed, none pending: nothing more to list;
   crowd.work.sync.chunk). No lock is held across a remote call.
2. In one transaction the chunk's HIT rows, then our answers to their tasks, are locked (a
   query each), and each listed assignment is matched with our answer by (assignment id,
   worker): found → `verified`; missing (the worker's post to us failed) → MTurk's answer XML
   is parsed and stored through the HIT page's own `crowd.hit_page.store.answer_submit`, then
   marked `recovered`; approved or rejected at the marketplace (auto-approval, the requester
   website) → recorded, with its ledger entry. Our answers still `pending` that the
   marketplace does not list become `unverified` (never counted) once the HIT is collected
   or their own deadline and LISTING_GRACE have passed: a forged post, or a worker who never
   submitted to MTurk. The writes are bulk: a few statements for the chunk.
3. Approval policy (`approval_due`): a submitted, confirmed assignment is approved once
   quality control has run for its worker after it was submitted
   (WorkerQuality.computed_at > submitted_at), or when the marketplace's auto-approval is
   less than the channel's approval margin away (its policy's: MTurk
   MTURK_APPROVAL_MARGIN_SECONDS; the session channels approve on our own clock), whichever
   comes first. One marketplace call each, a few at once within the channel's bound
   (crowd.work.calls), then the outcomes are recorded together.
4. A HIT is *collected* when all its assignments are in (or it expired and the last
   accepted assignment's deadline passed) and no answer of ours is pending; *complete*
   when it is collected and all its work is reviewed. A complete HIT releases the budget
   of slots nobody took, is deleted at the marketplace, and is not synced again.
5. The report (`crowd.work.sync.report.SyncReport`) says which campaigns and topics had HITs synced; sync enqueues nothing of
   another app's. What happens next (quality control, the pipeline, publishing) is the
   loop's owner's: `ranking.workflow`.

Remote calls come first; the database changes follow in their own transactions, so a failed
call leaves nothing half-written, and a transient failure (MarketplaceUnavailable) aborts
the pass for the Celery task to retry; what was synced so far stays.

The package, by what it does: this module runs a pass and its chunks; `news` selects the HITs
with news and sweeps stray pending answers; `chunk` syncs one chunk; `listing` matches a
chunk's listed assignments with our answers and applies them (point 2); `approvals` is the
approval policy (point 3); `completion` marks HITs complete and deletes them (point 4). The
rule of a collected HIT is a selector of its own (crowd.work.status), which ranking reads.
"""

from collections.abc import Iterable
from datetime import datetime

from django.utils import timezone

from crowd.models import HIT
from crowd.work.chunks import Chunk, Dispatch, chunk_work, chunks_split, chunks_work
from crowd.work.sync.chunk import hits_sync
from crowd.work.sync.news import hits_with_news, pending_sweep
from crowd.work.sync.report import SyncReport

# HITs per chunk at most: one transaction for their rows, one Celery task when the pass is shared.
CHUNK_SIZE = 100
# At most, when workers share the pass: a worker process goes back to its queues after each
# chunk, where a step request (the event path) waits for it. A chunk approving 86 HITs took
# 4-7 s, and the next batch of three topics waited behind two of them (e2e.py at 3 x 1,750:
# idle p95 9.7 s); 25 HITs, up to 125 approvals, about a second.
SHARED_CHUNK_SIZE = 25
# HITs per chunk at least (the last may have fewer): ~7 marketplace calls each when approving.
CHUNK_FLOOR = 10
REPORTED_ERRORS = 20  # per chunk; the rest are counted (a worker's report fits in a NOTIFY)


def assignments_sync(
    *,
    hit_ids: Iterable[int] | None = None,
    now: datetime | None = None,
    dispatch: Dispatch | None = None,
    reviews: bool = True,
) -> SyncReport:
    """Sync the open HITs with news (or exactly the open ones in `hit_ids`); see the module
    docstring. With `dispatch`, Celery workers take chunks too (crowd.work.chunks). Without
    `reviews`, the answers are confirmed only (points 1 and 2): no approval, no completion,
    which the next pass makes (the event path's confirmation: a step needs neither)."""
    now = now or timezone.now()
    report = SyncReport()
    open_hits = HIT.objects.filter(complete=False, deleted=False)
    if hit_ids is None:
        visit = hits_with_news(now=now, report=report)
    else:
        visit = list(open_hits.filter(pk__in=list(hit_ids)).order_by("pk").values_list("pk", flat=True))
    shared = dispatch is not None
    ceiling = SHARED_CHUNK_SIZE if shared else CHUNK_SIZE
    chunks = chunks_split(visit, floor=CHUNK_FLOOR, ceiling=ceiling, shared=shared)
    for result in chunks_work(
        chunks=chunks, now=now, work=lambda chunk: _chunk_sync(chunk, now, reviews), dispatch=dispatch, job="sync"
    ):
        report.add(SyncReport.from_dict(result))
    if hit_ids is None:
        report.unverified += pending_sweep(now=now)
    return report


def chunk_sync(*, chunk: Chunk, now: datetime) -> None:
    """A Celery worker's share of a pass (crowd.tasks.sync_chunk): the chunk's HITs, unless
    the pass is over or someone took the chunk; done once its HITs carry the pass's time."""
    chunk_work(
        chunk=chunk,
        work=lambda: {**_chunk_sync(chunk.ids, now), "chunks_shared": 1},
        done=lambda: HIT.objects.filter(pk__in=chunk.ids, last_synced_at=now).exists(),
    )


def _chunk_sync(hit_ids: list[int], now: datetime, reviews: bool = True) -> dict:
    report = hits_sync(hit_ids=hit_ids, now=now, reviews=reviews)
    if len(report.errors) > REPORTED_ERRORS:
        more = len(report.errors) - REPORTED_ERRORS
        report.errors = [*report.errors[:REPORTED_ERRORS], f"... and {more} more (see the log)"]
    return report.as_dict()
