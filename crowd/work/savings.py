"""What the suitability filter saves the crowd budget, in the campaign's own channel terms.

Tasks avoided, per topic: the Likert tasks its round has (or would have) with every real
proposition, minus those with the filter's removed propositions left out — both counted by
`annotation.batching.likert_plan` itself, with the campaign's group size, trap rule and trap
kinds, so the traps a smaller round needs less are counted too.

Money, by the channel's unit of payment (crowd.marketplaces.base.PaymentUnit):
* per assignment (MTurk): tasks avoided × assignments per HIT × the channel's cost of one
  assignment (the Likert reward plus its fee, `policy.assignment_cost`), as the ledger commits;
* per submission (Prolific): the sessions avoided — each round needs ⌈slots / tasks per
  session⌉ places, as `crowd.marketplaces.prolific.study_opening.study_places` counts a batch's —
  × the cost of one submission (a session's reward, tasks per session × the Likert reward,
  plus the fee, `policy.submission_cost`);
* nothing (participant links): no money, only tasks.
"""

import math
import random
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, Q

from annotation.batching import likert_plan, trap_share
from annotation.models import Batch, Campaign, Proposition
from annotation.suitability.selectors import REMOVED
from annotation.text import normalize_text
from crowd.marketplaces.base import PaymentUnit
from crowd.marketplaces.registry import channel_policy

ZERO = Decimal("0.00")


@dataclass(frozen=True)
class Saving:
    propositions: int
    removed: int
    tasks_with_all: int
    tasks_after_filter: int
    tasks_avoided: int
    unit: str
    unit_cost: Decimal  # one assignment or one submission, fee included
    units_avoided: int  # assignments or submissions
    money: Decimal
    channel: str
    fees_wording: str


def likert_task_count(*, campaign: Campaign, real: int, subtle_traps: int) -> int:
    """How many Likert tasks a topic of `real` propositions gets (annotation.batching's plan)."""
    if real == 0:
        return 0
    obvious = [t for t in campaign.obvious_traps if isinstance(t, str) and normalize_text(t)]
    pools = (
        [list(range(-len(obvious), 0)), list(range(-(10**6), -(10**6) + subtle_traps))]
        if campaign.trap_rate > 0
        else []
    )
    plan = likert_plan(
        range(real),
        group_size=campaign.likert_group_size,
        trap_rate=trap_share(
            trap_rate=campaign.trap_rate, tasks_per_worker=campaign.tasks_per_session, min_traps=campaign.qc_min_traps
        ),
        trap_pools=pools,
        rng=random.Random(0),
        traps_per_kind=max(1, campaign.qc_min_traps),
    )
    return len(plan)


def _units(*, campaign: Campaign, tasks: int, per_session: bool) -> int:
    slots = tasks * campaign.assignments_per_hit
    if not per_session:
        return slots
    if tasks == 0:
        return 0
    return max(1, math.ceil(slots / max(1, min(campaign.tasks_per_session, tasks))))


def suitability_saving(*, campaign: Campaign) -> Saving:
    """The filter's saving on the campaign's Likert rounds (see the module docstring)."""
    policy = channel_policy(campaign.channel)
    rows = (
        Proposition.objects.filter(topic__campaign=campaign)
        .values("topic_id")
        .annotate(
            real=Count("id", filter=Q(trap_kind=Proposition.TrapKind.NONE)),
            removed=Count("id", filter=Q(trap_kind=Proposition.TrapKind.NONE) & REMOVED),
            subtle=Count("id", filter=Q(trap_kind=Proposition.TrapKind.SUBTLE)),
        )
        .order_by("topic_id")
    )
    propositions = removed = with_all = after = units_all = units_after = 0
    per_session = policy.unit == PaymentUnit.SUBMISSION
    for row in rows:
        full = likert_task_count(campaign=campaign, real=row["real"], subtle_traps=row["subtle"])
        kept = likert_task_count(campaign=campaign, real=row["real"] - row["removed"], subtle_traps=row["subtle"])
        propositions += row["real"]
        removed += row["removed"]
        with_all += full
        after += kept
        units_all += _units(campaign=campaign, tasks=full, per_session=per_session)
        units_after += _units(campaign=campaign, tasks=kept, per_session=per_session)
    reward = campaign.reward_for(Batch.Kind.LIKERT)
    if policy.unit == PaymentUnit.ASSIGNMENT:
        unit_cost = policy.assignment_cost(reward=reward, max_assignments=campaign.assignments_per_hit)
    elif per_session:
        unit_cost = policy.submission_cost(reward=reward * campaign.tasks_per_session)
    else:
        unit_cost = ZERO
    units_avoided = units_all - units_after
    return Saving(
        propositions=propositions,
        removed=removed,
        tasks_with_all=with_all,
        tasks_after_filter=after,
        tasks_avoided=with_all - after,
        unit=str(policy.unit),
        unit_cost=unit_cost,
        units_avoided=units_avoided,
        money=(units_avoided * unit_cost).quantize(Decimal("0.01")),
        channel=policy.short_name,
        fees_wording=policy.fees_wording,
    )
