"""The vote part of a campaign's quality control, summed per topic and kept between runs while
a topic's votes do not change.

Rules 3 and 4 of the exclusion (untouched orderings, comparison agreement:
`crowd.quality.comparison_exclusion_reasons`) and every worker's vote figures (votes,
orderings, untouched orderings, agreement) rest on per-worker counts, and those counts are
sums over pairs (`crowd.quality.comparison_counts`): a pair's votes are all in one topic, so a
campaign's counts are its topics' counts added up. A comparison step waits for quality control
(ranking.workflow: its topic's refit leaves out whom the rules exclude now), and reading every
vote of the campaign for each step made its QC work grow as topics × votes. So each topic's
sums are stored (crowd.models.TopicVotes) with a watermark of its counted votes
(`crowd.qc.counted.topic_vote_sums`: one aggregate query the database sums up, no vote read),
and a run reads the votes of the topics whose watermark moved only: an event's, its own
topic's newest batch.

Rule 4 judges agreement on the votes of the workers still in after rules 1 to 3, so those
sums ("kept") also depend on whom rules 1 to 3 exclude: a topic's are stored with a digest of
the excluded workers among its voters and recomputed, from its votes, when that changes.

Why the result is the full computation's: every count is an integer, added up exactly, and
the rules read them in worker-id order in both paths; `campaign_quality_recompute` computes
the same from every vote of the campaign as one group (`vote_part_of`).
"""

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np
from django.utils import timezone

from annotation.models import Batch, Campaign
from crowd.models import TopicVotes
from crowd.qc.counted import CountedVotes, Time, counted_votes_by_topic, hit_times, topic_vote_sums, votes_merged
from crowd.qc.likert_part import inputs_digest
from crowd.quality import QCPolicy, VoteTable, agreement_reasons, comparison_counts, untouched_reasons, vote_table

VOTES, BALLOTS, ORDERINGS, UNTOUCHED, AGREE, COUNTABLE = range(6)  # the sums of a worker, in order


@dataclass(frozen=True)
class VoteSums:
    """Counted votes summed per worker: one topic's, or a whole campaign's read at once."""

    watermark: str
    workers: dict[int, tuple[int, ...]]  # worker -> (votes, ballots, orderings, untouched, agree, countable)
    excluded: str = ""  # digest of the workers out before rule 4 whom `kept` leaves out
    kept: dict[int, tuple[int, int]] | None = None  # worker -> (agree, countable) on the votes of those still in
    ballots: VoteTable | None = None  # the votes that count for agreement, when read by this run


@dataclass(frozen=True)
class VotePart:
    """What quality control takes from a campaign's counted votes."""

    reasons: dict[int, str]  # rules 1 to 4, in the order chosen
    agreement: dict[int, float | None]  # on every vote that counts (`crowd.quality.comparison_agreement`)
    votes_per_worker: Counter  # every counted vote, untouched orderings' included
    orderings: Counter  # orderings whose votes count for agreement
    untouched_orderings: Counter
    times: list[Time]  # (worker, "comparison", seconds) per counted comparison HIT with a time


def vote_part_of(votes: CountedVotes, likert_reasons: dict[int, str], policy: QCPolicy) -> VotePart:
    """The vote part from every counted vote of the campaign, read at once (the full computation)."""
    return _combined({None: _summed(votes, "")}, likert_reasons, policy, votes.times, store=None)


def vote_part_current(
    campaign: Campaign, likert_reasons: dict[int, str], policy: QCPolicy, *, every_topic: bool = False
) -> tuple[VotePart, CountedVotes | None]:
    """The vote part from each topic's stored sums, reading the votes of the topics whose
    watermark moved (and of those whose kept sums leave out other workers now), storing what
    it summed; under the campaign's lock (crowd.qc.worker_quality). With `every_topic` (a pass,
    whose report statistics take every vote) every topic's votes are read, in the one query a
    full read takes, and returned too, as one campaign's."""
    marks = {topic: inputs_digest(list(sums)) for topic, sums in topic_vote_sums(campaign_id=campaign.pk).items()}
    rows = TopicVotes.objects.filter(topic__campaign_id=campaign.pk)
    if every_topic:
        stored = {}
        known = {topic: (mark, out) for topic, mark, out in rows.values_list("topic_id", "watermark", "excluded")}
    else:
        stored = {row.topic_id: _stored_read(row) for row in rows}
        known = {topic: (group.watermark, group.excluded) for topic, group in stored.items()}
    fresh = sorted(topic for topic, mark in marks.items() if topic not in stored or stored[topic].watermark != mark)
    read = counted_votes_by_topic(campaign_id=campaign.pk, topic_ids=fresh)
    groups: dict[int | None, VoteSums] = {topic: stored[topic] for topic in marks if topic not in fresh}
    groups |= {topic: _summed(read[topic], marks[topic]) for topic in fresh if topic in read}
    times = hit_times(campaign_id=campaign.pk, kind=Batch.Kind.COMPARISON)
    part = _combined(groups, likert_reasons, policy, times, store=(campaign.pk, known))
    return part, votes_merged(list(read.values()), times) if every_topic else None


def _combined(
    groups: dict[int | None, VoteSums],
    likert_reasons: dict[int, str],
    policy: QCPolicy,
    times: list[Time],
    *,
    store: tuple[int, dict[int, tuple[str, str]]] | None,
) -> VotePart:
    """Rules 3 and 4 from the groups' sums; with `store` (the campaign, and the watermark and
    digest of each topic's stored sums), the topics' changed sums stored."""
    totals: dict[int, list[int]] = {}
    for group in groups.values():
        for worker, sums in group.workers.items():
            total = totals.setdefault(worker, [0] * len(sums))
            for index, value in enumerate(sums):
                total[index] += value
    workers = sorted(totals)
    orderings = Counter({w: totals[w][ORDERINGS] for w in workers if totals[w][ORDERINGS]})
    untouched = Counter({w: totals[w][UNTOUCHED] for w in workers if totals[w][UNTOUCHED]})
    reasons = untouched_reasons(likert_reasons, policy, orderings=orderings, untouched_orderings=untouched)
    out = set(reasons)
    groups = _kept_current(groups, out, None if store is None else store[0])
    agree, countable = np.zeros(len(workers)), np.zeros(len(workers))
    code = {worker: index for index, worker in enumerate(workers)}
    for group in groups.values():
        for worker, (kept_agree, kept_countable) in (group.kept or {}).items():
            agree[code[worker]] += kept_agree
            countable[code[worker]] += kept_countable
    load = np.array([totals[w][BALLOTS] for w in workers], dtype=np.int64)
    reasons = agreement_reasons(reasons, workers, agree, countable, load, policy, orderings=orderings)
    if store is not None:
        _groups_store(*store, groups)
    return VotePart(
        reasons=reasons,
        agreement={
            w: totals[w][AGREE] / totals[w][COUNTABLE] if totals[w][COUNTABLE] else None
            for w in workers
            if totals[w][BALLOTS]
        },
        votes_per_worker=Counter({w: totals[w][VOTES] for w in workers if totals[w][VOTES]}),
        orderings=orderings,
        untouched_orderings=untouched,
        times=times,
    )


def _kept_current(
    groups: dict[int | None, VoteSums], out: set[int], campaign_id: int | None
) -> dict[int | None, VoteSums]:
    """The groups with kept sums that leave out exactly the workers in `out` among their
    voters: a group whose stored ones left out others is recomputed from its votes (read
    again, in one query, when this run did not read them)."""
    digests = {topic: _out_digest(group.workers, out) for topic, group in groups.items()}
    stale = [topic for topic, group in groups.items() if group.kept is None or group.excluded != digests[topic]]
    unread = [topic for topic in stale if topic is not None and groups[topic].ballots is None]
    if unread:
        assert campaign_id is not None  # the votes of a campaign read at once (topic None) are in memory
        read = counted_votes_by_topic(campaign_id=campaign_id, topic_ids=unread)
        groups = groups | {topic: replace(groups[topic], ballots=vote_table(read[topic].votes)) for topic in read}
    for topic in stale:
        group = groups[topic]
        if group.ballots is not None:
            groups[topic] = _with_kept(group, out, digests[topic])
    return groups


def _summed(votes: CountedVotes, watermark: str) -> VoteSums:
    """A group's sums from its votes (kept sums to come: they need who is out)."""
    table = vote_table(votes.votes)
    agree, countable = comparison_counts(table)
    load = np.bincount(table.worker, minlength=len(table.workers))
    ballots = {worker: int(load[code]) for code, worker in enumerate(table.workers)}
    by_worker = {worker: (int(agree[code]), int(countable[code])) for code, worker in enumerate(table.workers)}
    workers: dict[int, tuple[int, ...]] = {}
    for worker in sorted(set(votes.votes_per_worker) | set(votes.orderings) | set(votes.untouched_orderings)):
        shared = by_worker.get(worker, (0, 0))
        workers[worker] = (
            votes.votes_per_worker[worker],
            ballots.get(worker, 0),
            votes.orderings[worker],
            votes.untouched_orderings[worker],
            *shared,
        )
    return VoteSums(watermark=watermark, workers=workers, ballots=table)


def _with_kept(group: VoteSums, out: set[int], digest: str) -> VoteSums:
    table = group.ballots
    assert table is not None
    excluded = np.array([worker in out for worker in table.workers], bool)
    agree, countable = comparison_counts(table, excluded)
    kept = {worker: (int(agree[code]), int(countable[code])) for code, worker in enumerate(table.workers)}
    return replace(group, excluded=digest, kept=kept)


def _out_digest(workers: Iterable[int], out: set[int]) -> str:
    return inputs_digest(sorted(set(workers) & out))


def _stored_read(row: TopicVotes) -> VoteSums:
    workers = {entry[0]: tuple(entry[1:7]) for entry in row.workers}
    kept = {entry[0]: (entry[7], entry[8]) for entry in row.workers}
    return VoteSums(watermark=row.watermark, workers=workers, excluded=row.excluded, kept=kept)


def _groups_store(campaign_id: int, known: dict[int, tuple[str, str]], groups: dict[int | None, VoteSums]) -> None:
    """Store the topics' sums this run summed, where they differ from the stored ones (`known`:
    each stored topic's watermark and digest of who was out); forget those of topics without a
    counted vote now."""
    now = timezone.now()
    rows = [
        TopicVotes(
            topic_id=topic,
            watermark=group.watermark,
            excluded=group.excluded,
            workers=[
                [worker, *sums, *(group.kept or {}).get(worker, (0, 0))] for worker, sums in group.workers.items()
            ],
            computed_at=now,
        )
        for topic, group in groups.items()
        if topic is not None and group.ballots is not None and known.get(topic) != (group.watermark, group.excluded)
    ]
    if rows:
        TopicVotes.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["topic"],
            update_fields=["watermark", "excluded", "workers", "computed_at"],
        )
    if set(known) - set(groups):
        TopicVotes.objects.filter(topic_id__in=set(known) - set(groups)).delete()
