"""Worker quality control in the app: recompute every worker's figures for a campaign from
its counted labels, store them, record each change of status, and let an admin override.

The statistics are the pure core's (`crowd.quality`, after Falke & Gurevych 2017); this
module stores and audits them, on the labels `crowd.qc.counted` reads (what aggregation
counts). Excluded workers' labels stay in the database; aggregation leaves out
`excluded_worker_ids`. The crowd-level statistics of the report are stored by the same job
(`crowd.qc.statistics`).

What quality control needs before it excludes anyone is a campaign setting: `qc_min_items`
shared Likert items, `qc_min_traps` trap answers, `qc_min_orderings` orderings (an ordering
of five is ten pairwise votes but one judgement). Speeders are flagged, never excluded.
"""

import logging
from collections import Counter
from operator import itemgetter

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from annotation.models import Batch, Campaign, Proposition
from config.errors import ApplicationError, NotFound
from crowd.models import Assignment, Worker, WorkerDecision, WorkerQuality
from crowd.qc.counted import CountedLabels, counted_labels
from crowd.qc.statistics import statistics_refresh
from crowd.quality import (
    HitTimes,
    TrapStats,
    comparison_agreement,
    exclusion_reasons,
    leave_one_out_details,
    time_report,
    trap_report,
)
from crowd.work.review import assignment_reject, worker_block

logger = logging.getLogger(__name__)

TRAP_FAIL_AT = 3  # a trap rated "moderately important" (3) or higher is failed
LOO_FLOOR = 0.5  # leave-one-out r at or above this never excludes a worker
AGREEMENT_FLOOR = 0.6  # nor does a comparison agreement at or above this
MAX_UNTOUCHED_SHARE = 0.5  # more than this share of a worker's orderings untouched excludes them

SPEEDER_FRACTION = 1 / 3  # a worker's median time per HIT below this share of the campaign's
SPEEDER_MIN_HITS = 3  # over at least this many HITs of the kind

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
OVERRIDE_ACTIONS = {
    WorkerQuality.Status.OK: "override_included",
    WorkerQuality.Status.EXCLUDED: "override_excluded",
    "": "override_cleared",
}
REJECT_FEEDBACK = (
    'Every attention-check statement in this HIT (such as "This sentence is not important") '
    "was rated as important, so the answers cannot be used."
)


def campaign_quality_refresh(*, campaign_id: int) -> set[int]:
    """Recompute and store every worker's quality figures for the campaign; returns the ids
    of the excluded workers (overrides applied). Records a WorkerDecision for each worker
    whose computed status changed, and schedules the campaign's optional policies (block
    excluded workers, reject assignments that failed every trap) for after commit. Then
    stores the crowd-level statistics the report pages show (crowd.qc.statistics).

    The workers' figures are computed under a lock on the campaign row, so concurrent
    refreshes queue up; the statistics after it, so overrides need not wait for them.

    Not incremental per worker: a new label moves the leave-one-out r of every worker who
    rated the same item, and the cap ranks all workers against all labels, so recomputing
    only the workers with new labels would leave the others' figures and the exclusions
    wrong. The costly crowd-level statistics are incremental per topic instead."""
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().filter(pk=campaign_id).first()
        if campaign is None:
            raise NotFound(f"There is no campaign {campaign_id}.")
        data = counted_labels(campaign_id=campaign_id)
        rows, reasons = _quality_rows(campaign, data)
        excluded = _quality_rows_write(campaign, rows, reasons)
        _block_policy_schedule(campaign)
        _reject_policy_schedule(campaign)
    statistics_refresh(campaign=campaign, data=data, workers=rows, excluded=excluded)
    return excluded


def _quality_rows(campaign: Campaign, data: CountedLabels) -> tuple[list[WorkerQuality], dict[int, str]]:
    """One unsaved WorkerQuality per worker with labels or votes, and the exclusion reasons."""
    reasons = exclusion_reasons(
        data.likert,
        data.traps,
        data.votes,
        campaign.qc_max_label_share,
        campaign.qc_min_items,
        fail_at=TRAP_FAIL_AT,
        max_r=LOO_FLOOR,
        max_agreement=AGREEMENT_FLOOR,
        min_traps=campaign.qc_min_traps,
        min_orderings=campaign.qc_min_orderings,
        orderings=data.orderings,
        untouched_orderings=data.untouched_orderings,
        max_untouched_share=MAX_UNTOUCHED_SHARE,
    )
    correlations = leave_one_out_details(data.ratings)
    trap_figures = trap_report(data.trap_labels, data.traps, fail_at=TRAP_FAIL_AT)  # only trap labels count
    traps = trap_figures.workers
    obvious, subtle = (
        trap_figures.worker_kinds.get(kind, {}) for kind in (Proposition.TrapKind.OBVIOUS, Proposition.TrapKind.SUBTLE)
    )
    agreement = comparison_agreement(data.votes)
    times = time_report(data.times, fraction=SPEEDER_FRACTION, min_hits=SPEEDER_MIN_HITS)
    labels = Counter(map(itemgetter(0), data.ratings)) + Counter(map(itemgetter(0), data.trap_labels))
    now = timezone.now()
    rows = []
    no_traps = TrapStats(0, 0)
    for worker in sorted(set(labels) | set(data.votes_per_worker)):
        correlation = correlations.get(worker)
        trap = traps.get(worker)
        seconds = times.workers.get(worker, {})
        rows.append(
            WorkerQuality(
                campaign=campaign,
                worker_id=worker,
                labels=labels[worker],
                items=correlation.items if correlation else 0,
                loo_r=correlation.r if correlation else None,
                traps_seen=trap.seen if trap else 0,
                traps_failed=trap.failed if trap else 0,
                obvious_traps_seen=obvious.get(worker, no_traps).seen,
                obvious_traps_failed=obvious.get(worker, no_traps).failed,
                subtle_traps_seen=subtle.get(worker, no_traps).seen,
                subtle_traps_failed=subtle.get(worker, no_traps).failed,
                votes=data.votes_per_worker[worker],
                comparison_agreement=agreement.get(worker),
                orderings=data.orderings[worker] + data.untouched_orderings[worker],
                untouched_orderings=data.untouched_orderings[worker],
                likert_seconds=_median(seconds.get(Batch.Kind.LIKERT)),
                comparison_seconds=_median(seconds.get(Batch.Kind.COMPARISON)),
                speeder=worker in times.speeders,
                computed_status=WorkerQuality.Status.EXCLUDED if worker in reasons else WorkerQuality.Status.OK,
                computed_reason=reasons.get(worker, ""),
                computed_at=now,
            )
        )
    return rows, reasons


def _median(times: HitTimes | None) -> float | None:
    return times.median if times else None


def _quality_rows_write(campaign: Campaign, rows: list[WorkerQuality], reasons: dict[int, str]) -> set[int]:
    """Upsert the rows, reset workers who no longer have counted labels, record each change
    of computed status. Returns the excluded worker ids (overrides applied)."""
    stored = {
        worker: (computed, override)
        for worker, computed, override in WorkerQuality.objects.filter(campaign=campaign).values_list(
            "worker_id", "computed_status", "override_status"
        )
    }
    present = {row.worker_id for row in rows}
    rows += [
        WorkerQuality(campaign=campaign, worker_id=worker, computed_at=timezone.now())
        for worker in sorted(set(stored) - present)
    ]
    WorkerQuality.objects.bulk_create(
        rows,
        batch_size=1000,
        update_conflicts=True,
        unique_fields=["campaign", "worker"],
        update_fields=COMPUTED_FIELDS,
    )
    decisions = []
    for row in rows:
        was, _override = stored.get(row.worker_id, (WorkerQuality.Status.OK, ""))
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
        if campaign is None or not Worker.objects.filter(pk=worker_id).exists():
            raise NotFound(f"There is no worker {worker_id} in campaign {campaign_id}.")
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
    marketplace every excluded worker not blocked yet. Asking again at every refresh makes
    a failed call heal on the next one."""
    if not campaign.qc_block_excluded:
        return
    workers = list(
        WorkerQuality.objects.excluded()
        .filter(campaign=campaign, worker__blocked=False)
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
