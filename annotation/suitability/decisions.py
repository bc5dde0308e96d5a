"""The verification queue, verifying, applying the filter, and what the filter did.

Queue: the latest run's predicted negatives that have neither an expert label nor a
verification, least certain first (`verification.queue_order`), after the propositions a
known-weak rule sends to a person whatever the prediction (a bare pronoun argument). The
budget is ⌈budget_share × predicted negatives without an expert label⌉ verifications.

Applying (`decisions_apply`) makes the final labels effective: `removed` = not suitable, for
the topics whose Likert round is not built. A topic whose round is built is refused: its
tasks are fixed, and a filter would no longer change what they ask."""

from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from annotation.models import Campaign, Proposition, Topic
from annotation.suitability import verification
from annotation.suitability.models import ClassifierRun, SuitabilityDecision, SuitabilityStudy
from annotation.suitability.selectors import topics_built, topics_filterable
from config.errors import Conflict, NotFound


class FilterClosed(Conflict):
    code = "likert_round_built"


def _built_refusal(*, campaign: Campaign, keys: list[str]) -> FilterClosed:
    return FilterClosed(
        f"The Likert round of topic{'s' if len(keys) > 1 else ''} {', '.join(keys)} of campaign {campaign.slug!r} is "
        "built already: its tasks are fixed, so suitability filtering can no longer change what it asks. Filter "
        "before publishing, or import the propositions under a new topic key.",
        details={"topics": keys},
    )


def final_label(*, predicted: bool, expert: bool | None, verified: bool | None) -> tuple[bool, str]:
    """The label a decision takes effect with, and its source: a verification beats an expert
    label beats the prediction. Training and verifying both use it; it lives here, not with
    the classifier, so verifying and applying do not import scikit-learn."""
    if verified is not None:
        return verified, SuitabilityDecision.Source.VERIFIED
    if expert is not None:
        return expert, SuitabilityDecision.Source.EXPERT
    return predicted, SuitabilityDecision.Source.CLASSIFIER


def latest_run(study: SuitabilityStudy) -> ClassifierRun | None:
    return study.runs.order_by("-trained_at", "-id").first()


def _open_decisions(campaign: Campaign) -> QuerySet[SuitabilityDecision]:
    return SuitabilityDecision.objects.filter(proposition__topic__in=topics_filterable(campaign.topics.all()))


def queue(*, campaign: Campaign) -> list[SuitabilityDecision]:
    """Every decision waiting for a person, in the order to verify them."""
    pending = list(
        _open_decisions(campaign)
        .filter(expert_label__isnull=True, verified_label__isnull=True)
        .exclude(predicted_suitable=True, rule="")
        .select_related("proposition__topic")
    )
    ruled = sorted((d for d in pending if d.predicted_suitable), key=lambda d: d.proposition_id)
    negatives = {d.proposition_id: d for d in pending if not d.predicted_suitable}
    return ruled + [negatives[pid] for pid in verification.queue_order({k: d.margin for k, d in negatives.items()})]


@transaction.atomic
def verification_record(*, campaign_id: int, proposition_id: int, by, suitable: bool) -> SuitabilityDecision:
    """A person's word on one decided proposition of the campaign: confirms an unsuitable
    prediction (suitable=False) or corrects it (suitable=True)."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign_id)
    decision = (
        SuitabilityDecision.objects.select_for_update()
        .filter(proposition_id=proposition_id, proposition__topic__campaign=campaign)
        .select_related("proposition__topic")
        .first()
    )
    if decision is None:
        raise NotFound(
            f"Proposition {proposition_id} has no suitability decision in campaign {campaign.slug!r}.",
            code="no_decision",
            details={"field": "proposition"},
        )
    topic = decision.proposition.topic
    if topics_built(Topic.objects.filter(pk=topic.pk)).exists():
        raise _built_refusal(campaign=campaign, keys=[topic.key])
    decision.verified_label = suitable
    decision.verified_by = by
    decision.verified_at = timezone.now()
    decision.final_suitable, decision.source = final_label(
        predicted=decision.predicted_suitable, expert=decision.expert_label, verified=suitable
    )
    decision.save(
        update_fields=["verified_label", "verified_by", "verified_at", "final_suitable", "source", "decided_at"]
    )
    return decision


@dataclass(frozen=True)
class Applied:
    removed: int
    kept: int
    topics: list[str] = field(default_factory=list)


@transaction.atomic
def decisions_apply(*, campaign_id: int, topic_keys: list[str] | None = None) -> Applied:
    """Make the final labels effective for the named topics (default: every topic whose
    Likert round is not built). Refused, with nothing written, when a named topic's round is
    built or when no topic is left to filter."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign_id)
    topics = campaign.topics.select_for_update().all()
    if topic_keys:
        unknown = sorted(set(topic_keys) - set(topics.filter(key__in=topic_keys).values_list("key", flat=True)))
        if unknown:
            raise NotFound(f"Campaign {campaign.slug!r} has no topic {', '.join(unknown)}.", code="no_topic")
        topics = topics.filter(key__in=topic_keys)
        built = sorted(topics_built(campaign.topics.filter(key__in=topic_keys)).values_list("key", flat=True))
        if built:
            raise _built_refusal(campaign=campaign, keys=built)
    open_topics = list(topics_filterable(campaign.topics.filter(pk__in=topics.values("pk"))))
    if not open_topics:
        raise _built_refusal(
            campaign=campaign, keys=sorted(topics_built(campaign.topics.all()).values_list("key", flat=True))
        )
    decisions = SuitabilityDecision.objects.select_for_update().filter(proposition__topic__in=open_topics)
    now = timezone.now()
    removed = decisions.filter(final_suitable=False).update(removed=True, applied_at=now)
    kept = decisions.filter(final_suitable=True).update(removed=False, applied_at=now)
    return Applied(removed=removed, kept=kept, topics=sorted(t.key for t in open_topics))


@dataclass(frozen=True)
class FilterSummary:
    propositions: int  # real propositions of the campaign
    decided: int
    predicted_negatives: int
    expert_labelled: int
    removed: int  # applied
    to_remove: int  # final label unsuitable, applied or not
    share_removed: float | None  # removed / propositions
    verified: int
    confirmed: int
    corrected: int
    budget: int
    queue_left: int
    held_out: dict
    estimate: verification.Estimate | None
    applied: bool


def filter_summary(*, campaign: Campaign) -> FilterSummary:
    """The filter's figures: counts in one aggregate query, margins read only for the
    verified negatives (a person's pace bounds them), so the campaign page stays cheap."""
    propositions = Proposition.objects.filter(topic__campaign=campaign, trap_kind=Proposition.TrapKind.NONE).count()
    study = SuitabilityStudy.objects.filter(campaign=campaign).first()
    run = latest_run(study) if study is not None else None
    decisions = SuitabilityDecision.objects.filter(proposition__topic__campaign=campaign)
    classified_negative = Q(expert_label__isnull=True, predicted_suitable=False)
    counts = decisions.aggregate(
        decided=Count("pk"),
        predicted_negatives=Count("pk", filter=Q(predicted_suitable=False)),
        expert_labelled=Count("pk", filter=Q(expert_label__isnull=False)),
        removed=Count("pk", filter=Q(removed=True)),
        to_remove=Count("pk", filter=Q(final_suitable=False)),
        verified=Count("pk", filter=Q(verified_label__isnull=False)),
        classified_negatives=Count("pk", filter=classified_negative),
        confirmed=Count("pk", filter=classified_negative & Q(verified_label=False)),
        corrected=Count("pk", filter=classified_negative & Q(verified_label=True)),
        queue_left=Count(
            "pk",
            filter=Q(expert_label__isnull=True, verified_label__isnull=True)
            & (Q(predicted_suitable=False) | ~Q(rule="")),
        ),
        applied=Count("pk", filter=Q(applied_at__isnull=False)),
    )
    verified_margins = list(
        decisions.filter(classified_negative, verified_label__isnull=False).values_list("margin", flat=True)
    )
    unverified = counts["classified_negatives"] - len(verified_margins)
    estimate = None
    if run is not None:
        estimate = verification.precision_estimate(
            confirmed=counts["confirmed"],
            corrected=counts["corrected"],
            unverified=unverified,
            verified_margins=verified_margins,
            held_out=[(m, label) for m, label in run.metrics.get("held_out_margins", [])],
        )
    share = study.budget_share if study is not None else 0.2
    return FilterSummary(
        propositions=propositions,
        decided=counts["decided"],
        predicted_negatives=counts["predicted_negatives"],
        expert_labelled=counts["expert_labelled"],
        removed=counts["removed"],
        to_remove=counts["to_remove"],
        share_removed=counts["removed"] / propositions if propositions else None,
        verified=counts["verified"],
        confirmed=counts["confirmed"],
        corrected=counts["corrected"],
        budget=verification.budget(negatives=counts["classified_negatives"], share=share),
        queue_left=counts["queue_left"],
        held_out=run.metrics.get("held_out", {}) if run is not None else {},
        estimate=estimate,
        applied=counts["applied"] > 0,
    )
