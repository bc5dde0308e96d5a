"""Training the classifier on the study's majority labels and deciding every proposition.

`classifier_train` fits `annotation.suitability.classifier` on the sampled propositions with
a majority label (ties left out), then writes one SuitabilityDecision per real proposition of
each topic whose Likert round is not built: the prediction and margin, whether it was held
out, the study's majority label if it has one, the known-weak rule, and the final label
(a verification beats an expert label beats the prediction). Verifications of an earlier run
are kept: they are a person's word about the proposition, not about the model."""

from django.db import transaction
from django.utils import timezone

from annotation.models import Campaign, Proposition
from annotation.suitability.decisions import final_label
from annotation.suitability.features import FEATURE_NAMES, features, known_weak
from annotation.suitability.models import ClassifierRun, SuitabilityDecision, SuitabilityStudy
from annotation.suitability.selectors import topics_filterable
from annotation.suitability.studies import study_agreement
from config.errors import ApplicationError


def _row(proposition: Proposition) -> list[float]:
    return features(
        subject=proposition.subject,
        relation=proposition.relation,
        object=proposition.object,
        confidence=proposition.confidence,
    )


@transaction.atomic
def classifier_train(
    *, campaign_id: int, seed: int = 0, test_share: float = 0.3, target_precision: float = 0.9, by=None
) -> ClassifierRun:
    campaign = Campaign.objects.select_for_update().get(pk=campaign_id)
    study = SuitabilityStudy.objects.select_for_update().filter(campaign=campaign).first()
    if study is None:
        raise ApplicationError(
            f"Campaign {campaign.slug!r} has no suitability study: draw a sample first.", code="no_study"
        )
    # Imported here: scikit-learn (and the SciPy it loads) costs every Django process about a
    # second of CPU at start-up, and only training needs it (config.urls reaches this module).
    from annotation.suitability import classifier

    majority = {pid: label for pid, label in study_agreement(study).majority.items() if label is not None}
    labelled = list(Proposition.objects.filter(pk__in=list(majority)).order_by("pk"))
    try:
        training = classifier.train(
            [_row(p) for p in labelled],
            [int(majority[p.pk]) for p in labelled],
            seed=seed,
            test_share=test_share,
            target_precision=target_precision,
        )
    except ValueError as error:
        raise ApplicationError(f"Cannot train yet: {error}", code="too_few_labels") from error
    held_out = {labelled[i].pk: m for i, m in zip(training.held_out, training.held_out_margins, strict=True)}
    run = ClassifierRun.objects.create(
        study=study,
        trained_by=by,
        parameters={
            "seed": seed,
            "test_share": test_share,
            "target_precision": target_precision,
            "features": list(FEATURE_NAMES),
            "weights_tried": training.tried,
            "suitable_weight": training.model.suitable_weight,
            "model": training.model.as_dict(),
            "train_size": len(labelled) - len(held_out),
        },
        metrics={
            "held_out": training.held_out_metrics.as_dict(),
            "held_out_margins": [[held_out[pid], int(majority[pid])] for pid in sorted(held_out)],
        },
    )
    _decisions_write(run=run, campaign=campaign, model=training.model, majority=majority, held_out=set(held_out))
    return run


def _decisions_write(*, run, campaign, model, majority, held_out) -> None:
    topics = topics_filterable(campaign.topics.all())
    propositions = list(
        Proposition.objects.filter(topic__in=topics, trap_kind=Proposition.TrapKind.NONE).order_by("pk")
    )
    if not propositions:
        return
    margins = model.margins([_row(p) for p in propositions])
    earlier = {
        d.proposition_id: d
        for d in SuitabilityDecision.objects.select_for_update().filter(proposition__in=propositions)
    }
    now = timezone.now()
    create: list[SuitabilityDecision] = []
    update: list[SuitabilityDecision] = []
    for proposition, margin in zip(propositions, margins, strict=True):
        decision = earlier.get(proposition.pk) or SuitabilityDecision(proposition=proposition)
        decision.run = run
        decision.margin = float(margin)
        decision.predicted_suitable = bool(margin >= 0)
        decision.held_out = proposition.pk in held_out
        decision.expert_label = majority.get(proposition.pk)
        decision.rule = known_weak(
            subject=proposition.subject, relation=proposition.relation, object=proposition.object
        )
        decision.final_suitable, decision.source = final_label(
            predicted=decision.predicted_suitable, expert=decision.expert_label, verified=decision.verified_label
        )
        decision.decided_at = now
        (update if decision.pk else create).append(decision)
    SuitabilityDecision.objects.bulk_create(create, batch_size=2000)
    SuitabilityDecision.objects.bulk_update(
        update,
        [
            "run",
            "margin",
            "predicted_suitable",
            "held_out",
            "expert_label",
            "rule",
            "final_suitable",
            "source",
            "decided_at",
        ],
        batch_size=2000,
    )
