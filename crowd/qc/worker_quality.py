"""Worker quality control in the app: recompute every worker's figures for a campaign from
its counted labels, store them, record each change of status, and let an admin override.

The statistics are the pure core's (`crowd.quality`, after Falke & Gurevych 2017); this
module stores and audits them, on the labels `crowd.qc.counted` reads (what aggregation
counts). Excluded workers' labels stay in the database; aggregation leaves out
`excluded_worker_ids`. The crowd-level statistics of the report are stored by the same job
(`crowd.qc.statistics`). What rests on the Likert labels alone is kept between runs while
they do not change (`crowd.qc.likert_part`), so a run in the comparison rounds reads the
votes only; `campaign_quality_recompute` recomputes everything, and always stores the same.

What quality control needs before it excludes anyone is a campaign setting: `qc_min_items`
shared Likert items, `qc_min_traps` trap answers, `qc_min_orderings` orderings (an ordering
of five is ten pairwise votes but one judgement). Speeders are flagged, never excluded.
"""

import logging
from collections import defaultdict
from datetime import datetime
from functools import cache

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from annotation.models import Batch, Campaign, Proposition
from config.errors import ApplicationError, NotFound
from crowd.models import Assignment, WorkerBlock, WorkerDecision, WorkerQuality
from crowd.qc.counted import CountedLabels, CountedVotes, campaign_traps, counted_likert, counted_votes
from crowd.qc.likert_part import (
    NO_LIKERT,
    SPEEDER_FRACTION,
    SPEEDER_MIN_HITS,
    LikertPart,
    likert_inputs,
    likert_part_compute,
    likert_part_current,
    likert_part_store,
)
from crowd.qc.policy import TRAP_FAIL_AT, campaign_qc_policy
from crowd.qc.statistics import statistics_refresh
from crowd.qc.vote_part import VotePart, vote_part_current, vote_part_of
from crowd.quality import HitTimes, time_report
from crowd.work.review import assignment_reject, worker_block, worker_in_campaign

logger = logging.getLogger(__name__)


class LikertReads:
    """Counted Likert labels read by quality control in this process (a work counter: tests
    and benchmarks/e2e.py compare it with the labels a round brought)."""

    labels = 0


LIKERT_READS = LikertReads()


COMPUTED_FIELDS = [
    "labels",
    "items",
    "loo_r",
    "traps_seen",
    "traps_failed",
    "obvious_traps_seen",
    "obvious_traps_failed",
    "subtle_traps_seen",
    "subtle_traps_failed",
    "votes",
    "comparison_agreement",
    "orderings",
    "untouched_orderings",
    "likert_seconds",
    "comparison_seconds",
    "speeder",
    "computed_status",
    "computed_reason",
    "computed_at",
]
FIGURES = [name for name in COMPUTED_FIELDS if name != "computed_at"]  # what a run computes but its time
STATUS = FIGURES.index("computed_status")
OVERRIDE_ACTIONS = {
    WorkerQuality.Status.OK: "override_included",
    WorkerQuality.Status.EXCLUDED: "override_excluded",
    "": "override_cleared",
}
REJECT_FEEDBACK = (
    'Every attention-check statement in this HIT (such as "This sentence is not important") '
    "was rated as important, so the answers cannot be used."
)


def campaign_quality_refresh(*, campaign_id: int, likert_current: bool = True, statistics: bool = True) -> set[int]:
    """Recompute and store every worker's quality figures for the campaign; returns the ids
    of the excluded workers (overrides applied). Records a WorkerDecision for each worker
    whose computed status changed, and schedules the campaign's optional policies (block
    excluded workers, reject assignments that failed every trap) for after commit. Then
    stores the crowd-level statistics the report pages show (crowd.qc.statistics).

    The workers' figures are computed under a lock on the campaign row, so concurrent
    refreshes queue up; the statistics after it, so overrides need not wait for them.

    Incremental where the math allows: what rests on the Likert labels alone (rules 1 and
    2, every worker's Likert figures; crowd.qc.likert_part) is kept from the last run while
    the watermark of its inputs is unchanged, and the labels are not read. The vote rules'
    counts are sums over pairs, so each topic's are kept (crowd.qc.vote_part) and a run reads
    the votes of the topics whose votes changed only (an event's: its own topic's); the
    rules then rank every worker from the sums, as each cap needs.

    With `likert_current` False (the loop, while no topic's Likert round is to be scored),
    the Likert part is also kept while Likert labels stream in, until they double
    (crowd.qc.likert_part.likert_part_current): a round's QC work stays linear in its labels,
    and the figures say when they were computed.

    With `statistics` False (the event path, whose step waits for this), the crowd-level
    statistics are left to the next pass of the loop: they are the report's (the bootstrap
    stability curve was two thirds of an event's QC at 3 × 1,750 propositions), and no step
    reads them; the workers' figures and exclusions are stored as always."""
    return _refresh(campaign_id, full=False, likert_current=likert_current, statistics=statistics)


def campaign_quality_recompute(*, campaign_id: int) -> set[int]:
    """`campaign_quality_refresh` from every label, whatever was kept: what the incremental
    refresh must always equal."""
    return _refresh(campaign_id, full=True)


def _refresh(campaign_id: int, *, full: bool, likert_current: bool = True, statistics: bool = True) -> set[int]:
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().filter(pk=campaign_id).first()
        if campaign is None:
            raise NotFound(f"There is no campaign {campaign_id}.")
        traps = campaign_traps(campaign_id=campaign_id)
        inputs = likert_inputs(campaign, traps)  # before the labels: a label after it shows next time
        part = None if full else likert_part_current(campaign_id, inputs, current=likert_current, scopes=statistics)
        likert = None
        if part is None:
            likert = counted_likert(campaign_id=campaign_id, traps=traps)
            LIKERT_READS.labels += len(likert.ratings) + len(likert.trap_labels)
            part = likert_part_compute(campaign, likert, inputs)
        policy = campaign_qc_policy(campaign)
        votes: CountedVotes | None
        if full:
            votes = counted_votes(campaign_id=campaign_id)
            vote_part = vote_part_of(votes, part.reasons, policy)
        else:
            vote_part, votes = vote_part_current(campaign, part.reasons, policy, every_topic=statistics)
        kept = part.watermark != inputs.watermark  # labels came since it was computed
        rows, reasons = _worker_rows(campaign, part, vote_part, as_of=part.computed_at if kept else None)
        excluded = _quality_rows_write(campaign, rows, reasons)
        _block_policy_schedule(campaign)
        _reject_policy_schedule(campaign)
        # Stored before the lock goes, so a refresh queued behind this one keeps it instead of
        # reading the labels again (three topics' Likert rounds ending together queue three).
        stored = likert is not None and likert_part_store(campaign_id, part)
    if votes is None:  # not `statistics`
        return excluded
    labels = cache(lambda: likert or counted_likert(campaign_id=campaign_id, traps=traps))
    statistics_refresh(
        campaign=campaign,
        likert=part,
        votes=votes,
        labels=labels,
        workers=rows,
        excluded=excluded,
        recompute=full,
        likert_counted=inputs.labels,
    )
    if likert is not None and not stored:  # the campaign's first run: its statistics row is new
        likert_part_store(campaign_id, part)
    return excluded


def _quality_rows(campaign: Campaign, data: CountedLabels) -> tuple[list[WorkerQuality], dict[int, str]]:
    """One unsaved WorkerQuality per worker with labels or votes, and the exclusion reasons,
    from every counted label."""
    part = likert_part_compute(campaign, data.likert_part, "")
    return _worker_rows(campaign, part, vote_part_of(data.votes_part, part.reasons, campaign_qc_policy(campaign)))


def _worker_rows(
    campaign: Campaign, part: LikertPart, votes: VotePart, as_of: datetime | None = None
) -> tuple[list[WorkerQuality], dict[int, str]]:
    """One unsaved WorkerQuality per worker with labels or votes, and the exclusion reasons:
    rules 3 and 4 on the votes after the Likert part's rules 1 and 2 (`votes`, computed on them)."""
    reasons, agreement = votes.reasons, votes.agreement
    # A kind's medians rest on its own HITs: the Likert ones came with the Likert part.
    times = time_report(votes.times, fraction=SPEEDER_FRACTION, min_hits=SPEEDER_MIN_HITS)
    labelled = {worker for worker, figures in part.workers.items() if figures.labels}
    # A kept Likert part (labels came since) is as of its computation: so are the rows, so
    # approvals wait for a computation that saw the worker's labels.
    now = as_of or timezone.now()
    rows = []
    for worker in sorted(labelled | set(votes.votes_per_worker)):
        likert = part.workers.get(worker, NO_LIKERT)
        rows.append(
            WorkerQuality(
                campaign=campaign,
                worker_id=worker,
                labels=likert.labels,
                items=likert.items,
                loo_r=likert.loo_r,
                traps_seen=likert.traps[0],
                traps_failed=likert.traps[1],
                obvious_traps_seen=likert.obvious[0],
                obvious_traps_failed=likert.obvious[1],
                subtle_traps_seen=likert.subtle[0],
                subtle_traps_failed=likert.subtle[1],
                votes=votes.votes_per_worker[worker],
                comparison_agreement=agreement.get(worker),
                orderings=votes.orderings[worker] + votes.untouched_orderings[worker],
                untouched_orderings=votes.untouched_orderings[worker],
                likert_seconds=likert.seconds,
                comparison_seconds=_median(times.workers.get(worker, {}).get(Batch.Kind.COMPARISON)),
                speeder=likert.speeder or worker in times.speeders,
                computed_status=WorkerQuality.Status.EXCLUDED if worker in reasons else WorkerQuality.Status.OK,
                computed_reason=reasons.get(worker, ""),
                computed_at=now,
            )
        )
    return rows, reasons


def _median(times: HitTimes | None) -> float | None:
    return times.median if times else None


def _quality_rows_write(campaign: Campaign, rows: list[WorkerQuality], reasons: dict[int, str]) -> set[int]:
    """Upsert the rows whose figures changed and stamp the others with this run's time (an
    UPDATE per time: approvals read it), reset workers who no longer have counted labels,
    record each change of computed status. Returns the excluded worker ids (overrides applied).
    An event changes the figures of its topic's workers: the campaign's others are stamped,
    not written again (600 rows at 30 topics × 1,750 propositions)."""
    stored = {
        worker: tuple(figures)
        for worker, *figures in WorkerQuality.objects.filter(campaign=campaign).values_list("worker_id", *FIGURES)
    }
    present = {row.worker_id for row in rows}
    rows += [
        WorkerQuality(campaign=campaign, worker_id=worker, computed_at=timezone.now())
        for worker in sorted(set(stored) - present)
    ]
    changed: list[WorkerQuality] = []
    unchanged: dict[datetime | None, list[int]] = defaultdict(list)  # run's time -> workers
    for row in rows:
        if stored.get(row.worker_id) == tuple(getattr(row, name) for name in FIGURES):
            unchanged[row.computed_at].append(row.worker_id)
        else:
            changed.append(row)
    WorkerQuality.objects.bulk_create(
        changed,
        batch_size=1000,
        update_conflicts=True,
        unique_fields=["campaign", "worker"],
        update_fields=COMPUTED_FIELDS,
    )
    for stamp, workers in unchanged.items():
        WorkerQuality.objects.filter(campaign=campaign, worker_id__in=workers).update(computed_at=stamp)
    decisions = []
    for row in rows:
        was = stored[row.worker_id][STATUS] if row.worker_id in stored else WorkerQuality.Status.OK
        if row.computed_status == was:
            continue
        if row.computed_status == WorkerQuality.Status.EXCLUDED:
            decisions.append(
                WorkerDecision(
                    campaign=campaign, worker_id=row.worker_id, action="excluded", reason=reasons[row.worker_id]
                )
            )
        else:
            decisions.append(
                WorkerDecision(
                    campaign=campaign,
                    worker_id=row.worker_id,
                    action="included",
                    reason="No exclusion rule applies any longer."
                    if row.worker_id in present
                    else "No counted labels or votes left in this campaign.",
                )
            )
    WorkerDecision.objects.bulk_create(decisions)
    return excluded_worker_ids(campaign.pk)


def worker_quality_override(*, campaign_id: int, worker_id: int, status: str, reason: str, user) -> WorkerQuality:
    """Set (status "ok" or "excluded") or clear (status "") an admin's decision on a worker,
    which takes precedence over the computed one. The reason is required and recorded with
    the user in a WorkerDecision. The campaign's block policy applies to the result."""
    if status not in OVERRIDE_ACTIONS:
        raise ApplicationError(f"{status!r} is not a status: use ok, excluded or an empty one.", code="invalid_status")
    reason = reason.strip()
    if not reason:
        raise ApplicationError("Give a reason for the override: it is recorded with your name.", code="reason_required")
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().filter(pk=campaign_id).first()
        if campaign is None:
            raise NotFound(f"There is no campaign {campaign_id}.")
        worker_in_campaign(worker_id=worker_id, campaign_id=campaign_id)
        quality, _ = WorkerQuality.objects.get_or_create(campaign=campaign, worker_id=worker_id)
        quality.override_status, quality.override_reason = status, reason if status else ""
        quality.save(update_fields=["override_status", "override_reason"])
        WorkerDecision.objects.create(
            campaign=campaign, worker_id=worker_id, action=OVERRIDE_ACTIONS[status], reason=reason, decided_by=user
        )
        _block_policy_schedule(campaign)
    return quality


def excluded_worker_ids(campaign_id: int) -> set[int]:
    """The workers whose labels aggregation leaves out: excluded by quality control unless
    an admin included them, or excluded by an admin."""
    return set(WorkerQuality.objects.excluded().filter(campaign_id=campaign_id).values_list("worker_id", flat=True))


def _block_policy_schedule(campaign: Campaign) -> None:
    """With the campaign's block policy on (off by default): after commit, block at the
    marketplace every excluded worker its owner has not blocked yet. Asking again at every refresh makes
    a failed call heal on the next one."""
    if not campaign.qc_block_excluded:
        return
    workers = list(
        WorkerQuality.objects.excluded()
        .filter(campaign=campaign, worker__blocked=False)
        .exclude(worker_id__in=WorkerBlock.objects.reaching(campaign).values("worker_id"))
        .order_by("worker_id")
        .values_list("worker_id", flat=True)
    )
    if workers:
        reason = f"Excluded by quality control in campaign {campaign.slug}."
        transaction.on_commit(
            lambda: _each(
                "block worker",
                workers,
                lambda pk: worker_block(worker_id=pk, campaign_id=campaign.pk, reason=reason, decided_by=None),
            )
        )


def _reject_policy_schedule(campaign: Campaign) -> None:
    """With the campaign's reject policy on (off by default): after commit, reject the
    submitted assignments that failed every trap they carried."""
    if not campaign.qc_reject_failed_traps:
        return
    assignments = failed_trap_assignment_ids(campaign_id=campaign.pk)
    if assignments:
        transaction.on_commit(
            lambda: _each(
                "reject assignment",
                assignments,
                lambda pk: assignment_reject(assignment_id=pk, reason=REJECT_FEEDBACK, decided_by=None),
            )
        )


def failed_trap_assignment_ids(*, campaign_id: int) -> list[int]:
    """Submitted (not yet reviewed) assignments the marketplace confirmed, with at least one
    trap label, every one of which scored ≥ TRAP_FAIL_AT."""
    on_trap = Q(likert_labels__proposition__trap_kind__in=[Proposition.TrapKind.OBVIOUS, Proposition.TrapKind.SUBTLE])
    return list(
        Assignment.objects.confirmed()
        .filter(task__batch__topic__campaign_id=campaign_id, status=Assignment.Status.SUBMITTED)
        .annotate(
            traps=Count("likert_labels", filter=on_trap),
            passed=Count("likert_labels", filter=on_trap & Q(likert_labels__score__lt=TRAP_FAIL_AT)),
        )
        .filter(traps__gt=0, passed=0)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def _each(what: str, ids: list[int], action) -> None:
    """Apply a marketplace action to each id; one refusal doesn't stop the others (the
    next refresh asks again)."""
    for pk in ids:
        try:
            action(pk)
        except ApplicationError as error:
            logger.warning("quality policy: %s %s failed: %s", what, pk, error.message)
