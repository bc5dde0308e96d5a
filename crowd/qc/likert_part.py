"""The Likert part of a campaign's quality control, kept between passes while the Likert
labels do not change.

Rules 1 and 2 of the exclusion (traps, leave-one-out r: `crowd.quality.likert_exclusion_reasons`),
every worker's Likert figures (labels, shared items, r, traps seen and failed in all and per
kind, median seconds per Likert HIT, the Likert speeder flag) and what each scope's statistics
take from the labels (`crowd.qc.statistics.ScopeLikert`) are functions of four inputs alone:
the campaign's counted Likert labels, its traps, the times of its counted Likert HITs and the
QC settings. `likert_part_compute` computes them from the labels; the job stores the result
with a watermark of those inputs (`likert_watermark`: two aggregate queries, the traps and the
settings, no label read) and on the next pass uses the stored part as it is when the
watermark is the same (`likert_part_stored`). In the comparison rounds, when Likert labels no
longer arrive, a pass then reads only the votes.

While Likert labels stream in, the watermark changes on every pass, and reading every label
each time made a round's QC work grow as passes × labels. So a stored part whose other
inputs (traps, settings) are unchanged is kept *as of when it was computed* until the counted
labels reach twice what it read (`likert_part_current`), unless the caller needs it current
(the loop does when a topic's Likert round is to be scored: its means leave out who the rules
exclude now). Each full read is then of at least twice the labels of the one before, so the
labels read over a round stay under twice the round's labels (tests/crowd/test_quality_incremental.py
counts them), and the pages say when the Likert figures were computed and from how many labels.
A worker's quality row carries that time (WorkerQuality.computed_at), so approvals
(crowd.work.sync.approvals) wait for a computation that saw the worker's labels.

Why the result is the full computation's: the stored part is what the full computation
computes from the same inputs (floats are stored in JSON by their shortest repr, which reads
back as the same float), and the vote rules (3 and 4) read of it only who rules 1 and 2
excluded, which is stored with the reasons, in their order.
"""

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter

from django.utils import timezone

from annotation.models import Batch, Campaign, Proposition
from crowd.models import QualityStatistics
from crowd.qc.counted import CountedLikert, likert_sums
from crowd.qc.policy import campaign_qc_policy
from crowd.qc.statistics import ScopeLikert, likert_scopes
from crowd.quality import TrapStats, leave_one_out_details, likert_exclusion_reasons, time_report, trap_report

# Bump when what the Likert part holds or how it is computed changes: every campaign's is recomputed.
LIKERT_PART_VERSION = "1"
# A part kept while the counted labels stay under this many times what it read (and always
# under KEPT_MIN_LABELS: a small campaign is recomputed every pass, as it costs little).
KEPT_GROWTH = 2
KEPT_MIN_LABELS = 500
SPEEDER_FRACTION = 1 / 3  # a worker's median time per HIT below this share of the campaign's
SPEEDER_MIN_HITS = 3  # over at least this many HITs of the kind
# What the workers' figures read of a stored part: all of it but the scopes (the statistics').
WITHOUT_SCOPES = ("labels", "settings", "computed_at", "watermark", "workers", "reasons", "seconds_per_hit")


@dataclass(frozen=True)
class WorkerLikert:
    """One worker's Likert figures."""

    labels: int = 0  # non-trap and trap labels
    items: int = 0  # items shared with another worker
    loo_r: float | None = None
    traps: tuple[int, int] = (0, 0)  # (seen, failed)
    obvious: tuple[int, int] = (0, 0)
    subtle: tuple[int, int] = (0, 0)
    seconds: float | None = None  # median per Likert HIT
    speeder: bool = False  # on Likert HITs


NO_LIKERT = WorkerLikert()


@dataclass(frozen=True)
class LikertPart:
    """What quality control computes from the Likert labels, and the watermark of its inputs."""

    watermark: str
    workers: dict[int, WorkerLikert]  # every worker with a counted label or a timed Likert HIT
    reasons: dict[int, str]  # rules 1 and 2, in the order chosen
    seconds_per_hit: tuple[float, int] | None  # (median, HITs) over every timed Likert HIT
    scopes: dict[int | None, ScopeLikert]  # the campaign (None) and each labelled topic
    unlabelled: ScopeLikert  # a topic without labels
    labels: int = 0  # the counted Likert labels it was computed from
    settings: str = ""  # the digest of its inputs but the labels (traps, settings, rules)
    computed_at: datetime | None = None
    with_scopes: bool = True  # False: read without `scopes` and `unlabelled` (`likert_part_current`)

    def as_json(self) -> dict:
        if not self.with_scopes:
            raise ValueError("A Likert part read without its scopes is not to be stored.")
        return {
            "labels": self.labels,
            "settings": self.settings,
            "computed_at": self.computed_at.isoformat() if self.computed_at else None,
            "watermark": self.watermark,
            "workers": [[worker, *_worker_row(figures)] for worker, figures in self.workers.items()],
            "reasons": list(self.reasons.items()),
            "seconds_per_hit": self.seconds_per_hit,
            "scopes": [[topic, *_scope_row(scope)] for topic, scope in self.scopes.items()],
            "unlabelled": _scope_row(self.unlabelled),
        }

    @classmethod
    def from_json(cls, stored: dict) -> "LikertPart":
        """The stored part; without its scopes when it was read without them (`_stored`)."""
        seconds = stored["seconds_per_hit"]
        computed_at = stored.get("computed_at")
        scoped = "scopes" in stored
        return cls(
            labels=stored.get("labels") or 0,
            settings=stored.get("settings") or "",
            computed_at=datetime.fromisoformat(computed_at) if computed_at else None,
            watermark=stored["watermark"],
            workers={row[0]: _worker_read(row[1:]) for row in stored["workers"]},
            reasons=dict(stored["reasons"]),
            seconds_per_hit=None if seconds is None else (seconds[0], seconds[1]),
            scopes={row[0]: _scope_read(row[1:]) for row in stored["scopes"]} if scoped else {},
            unlabelled=_scope_read(stored["unlabelled"] if scoped else [0, [], [], "", {}]),
            with_scopes=scoped,
        )


@dataclass(frozen=True)
class LikertInputs:
    """The Likert part's inputs as the database sums them up, no label read."""

    watermark: str  # of every input: the labels and Likert HITs, the traps, the settings and rules
    settings: str  # of the inputs but the labels and HITs
    labels: int  # counted Likert labels now


def likert_inputs(campaign: Campaign, traps: dict[int, str]) -> LikertInputs:
    """Of every input of the Likert part: the counted labels and Likert HITs as the database
    sums them up (crowd.qc.counted.likert_sums), the traps, the settings and rules."""
    policy = campaign_qc_policy(campaign)
    sums = likert_sums(campaign_id=campaign.pk)
    rest = [
        sorted(traps.items()),
        [policy.max_label_share, policy.min_items, policy.min_traps],
        [policy.fail_at, policy.max_r, SPEEDER_FRACTION, SPEEDER_MIN_HITS],
    ]
    return LikertInputs(
        watermark=inputs_digest([LIKERT_PART_VERSION, sums, *rest]),
        settings=inputs_digest([LIKERT_PART_VERSION, *rest]),
        labels=sums[0],
    )


def likert_watermark(campaign: Campaign, traps: dict[int, str]) -> str:
    """`likert_inputs`' watermark alone."""
    return likert_inputs(campaign, traps).watermark


def inputs_digest(inputs: list) -> str:
    """The SHA-256 of `inputs` as JSON: a watermark of what a stored part rests on."""
    return hashlib.sha256(json.dumps(inputs).encode()).hexdigest()


def likert_part_current(
    campaign_id: int, inputs: LikertInputs, *, current: bool, scopes: bool = True
) -> LikertPart | None:
    """The stored part to use instead of reading the labels, or None (compute it): the stored
    one if its watermark is `inputs`' (it is the part of these very inputs); else, unless the
    caller needs the part `current`, the stored one while only labels came in since and fewer
    than KEPT_GROWTH times those it read are counted now (module docstring). Without `scopes`
    (for the workers' figures only, not the report's statistics) its scopes are not read: they
    are most of it (a topic's raters each), 0.3 MB at 30 topics × 1,750 propositions."""
    stored = _stored(campaign_id, scopes=scopes)
    if stored is None or stored.watermark == inputs.watermark:
        return stored
    if current or not stored.settings or stored.settings != inputs.settings:
        return None
    if inputs.labels >= max(KEPT_GROWTH * stored.labels, KEPT_MIN_LABELS):
        return None
    return stored


def likert_part_compute(campaign: Campaign, likert: CountedLikert, watermark: str | LikertInputs) -> LikertPart:
    """The Likert part from the counted Likert labels (the full computation); with the
    `LikertInputs` it was read under, it records them, so it can be kept while labels come."""
    policy = campaign_qc_policy(campaign)
    reasons = likert_exclusion_reasons(likert.ratings + likert.trap_labels, likert.traps, policy)
    correlations = leave_one_out_details(likert.ratings)
    trap_figures = trap_report(likert.trap_labels, likert.traps, fail_at=policy.fail_at)  # only trap labels count
    obvious, subtle = (
        trap_figures.worker_kinds.get(kind, {}) for kind in (Proposition.TrapKind.OBVIOUS, Proposition.TrapKind.SUBTLE)
    )
    times = time_report(likert.times, fraction=SPEEDER_FRACTION, min_hits=SPEEDER_MIN_HITS)
    labels = Counter(map(itemgetter(0), likert.ratings)) + Counter(map(itemgetter(0), likert.trap_labels))
    timed = {worker for worker, _kind, _seconds in likert.times}
    no_traps = TrapStats(0, 0)
    workers = {}
    for worker in sorted(set(labels) | timed):
        correlation = correlations.get(worker)
        trap = trap_figures.workers.get(worker, no_traps)
        seconds = times.workers.get(worker, {}).get(Batch.Kind.LIKERT)
        workers[worker] = WorkerLikert(
            labels=labels[worker],
            items=correlation.items if correlation else 0,
            loo_r=correlation.r if correlation else None,
            traps=(trap.seen, trap.failed),
            obvious=_stats(obvious.get(worker, no_traps)),
            subtle=_stats(subtle.get(worker, no_traps)),
            seconds=seconds.median if seconds else None,
            speeder=worker in times.speeders,
        )
    kind = times.kinds.get(Batch.Kind.LIKERT)
    scopes, unlabelled = likert_scopes(likert)
    inputs = watermark if isinstance(watermark, LikertInputs) else None
    return LikertPart(
        labels=len(likert.ratings) + len(likert.trap_labels),
        settings=inputs.settings if inputs else "",
        computed_at=timezone.now(),
        watermark=inputs.watermark if inputs else str(watermark),
        workers=workers,
        reasons=reasons,
        seconds_per_hit=(kind.median, kind.hits) if kind else None,
        scopes=scopes,
        unlabelled=unlabelled,
    )


def likert_part_stored(campaign_id: int, watermark: str) -> LikertPart | None:
    """The stored Likert part if its watermark is `watermark`; else None."""
    stored = _stored(campaign_id)
    return stored if stored is not None and stored.watermark == watermark else None


def likert_part_summary(campaign_id: int) -> tuple[int, datetime | None] | None:
    """Of the stored Likert part, whatever its watermark: from how many labels and when it was
    computed (what the report says of it), read without the part's per-worker rows."""
    row = (
        QualityStatistics.objects.filter(campaign_id=campaign_id, topic__isnull=True)
        .exclude(likert_part={})
        .values_list("likert_part__labels", "likert_part__computed_at")
        .first()
    )
    if row is None:
        return None
    labels, computed_at = row
    return labels or 0, datetime.fromisoformat(computed_at) if computed_at else None


def _stored(campaign_id: int, *, scopes: bool = True) -> LikertPart | None:
    row = QualityStatistics.objects.filter(campaign_id=campaign_id, topic__isnull=True)
    if not scopes:
        keys = row.exclude(likert_part={}).values_list(*(f"likert_part__{key}" for key in WITHOUT_SCOPES)).first()
        return None if keys is None else LikertPart.from_json(dict(zip(WITHOUT_SCOPES, keys, strict=True)))
    stored = row.values_list("likert_part", flat=True).first()
    return LikertPart.from_json(stored) if stored else None


def likert_part_store(campaign_id: int, part: LikertPart) -> bool:
    """Store the part on the campaign's statistics row (written by the statistics first);
    False if there is no such row yet."""
    return bool(
        QualityStatistics.objects.filter(campaign_id=campaign_id, topic__isnull=True).update(likert_part=part.as_json())
    )


def _stats(stats: TrapStats) -> tuple[int, int]:
    return (stats.seen, stats.failed)


def _worker_row(figures: WorkerLikert) -> list:
    return [
        figures.labels,
        figures.items,
        figures.loo_r,
        *figures.traps,
        *figures.obvious,
        *figures.subtle,
        figures.seconds,
        figures.speeder,
    ]


def _worker_read(row: list) -> WorkerLikert:
    labels, items, loo_r, seen, failed, obvious_seen, obvious_failed, subtle_seen, subtle_failed, seconds, speeder = row
    return WorkerLikert(
        labels,
        items,
        loo_r,
        (seen, failed),
        (obvious_seen, obvious_failed),
        (subtle_seen, subtle_failed),
        seconds,
        speeder,
    )


def _scope_row(scope: ScopeLikert) -> list:
    return [scope.labels, list(scope.raters.items()), scope.rating_raters, scope.ratings_digest, scope.trap_means]


def _scope_read(row: list) -> ScopeLikert:
    labels, raters, rating_raters, digest, trap_means = row
    return ScopeLikert(labels, dict(map(tuple, raters)), rating_raters, digest, trap_means)
