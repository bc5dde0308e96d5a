"""The labelling study: a sample per campaign, stratified by topic, and the experts' labels.

`study_sample` draws n real propositions from the topics whose Likert round is not built,
each topic's share by the largest-remainder rule on its size, with `random.Random(seed)`;
`label_record` stores one expert's label of one sampled proposition (again: replaced)."""

import random
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, Q

from annotation.models import Campaign, Proposition
from annotation.suitability import agreement
from annotation.suitability.models import SuitabilityItem, SuitabilityLabel, SuitabilityStudy
from annotation.suitability.selectors import topics_filterable
from config.errors import ApplicationError, Conflict, NotFound

REASONS = [value for value, _ in SuitabilityLabel.Reason.choices if value]


def allocation(sizes: dict[int, int], n: int) -> dict[int, int]:
    """n split over strata in proportion to `sizes` (largest remainder, ties by key), never
    more than a stratum holds."""
    total = sum(sizes.values())
    n = min(n, total)
    if total == 0:
        return dict.fromkeys(sizes, 0)
    exact = {key: n * size / total for key, size in sizes.items()}
    shares = {key: int(value) for key, value in exact.items()}
    left = n - sum(shares.values())
    for key in sorted(sizes, key=lambda k: (-(exact[k] - shares[k]), k))[:left]:
        shares[key] += 1
    return shares


@transaction.atomic
def study_sample(*, campaign_id: int, size: int = 500, seed: int = 0, by=None) -> SuitabilityStudy:
    """The campaign's study with a fresh sample; refused once any label exists (the sample is
    what the labels are about) or when no topic can be filtered any more."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign_id)
    if size < 1:
        raise ApplicationError("The sample size must be at least 1.", code="sample_size", details={"field": "size"})
    if not 0 <= seed <= 2**31 - 1:
        raise ApplicationError("The seed must be from 0 to 2147483647.", code="sample_seed", details={"field": "seed"})
    study = SuitabilityStudy.objects.filter(campaign=campaign).first()
    if study is not None and study.labels.exists():
        raise Conflict(
            f"The suitability study of campaign {campaign.slug!r} has labels already: its sample is fixed.",
            code="study_labelled",
        )
    topics = topics_filterable(campaign.topics.all())
    sizes = dict(
        topics.annotate(n=Count("propositions", filter=_real("propositions__"))).values_list("pk", "n").order_by("pk")
    )
    if not sum(sizes.values()):
        raise ApplicationError(
            f"Campaign {campaign.slug!r} has no propositions to sample from a topic whose Likert round is not built.",
            code="nothing_to_sample",
        )
    rng = random.Random(seed)
    chosen: list[int] = []
    for topic_id, count in allocation(sizes, size).items():
        ids = list(
            Proposition.objects.filter(topic_id=topic_id, trap_kind=Proposition.TrapKind.NONE)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        chosen.extend(rng.sample(ids, count))
    rng.shuffle(chosen)
    if study is None:
        study = SuitabilityStudy.objects.create(campaign=campaign, sample_size=size, seed=seed, created_by=by)
    else:
        study.items.all().delete()
        study.sample_size, study.seed = size, seed
        study.save(update_fields=["sample_size", "seed"])
    SuitabilityItem.objects.bulk_create(
        SuitabilityItem(study=study, proposition_id=pid, position=index) for index, pid in enumerate(chosen)
    )
    return study


def _real(prefix: str = "") -> Q:
    return Q(**{f"{prefix}trap_kind": Proposition.TrapKind.NONE})


def study_of(campaign: Campaign) -> SuitabilityStudy:
    study = SuitabilityStudy.objects.filter(campaign=campaign).first()
    if study is None:
        raise NotFound(
            f"Campaign {campaign.slug!r} has no suitability study yet: draw a sample first.", code="no_study"
        )
    return study


@transaction.atomic
def label_record(
    *, study_id: int, proposition_id: int, expert, suitable: bool, reason: str = "", note: str = ""
) -> SuitabilityLabel:
    """One expert's label of a sampled proposition. An unsuitable label needs a reason, a
    suitable one has none; a proposition outside the sample is not found."""
    study = SuitabilityStudy.objects.select_for_update().get(pk=study_id)
    if not SuitabilityItem.objects.filter(study=study, proposition_id=proposition_id).exists():
        raise NotFound(
            f"Proposition {proposition_id} is not in the suitability sample of campaign {study.campaign.slug!r}.",
            code="not_in_sample",
            details={"field": "proposition"},
        )
    if suitable and reason:
        raise ApplicationError("A suitable proposition has no reason.", code="reason", details={"field": "reason"})
    if not suitable and reason not in REASONS:
        raise ApplicationError(
            f"An unsuitable proposition needs a reason, one of {', '.join(REASONS)}.",
            code="reason",
            details={"field": "reason"},
        )
    label, _ = SuitabilityLabel.objects.update_or_create(
        study=study,
        proposition_id=proposition_id,
        expert=expert,
        defaults={"suitable": suitable, "reason": reason, "note": note[:2000]},
    )
    return label


@dataclass(frozen=True)
class StudyAgreement:
    labelled: int  # sampled propositions with at least one label
    multiply_labelled: int  # with two or more
    experts: int
    percent: float | None
    fleiss_kappa: float | None
    krippendorff_alpha: float | None
    majority: dict[int, bool | None]  # proposition id → majority label (None: a tie)


def study_agreement(study: SuitabilityStudy) -> StudyAgreement:
    rows = [
        (pid, expert, suitable)
        for pid, expert, suitable in study.labels.values_list("proposition_id", "expert_id", "suitable")
    ]
    majority = agreement.majority(rows)
    per_item: dict[int, int] = {}
    for pid, _, _ in rows:
        per_item[pid] = per_item.get(pid, 0) + 1
    return StudyAgreement(
        labelled=len(per_item),
        multiply_labelled=sum(1 for n in per_item.values() if n >= 2),
        experts=len({expert for _, expert, _ in rows}),
        percent=agreement.percent_agreement(rows),
        fleiss_kappa=agreement.fleiss_kappa(rows),
        krippendorff_alpha=agreement.krippendorff_alpha(rows),
        majority={
            pid: (None if label is None else bool(label)) for pid, label in majority.items() if isinstance(pid, int)
        },
    )


def next_to_label(*, study: SuitabilityStudy, expert) -> SuitabilityItem | None:
    """The first sampled proposition this expert has not labelled, in sample order."""
    done = study.labels.filter(expert=expert).values("proposition_id")
    return study.items.exclude(proposition_id__in=done).select_related("proposition__topic").first()
