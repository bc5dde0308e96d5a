"""Why a topic's comparison rounds stopped (or what they wait for), how the final order compares
with the Likert-only one, which neighbours in the ranking are near-equal, and whether a pair
budget is big enough to beat the Likert means at all. Selectors: they read, never write.

The stop rules are the pipeline's (ranking/pipeline.py `_stop_reason`): settled when the last
`stop_stable_refits` refits each had Spearman ρ ≥ `stop_spearman` with the one before, else
done when the pairs asked reached the pair budget (the campaign's share of all pairs among the
compared propositions, plus extensions: ranking/budget.py).
"""

import math
from dataclasses import dataclass

from django.db.models import Count, Sum

from annotation.models import Batch, Campaign, Proposition, Task, Topic
from ranking.budget import pair_budget_extra
from ranking.models import PairBudgetExtension, PropositionScore, RankingSnapshot
from ranking.pipeline import pair_budget
from ranking.stats import spearman

# Measured with the simulated crowd (benchmarks/budget_bench.py, 8 seeds, 30/60/112 items): the
# final TrueSkill order beat the plain Likert mean, on average and in most runs at every size,
# from about this many comparison votes per compared proposition (each pair an assignment
# orders is one vote for each of its two propositions). Below it, it lost at every size.
VOTES_PER_ITEM_NEEDED = 60
# Neighbours whose μ differ by less than this share of σ are shown as near-equal (≈): the
# ranking cannot tell them apart, whatever their ranks say.
NEAR_EQUAL_SIGMA = 0.1


@dataclass(frozen=True)
class Stopping:
    reason: str  # settled | budget | too_few | running | not_started
    sentence: str
    spearman_previous: float | None  # the latest refit's ρ with the one before
    stop_spearman: float
    pairs_asked: int
    pair_budget: int | None  # None before the compared propositions are known
    pairs_added: int  # by extensions
    likert_spearman: float | None  # ρ of the final order with the Likert-only order, compared propositions
    votes_per_item: float | None  # comparison votes per compared proposition so far
    extendable: bool  # the budget may still be extended (the topic is not done)

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def topic_stopping(topic: Topic) -> Stopping:
    """Why `topic` stopped, or where its comparison rounds stand."""
    return topics_stopping(topic.campaign, [topic])[topic.pk]


def topics_stopping(campaign: Campaign, topics: list[Topic]) -> dict[int, Stopping]:
    """`topic_stopping` of each of the campaign's `topics`, by topic id, in five queries
    whatever their number (the all-topics zip's README says it for every topic)."""
    ids = [topic.pk for topic in topics]
    scores: dict[int, list[tuple]] = {pk: [] for pk in ids}
    for topic_id, *row in PropositionScore.objects.filter(
        proposition__topic_id__in=ids, in_comparisons=True
    ).values_list("proposition__topic_id", "proposition_id", "likert_mean", "mu", "comparisons"):
        scores[topic_id].append(tuple(row))
    added = dict(
        PairBudgetExtension.objects.filter(topic_id__in=ids)
        .values("topic_id")
        .annotate(total=Sum("pairs"))
        .values_list("topic_id", "total")
    )
    asked = dict.fromkeys(ids, 0)
    sizes = (
        Task.objects.filter(batch__topic_id__in=ids, batch__kind=Batch.Kind.COMPARISON)
        .exclude(batch__status=Batch.Status.CREATED)
        .annotate(size=Count("items"))
        .values_list("batch__topic_id", "size")
    )
    for topic_id, size in sizes:  # each task of g propositions asks C(g, 2) pairs (pipeline.pairs_asked)
        asked[topic_id] += size * (size - 1) // 2
    recent: dict[int, list[float | None]] = {pk: [] for pk in ids}
    snapshots = RankingSnapshot.objects.filter(topic_id__in=ids).order_by("topic_id", "-number")
    for topic_id, rho in snapshots.values_list("topic_id", "spearman_previous"):
        if len(recent[topic_id]) < campaign.stop_stable_refits:
            recent[topic_id].append(rho)
    return {
        topic.pk: _stopping(
            topic,
            campaign,
            scores=scores[topic.pk],
            added=added.get(topic.pk) or 0,
            asked=asked[topic.pk],
            recent=recent[topic.pk],
        )
        for topic in topics
    }


def _stopping(
    topic: Topic, campaign: Campaign, *, scores: list[tuple], added: int, asked: int, recent: list[float | None]
) -> Stopping:
    items = len(scores)
    budget = pair_budget(campaign, items) + added if items else None
    rho = recent[0] if recent else None
    likert = {pid: mean for pid, mean, _mu, _n in scores if mean is not None}
    final = {pid: mu for pid, _mean, mu, _n in scores if mu is not None}
    votes = sum(n for *_rest, n in scores) / items if items else None
    settled = len(recent) == campaign.stop_stable_refits and all(
        value is not None and value >= campaign.stop_spearman for value in recent
    )
    reason, sentence = _reason(topic, campaign, settled=settled, rho=rho, asked=asked, budget=budget, items=items)
    return Stopping(
        reason=reason,
        sentence=sentence,
        spearman_previous=rho,
        stop_spearman=campaign.stop_spearman,
        pairs_asked=asked,
        pair_budget=budget,
        pairs_added=added,
        likert_spearman=spearman(final, likert) if final else None,
        votes_per_item=votes,
        extendable=topic.state != Topic.State.DONE,
    )


def _reason(topic, campaign, *, settled, rho, asked, budget, items) -> tuple[str, str]:
    shown = "—" if rho is None else f"{rho:.3f}"
    line = f"ρ ≥ {campaign.stop_spearman:g} for {campaign.stop_stable_refits} refits"
    if topic.state == Topic.State.DONE:
        if items < 2:
            return "too_few", "Done without comparisons: fewer than two propositions to compare."
        if settled:
            return (
                "settled",
                f"Settled: the ranking stopped moving ({line}; last ρ = {shown}), after {asked} of {budget} pairs.",
            )
        return (
            "budget",
            f"Pair budget spent ({asked} of {budget} pairs) at ρ = {shown}, before it settled ({line}): "
            "the ranking may still have moved with more comparisons.",
        )
    if topic.state == Topic.State.COMPARISONS:
        return (
            "running",
            f"Comparing: {asked} of {budget} pairs asked, last ρ = {shown}; it stops when {line}, or when the "
            "budget is spent.",
        )
    return "not_started", "The comparison rounds start when the Likert round is complete."


def near_equal_flags(rows: list[dict]) -> list[bool]:
    """For each ranking row (best first, with `mu` and `sigma`): whether its μ is within
    NEAR_EQUAL_SIGMA × σ of the row above it (the larger σ of the two)."""
    flags = [False] * len(rows)
    for index in range(1, len(rows)):
        above, row = rows[index - 1], rows[index]
        if None in (above["mu"], row["mu"], above["sigma"], row["sigma"]):
            continue
        flags[index] = abs(above["mu"] - row["mu"]) < NEAR_EQUAL_SIGMA * max(above["sigma"], row["sigma"])
    return flags


def votes_per_item_planned(campaign: Campaign, items: int, *, pairs_added: int = 0) -> float:
    """Comparison votes per proposition the pair budget buys for `items` compared propositions:
    each pair asked is ordered by `assignments_per_hit` workers, one vote for each of two."""
    if items < 2:
        return 0.0
    return 2 * (pair_budget(campaign, items) + pairs_added) * campaign.assignments_per_hit / items


def budget_warning(topic: Topic) -> str | None:
    """A sentence when the topic's pair budget buys fewer votes per compared proposition than
    the comparison rounds need to beat the Likert means (VOTES_PER_ITEM_NEEDED); else None."""
    campaign = topic.campaign
    propositions = topic.propositions.filter(trap_kind=Proposition.TrapKind.NONE).count()
    items = min(campaign.top_k, propositions)  # ties at the cut may add a few
    if items < 2:
        return None
    votes = votes_per_item_planned(campaign, items, pairs_added=pair_budget_extra(topic))
    if votes >= VOTES_PER_ITEM_NEEDED:
        return None
    share = VOTES_PER_ITEM_NEEDED * items / (2 * campaign.assignments_per_hit * items * (items - 1) / 2)
    return (
        f"Topic {topic.key!r}: its pair budget ({campaign.pair_budget_fraction:.0%} of the pairs among {items} "
        f"compared propositions) buys about {votes:.0f} comparison votes per proposition; the simulated crowd "
        f"needed about {VOTES_PER_ITEM_NEEDED} for the final ranking to beat the plain Likert means "
        f"(benchmarks/budget_bench.py). Raise the pair budget share to {math.ceil(share * 100)}% or extend the "
        "topic's budget on its ranking page, or expect the Likert order to be as good."
    )
