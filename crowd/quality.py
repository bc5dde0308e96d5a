"""Worker quality control for crowdsourced importance labels (Falke & Gurevych 2017,
"Bringing Structure into Summaries: Crowdsourcing a Benchmark Corpus of Concept Maps",
EMNLP): leave-one-out correlation, trap propositions, comparison agreement and the
exclusion of the worst workers. The crowd-level statistics live in `crowd.agreement` and
are importable from here as well.

Pure core: NumPy only, no Django. Labels are `(worker, item, score)` triples, votes
`(worker, item_a, item_b, winner)`; workers and items are any hashable keys. Undefined
per-worker figures are None (see `leave_one_out_details` for the reason); malformed input
raises ValueError as in `crowd.agreement`.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from crowd.agreement import (
    LabelTable,
    RunReliability,
    StabilityPoint,
    VoteTable,
    bootstrap_stability,
    columns,
    factorize,
    grouped_pearson,
    krippendorff_alpha,
    label_table,
    majority_agreement,
    meta_worker_agreement,
    run_reliability,
    vote_table,
)

__all__ = [
    "HitTimes",
    "KindStats",
    "QCPolicy",
    "RunReliability",
    "StabilityPoint",
    "TimeReport",
    "TrapReport",
    "TrapStats",
    "VoteTable",
    "WorkerCorrelation",
    "agreement_reasons",
    "bootstrap_stability",
    "comparison_agreement",
    "comparison_counts",
    "comparison_exclusion_reasons",
    "exclusion_reasons",
    "exclusions",
    "krippendorff_alpha",
    "leave_one_out",
    "leave_one_out_details",
    "likert_exclusion_reasons",
    "majority_agreement",
    "meta_worker_agreement",
    "run_reliability",
    "time_report",
    "trap_report",
    "untouched_reasons",
    "vote_table",
]

Label = tuple[Hashable, Hashable, float]
Vote = tuple[Hashable, Hashable, Hashable, Hashable]
WorkerT = TypeVar("WorkerT", bound=Hashable)
ItemT = TypeVar("ItemT", bound=Hashable)


@dataclass(frozen=True)
class WorkerCorrelation:
    """A worker's leave-one-out r, the number of items it rests on (items the worker
    shares with another worker) and, when r is None, why."""

    r: float | None
    items: int
    reason: str = ""


def leave_one_out(labels: Iterable[tuple[WorkerT, Hashable, float]]) -> dict[WorkerT, float | None]:
    """Per worker, Pearson r between the worker's scores and the mean of the other
    workers' scores on the same items (Falke & Gurevych 2017). See `leave_one_out_details`
    for the rules and for why an r is None."""
    return {worker: detail.r for worker, detail in leave_one_out_details(labels).items()}


def leave_one_out_details(labels: Iterable[tuple[WorkerT, Hashable, float]]) -> dict[WorkerT, WorkerCorrelation]:
    """r_w = Pearson over items i rated by w and someone else of (s_wi, mean_{v≠w} s_vi).

    A worker who rated an item more than once counts with the mean of those scores, both
    as "own" score and inside the others' means, so every worker weighs once per item.
    Items nobody else rated are skipped. r is None with fewer than 3 shared items, when
    the worker's scores are constant, or when the others' means are constant."""
    table = label_table(labels)
    r, items, own_constant, others_constant = _leave_one_out(table)
    details: dict[WorkerT, WorkerCorrelation] = {}
    for code, worker in enumerate(table.workers):
        if items[code] == 0:
            reason = "no item shared with another worker"
        elif items[code] < 3:
            reason = "fewer than 3 items shared with other workers"
        elif own_constant[code]:
            reason = "the worker's scores are constant"
        elif others_constant[code]:
            reason = "the other workers' means are constant"
        else:
            details[worker] = WorkerCorrelation(float(r[code]), int(items[code]))
            continue
        details[worker] = WorkerCorrelation(None, int(items[code]), reason)
    return details


def _leave_one_out(table: LabelTable) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(r, shared items, own constant, others constant) per worker code; r NaN if None."""
    item_count = max(len(table.items), 1)
    cells, label_cell = np.unique(table.worker * item_count + table.item, return_inverse=True)
    own = np.bincount(label_cell, table.score) / np.bincount(label_cell)
    worker, item = np.divmod(cells, item_count)
    item_total = np.bincount(item, own, item_count)
    raters = np.bincount(item, minlength=item_count)
    shared = raters[item] > 1
    worker, item, own = worker[shared], item[shared], own[shared]
    others = (item_total[item] - own) / (raters[item] - 1)
    return grouped_pearson(worker, own, others, len(table.workers))


@dataclass(frozen=True)
class TrapStats:
    seen: int
    failed: int


@dataclass(frozen=True)
class KindStats:
    """Mean score of the labels on one kind of trap (NaN when n = 0)."""

    mean: float
    n: int


@dataclass(frozen=True)
class TrapReport:
    """`workers`: every trap label per worker; `worker_kinds`: the same per trap kind (a kind
    the worker never saw is absent); `kinds`: mean score per kind."""

    workers: dict[Hashable, TrapStats]
    kinds: dict[str, KindStats]
    worker_kinds: dict[str, dict[Hashable, TrapStats]]


def trap_report(
    labels: Iterable[tuple[Hashable, ItemT, float]], traps: Mapping[ItemT, str], fail_at: float = 3
) -> TrapReport:
    """Per worker: trap labels seen and failed (score ≥ `fail_at`), in all and per trap kind;
    per trap kind ("obvious", "subtle"): mean score and label count. Falke & Gurevych (2017) saw means
    of 1.08 (obvious) and 1.14 (subtle). Every label on a trap counts, so a trap shown to a
    worker twice is seen twice; every worker and every kind in `traps` is listed."""
    table = label_table(labels)
    seen, failed = _trap_counts(table, traps, fail_at)
    kinds = list(dict.fromkeys(traps.values()))
    kind_code: dict[str | None, int] = {kind: code for code, kind in enumerate(kinds)}
    item_kind = np.array([kind_code.get(traps.get(item), -1) for item in table.items], np.intp)
    label_kind = item_kind[table.item]
    on_trap = label_kind >= 0
    count = np.bincount(label_kind[on_trap], minlength=len(kinds))
    total = np.bincount(label_kind[on_trap], table.score[on_trap], len(kinds))
    with np.errstate(invalid="ignore"):
        mean = total / count
    worker_kinds: dict[str, dict[Hashable, TrapStats]] = {}
    for code, kind in enumerate(kinds):
        of_kind = label_kind == code
        kind_seen = np.bincount(table.worker[of_kind], minlength=len(table.workers))
        kind_failed = np.bincount(table.worker[of_kind & (table.score >= fail_at)], minlength=len(table.workers))
        worker_kinds[kind] = {
            table.workers[worker]: TrapStats(int(kind_seen[worker]), int(kind_failed[worker]))
            for worker in np.flatnonzero(kind_seen)
        }
    return TrapReport(
        workers={worker: TrapStats(int(seen[code]), int(failed[code])) for code, worker in enumerate(table.workers)},
        kinds={kind: KindStats(float(mean[code]), int(count[code])) for code, kind in enumerate(kinds)},
        worker_kinds=worker_kinds,
    )


def _trap_labels(table: LabelTable, traps: Container[Hashable]) -> np.ndarray:
    is_trap = np.fromiter((item in traps for item in table.items), bool, len(table.items))
    on_trap: np.ndarray = is_trap[table.item]
    return on_trap


def _trap_counts(table: LabelTable, traps: Container[Hashable], fail_at: float) -> tuple[np.ndarray, np.ndarray]:
    on_trap = _trap_labels(table, traps)
    workers = len(table.workers)
    seen = np.bincount(table.worker[on_trap], minlength=workers)
    failed = np.bincount(table.worker[on_trap & (table.score >= fail_at)], minlength=workers)
    return seen, failed


def comparison_agreement(votes: Iterable[tuple[WorkerT, Hashable, Hashable, Hashable]]) -> dict[WorkerT, float | None]:
    """Per worker, the share of the worker's votes that agree with the majority of the
    other workers' votes on the same pair. Votes on pairs where the others are tied or
    absent don't count; None when the worker has no vote that counts."""
    table = vote_table(votes)
    agree, countable = _comparison_counts(table, len(table.workers))
    return {
        worker: float(agree[code] / countable[code]) if countable[code] else None
        for code, worker in enumerate(table.workers)
    }


def _comparison_counts(table: VoteTable, workers: int) -> tuple[np.ndarray, np.ndarray]:
    """Per worker code: votes agreeing with the others' majority, and votes that count."""
    pairs = max(table.pair_count, 1)
    first_won = table.first_won.astype(float)
    cells, vote_cell = np.unique(table.worker * pairs + table.pair, return_inverse=True)
    own_votes = np.bincount(vote_cell).astype(float)
    own_first = np.bincount(vote_cell, first_won)
    worker, pair = np.divmod(cells, pairs)
    other_votes = np.bincount(table.pair, minlength=pairs)[pair] - own_votes
    other_first = np.bincount(table.pair, first_won, pairs)[pair] - own_first
    countable = (other_votes > 0) & (2 * other_first != other_votes)
    agree = np.where(2 * other_first > other_votes, own_first, own_votes - own_first)
    return (
        np.bincount(worker, np.where(countable, agree, 0), workers),
        np.bincount(worker, np.where(countable, own_votes, 0), workers),
    )


@dataclass(frozen=True)
class HitTimes:
    """Median seconds per HIT over `hits` HITs."""

    median: float
    hits: int


@dataclass(frozen=True)
class TimeReport:
    """`kinds`: every HIT of a kind, all workers together; `workers`: per worker and kind;
    `speeders`: the flagged workers, each with why."""

    kinds: dict[Hashable, HitTimes]
    workers: dict[Hashable, dict[Hashable, HitTimes]]
    speeders: dict[Hashable, str]


def time_report(
    times: Iterable[tuple[WorkerT, Hashable, float]], fraction: float = 1 / 3, min_hits: int = 3
) -> TimeReport:
    """Time on task from `(worker, kind, seconds)`, one per HIT: the median per kind of HIT
    (a Likert HIT and an ordering take different times) and per worker and kind. A speeder
    is a worker whose median on a kind, over ≥ `min_hits` HITs, is below `fraction` of that
    kind's median over every HIT — the usual speeding rule of survey research, relative to
    the median. It is a flag for review, not evidence of bad answers on its own."""
    rows = list(times)
    workers, kinds, seconds = columns(rows, 3)
    worker, worker_keys = factorize(workers)
    kind, kind_keys = factorize(kinds)
    value = np.asarray(seconds, dtype=float)
    if not np.isfinite(value).all():
        raise ValueError("times must be finite numbers")
    kind_medians = _group_medians(kind, value, len(kind_keys))
    cell_medians = _group_medians(worker * len(kind_keys) + kind, value, len(worker_keys) * len(kind_keys))
    report = TimeReport(
        kinds={key: HitTimes(*kind_medians[code]) for code, key in enumerate(kind_keys)},
        workers={key: {} for key in worker_keys},
        speeders={},
    )
    for cell, (median, hits) in cell_medians.items():
        code, kind_code = divmod(cell, len(kind_keys))
        worker_key, kind_key = worker_keys[code], kind_keys[kind_code]
        report.workers[worker_key][kind_key] = HitTimes(median, hits)
        typical = kind_medians[kind_code][0]
        if hits >= min_hits and median < fraction * typical and worker_key not in report.speeders:
            report.speeders[worker_key] = (
                f"median {median:.1f} s per {kind_key} HIT over {hits} HITs, below {fraction:.2g} × "
                f"the campaign's median of {typical:.1f} s"
            )
    return report


def _group_medians(group: np.ndarray, value: np.ndarray, groups: int) -> dict[int, tuple[float, int]]:
    """{group code: (median, n)} for the groups that have values."""
    order = np.lexsort((value, group))
    ordered = value[order]
    counts = np.bincount(group, minlength=groups)
    starts = np.cumsum(counts) - counts
    present = np.flatnonzero(counts)
    low = ordered[starts[present] + (counts[present] - 1) // 2]
    high = ordered[starts[present] + counts[present] // 2]
    return {int(code): (float((a + b) / 2), int(counts[code])) for code, a, b in zip(present, low, high)}


@dataclass(frozen=True)
class QCPolicy:
    """The parameters of the exclusion rules (`exclusion_reasons` says what each does): one
    value handed from the caller to every rule, instead of a dozen loose arguments."""

    max_label_share: float = 0.05
    min_items: int = 10
    fail_at: float = 3
    max_r: float = 0.5
    max_agreement: float = 0.6
    min_traps: int = 2
    min_orderings: int = 3
    max_untouched_share: float = 0.5

    def __post_init__(self) -> None:
        if not 0 <= self.max_label_share <= 1:
            raise ValueError(f"max_label_share must be within [0, 1], not {self.max_label_share}")


DEFAULT_POLICY = QCPolicy()


def exclusions(
    labels: Iterable[tuple[WorkerT, ItemT, float]],
    traps: Mapping[ItemT, str] | None = None,
    votes: Iterable[tuple[WorkerT, Hashable, Hashable, Hashable]] = (),
    max_label_share: float = 0.05,
    min_items: int = 10,
    *,
    fail_at: float = 3,
    max_r: float = 0.5,
    max_agreement: float = 0.6,
    min_traps: int = 2,
    min_orderings: int = 3,
    orderings: Mapping[WorkerT, int] | None = None,
    untouched_orderings: Mapping[WorkerT, int] | None = None,
    max_untouched_share: float = 0.5,
) -> set[WorkerT]:
    """The workers to exclude from aggregation; see `exclusion_reasons` for the rules. The
    public signature (DESIGN.md): the parameters are those of a `QCPolicy`."""
    policy = QCPolicy(
        max_label_share=max_label_share,
        min_items=min_items,
        fail_at=fail_at,
        max_r=max_r,
        max_agreement=max_agreement,
        min_traps=min_traps,
        min_orderings=min_orderings,
        max_untouched_share=max_untouched_share,
    )
    reasons = exclusion_reasons(
        labels, traps, votes, policy, orderings=orderings, untouched_orderings=untouched_orderings
    )
    return set(reasons)


def exclusion_reasons(
    labels: Iterable[tuple[WorkerT, ItemT, float]],
    traps: Mapping[ItemT, str] | None = None,
    votes: Iterable[tuple[WorkerT, Hashable, Hashable, Hashable]] = (),
    policy: QCPolicy = DEFAULT_POLICY,
    *,
    orderings: Mapping[WorkerT, int] | None = None,
    untouched_orderings: Mapping[WorkerT, int] | None = None,
) -> dict[WorkerT, str]:
    """Workers to exclude, each with the reason, in the order they were chosen, under `policy`
    (its fields are the parameters named below). `traps` maps trap items to their kind (None
    or {} when there are none); `orderings` and `untouched_orderings` count each worker's
    orderings (see rules 3 and 4).

    After Falke & Gurevych (2017), who removed the worst workers, at most 5 % of labels. No
    rule judges a worker on less than its minimum of evidence:
    1. Traps: a worker who saw ≥ `min_traps` trap labels and failed (score ≥ `fail_at`) at
       least half of them. Traps are evidence, so this step has no cap.
    2. Likert: leave-one-out r on the non-trap labels of the workers still in. Judged are
       workers with r defined, ≥ `min_items` shared items and r < `max_r` (a floor, so good
       workers are never excluded to fill a quota). A worker whose scores are constant on
       ≥ `min_items` (and ≥ 3) shared items while the others' means vary is judged as
       r = 0: zero variance carries no information, and a constant 1 passes every trap.
       Worst first, each is added while the labels (traps included) of all excluded
       workers — step 1's too — stay ≤ `max_label_share` of all labels; it stops at the
       first worker that would exceed the cap rather than skipping to a smaller one, so
       the worst go first.
    3. Untouched orderings: a worker with ≥ `min_orderings` orderings of whom more than
       `max_untouched_share` were submitted in the order shown (`untouched_orderings`).
       The shown order is shuffled, so an ordering submitted untouched carries no
       judgement; one now and then is allowed (the instructions say so), most of them is
       not reading. Uncapped, like traps; their votes in `votes` count toward the cap.
    4. Comparisons: `comparison_agreement` on the votes of the workers still in, judged
       with ≥ `min_orderings` orderings in `orderings` (the orderings whose pairwise votes
       are in `votes`) and a countable vote, `max_agreement` as the floor, and the cap on
       the share of all votes held by every excluded worker. The C(n, 2) votes of one
       n-item ordering are one judgement, so evidence is counted in orderings; when
       `orderings` is None (votes not from orderings), in countable votes (≥ `min_items`).
    Leave the votes of untouched orderings out of `votes`: they are neither agreement nor
    disagreement, and count nowhere but in rule 3. Rules 1 and 2 read only the labels, rules 3
    and 4 only the votes and who is out already (`likert_exclusion_reasons`, then
    `comparison_exclusion_reasons`), so a caller whose labels did not change may keep the
    first part's result.
    """
    reasons = likert_exclusion_reasons(labels, traps, policy)
    return comparison_exclusion_reasons(
        reasons, votes, policy, orderings=orderings, untouched_orderings=untouched_orderings
    )


def likert_exclusion_reasons(
    labels: Iterable[tuple[WorkerT, ItemT, float]],
    traps: Mapping[ItemT, str] | None = None,
    policy: QCPolicy = DEFAULT_POLICY,
) -> dict[WorkerT, str]:
    """Rules 1 and 2 of `exclusion_reasons` (traps, leave-one-out r), which rest on the
    Likert labels alone: the same labels and settings give the same reasons, whatever the
    votes."""
    fail_at, max_r, max_label_share = policy.fail_at, policy.max_r, policy.max_label_share
    traps = traps or {}
    table = label_table(labels)
    reasons: dict[WorkerT, str] = {}

    seen, failed = _trap_counts(table, traps, fail_at)
    for code in np.flatnonzero((seen >= max(policy.min_traps, 1)) & (2 * failed >= seen)):
        reasons[table.workers[code]] = f"failed {failed[code]} of {seen[code]} traps (score ≥ {fail_at:g})"

    trap_excluded = np.array([worker in reasons for worker in table.workers], bool)
    r, items, own_constant, others_constant = _leave_one_out(
        table.subset(~_trap_labels(table, traps) & ~trap_excluded[table.worker])
    )
    constant = own_constant & ~others_constant & (items >= 3)
    r = np.where(constant, 0.0, r)
    _add_worst(
        reasons,
        table.workers,
        r,
        judged=(items >= policy.min_items) & (r < max_r),
        load=np.bincount(table.worker, minlength=len(table.workers)),
        cap=max_label_share * len(table.score),
        describe=lambda code: (
            f"leave-one-out r = {r[code]:.2f} on {items[code]} items"
            f"{' (constant scores)' if constant[code] else ''}, "
            f"below {max_r:g}; worst first within "
            f"{max_label_share:.0%} of labels"
        ),
    )
    return reasons


def comparison_exclusion_reasons(
    likert_reasons: Mapping[WorkerT, str],
    votes: Iterable[tuple[WorkerT, Hashable, Hashable, Hashable]] = (),
    policy: QCPolicy = DEFAULT_POLICY,
    *,
    orderings: Mapping[WorkerT, int] | None = None,
    untouched_orderings: Mapping[WorkerT, int] | None = None,
) -> dict[WorkerT, str]:
    """Rules 3 and 4 of `exclusion_reasons` (untouched orderings, comparison agreement) after
    `likert_reasons`, the result of rules 1 and 2 (`likert_exclusion_reasons`): every reason,
    in the order chosen. They read no Likert label, only who rules 1 and 2 excluded."""
    reasons = untouched_reasons(likert_reasons, policy, orderings=orderings, untouched_orderings=untouched_orderings)
    ballots = vote_table(votes)
    workers = ballots.workers
    excluded = np.array([worker in reasons for worker in workers], bool)
    agree, countable = comparison_counts(ballots, excluded)
    return agreement_reasons(
        reasons,
        workers,
        agree,
        countable,
        np.bincount(ballots.worker, minlength=len(workers)),
        policy,
        orderings=orderings,
    )


def untouched_reasons(
    likert_reasons: Mapping[WorkerT, str],
    policy: QCPolicy = DEFAULT_POLICY,
    *,
    orderings: Mapping[WorkerT, int] | None = None,
    untouched_orderings: Mapping[WorkerT, int] | None = None,
) -> dict[WorkerT, str]:
    """`likert_reasons` and rule 3 of `exclusion_reasons` (untouched orderings): who is out
    before the comparison agreement is judged, in the order chosen."""
    reasons = dict(likert_reasons)
    untouched_orderings = untouched_orderings or {}
    for worker, untouched in untouched_orderings.items():
        total = untouched + (orderings or {}).get(worker, 0)
        if (
            worker not in reasons
            and untouched
            and total >= policy.min_orderings
            and untouched > policy.max_untouched_share * total
        ):
            reasons[worker] = f"submitted {untouched} of {total} orderings in the order shown (untouched)"
    return reasons


def comparison_counts(ballots: VoteTable, excluded: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per worker code of `ballots`: votes agreeing with the other workers' majority on the
    pair, and votes that count (the others neither tied nor absent), on the votes of the
    workers not `excluded` (a mask over the codes). Sums over pairs: the counts of a set of
    votes split by pair (a campaign's by topic) add up to the counts of the whole."""
    kept = ballots if excluded is None else ballots.subset(~excluded[ballots.worker])
    return _comparison_counts(kept, len(ballots.workers))


def agreement_reasons(
    reasons: Mapping[WorkerT, str],
    workers: Sequence[WorkerT],
    agree: np.ndarray,
    countable: np.ndarray,
    load: np.ndarray,
    policy: QCPolicy = DEFAULT_POLICY,
    *,
    orderings: Mapping[WorkerT, int] | None = None,
) -> dict[WorkerT, str]:
    """`reasons` (rules 1 to 3: `untouched_reasons`) and rule 4 of `exclusion_reasons`, from
    per-worker counts in `workers`' order: `agree` and `countable` on the votes of the
    workers still in (`comparison_counts`), `load` every vote of theirs that rules 3 and 4
    weigh (untouched orderings left out). Judged worst first within the cap on the share of
    all those votes held by every excluded worker."""
    max_agreement, max_label_share, min_orderings = policy.max_agreement, policy.max_label_share, policy.min_orderings
    reasons = dict(reasons)
    excluded = np.array([worker in reasons for worker in workers], bool)
    if orderings is None:
        evidence = countable >= policy.min_items
    else:
        evidence = (countable > 0) & np.array([orderings.get(worker, 0) >= min_orderings for worker in workers], bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        agreement = agree / countable
    _add_worst(
        reasons,
        list(workers),
        agreement,
        judged=~excluded & evidence & (agreement < max_agreement),
        load=load,
        cap=max_label_share * load.sum(),
        describe=lambda code: (
            f"comparison agreement {agreement[code]:.2f} on {countable[code]:.0f} votes"
            f"{_orderings_note(orderings, workers[code])}, below {max_agreement:g}; worst first within "
            f"{max_label_share:.0%} of votes"
        ),
    )
    return reasons


def _orderings_note(orderings: Mapping[Any, int] | None, worker: Hashable) -> str:
    return "" if orderings is None else f" from {orderings.get(worker, 0)} orderings"


def _add_worst(
    reasons: dict[Any, str],
    workers: list[Any],
    value: np.ndarray,
    judged: np.ndarray,
    load: np.ndarray,
    cap: float,
    describe: Callable[[int], str],
) -> None:
    """Add judged workers, lowest `value` first, while the excluded load stays ≤ cap."""
    used = load[np.array([worker in reasons for worker in workers], bool)].sum()
    candidates = np.flatnonzero(judged)
    for code in candidates[np.argsort(value[candidates], kind="stable")]:
        if used + load[code] > cap:
            break
        used += load[code]
        reasons[workers[code]] = describe(code)
