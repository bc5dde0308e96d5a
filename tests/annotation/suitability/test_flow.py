"""The whole filter on the shipped CaRB tuples: sample, label, train, verify, apply; the
figures the app reports against an independent computation from the exported CSV."""

import csv
import io
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from annotation.batching import likert_tasks_build
from annotation.models import Batch, Proposition, TaskItem
from annotation.suitability.decisions import decisions_apply, filter_summary, queue, verification_record
from annotation.suitability.export import decisions_csv_write
from annotation.suitability.models import SuitabilityDecision
from annotation.suitability.studies import label_record, study_sample
from annotation.suitability.training import classifier_train
from crowd.hit_page.views import sample_content
from crowd.marketplaces.registry import channel_policy
from crowd.work.progress import campaign_progress
from crowd.work.savings import suitability_saving
from ranking.export import ranked_propositions

pytestmark = pytest.mark.django_db


def label_sample(study, gold, expert) -> None:
    for item in study.items.all():
        row = gold[item.proposition_id]
        suitable = row["suitable"] == "1"
        label_record(
            study_id=study.pk,
            proposition_id=item.proposition_id,
            expert=expert,
            suitable=suitable,
            reason="" if suitable else row["reason"],
        )


def run_filter(campaign, gold, *, verify_share=0.2):
    expert = get_user_model().objects.create_user("expert-1")
    study = study_sample(campaign_id=campaign.pk, size=200, seed=1)
    label_sample(study, gold, expert)
    classifier_train(campaign_id=campaign.pk, seed=0)
    summary = filter_summary(campaign=campaign)
    waiting = [d for d in queue(campaign=campaign) if not d.predicted_suitable]
    for decision in waiting[: round(verify_share * summary.budget / 0.2)]:
        verification_record(
            campaign_id=campaign.pk,
            proposition_id=decision.proposition_id,
            by=expert,
            suitable=gold[decision.proposition_id]["suitable"] == "1",
        )
    decisions_apply(campaign_id=campaign.pk)
    return filter_summary(campaign=campaign)


def exported(campaign) -> list[dict]:
    stream = io.StringIO()
    decisions_csv_write(campaign=campaign, stream=stream)
    return list(csv.DictReader(io.StringIO(stream.getvalue())))


def independent_estimate(rows: list[dict]) -> float:
    """The estimator of annotation.suitability.verification, written again from the CSV."""
    negatives = [r for r in rows if r["expert_label"] == "" and r["predicted_suitable"] == "0"]
    verified = [r for r in negatives if r["verified_label"] != ""]
    confirmed = sum(r["verified_label"] == "0" for r in verified)
    unverified = len(negatives) - len(verified)
    threshold = max((abs(float(r["margin"])) for r in verified), default=0.0)
    held = [r for r in rows if r["held_out"] == "1" and float(r["margin"]) < 0]
    beyond = [r for r in held if abs(float(r["margin"])) >= threshold]
    pool = beyond if len(beyond) >= 5 else held
    p_u = (sum(r["expert_label"] == "0" for r in pool) + 1) / (len(pool) + 2)
    return (confirmed + p_u * unverified) / (confirmed + unverified)


def test_reported_figures_equal_the_exported_decisions(campaign, gold):
    summary = run_filter(campaign, gold)
    rows = exported(campaign)

    assert len(rows) == len(gold) == summary.propositions
    removed = [r for r in rows if r["removed"] == "1"]
    assert summary.share_removed == pytest.approx(len(removed) / len(rows), abs=1e-12)
    held_negatives = [r for r in rows if r["held_out"] == "1" and r["predicted_suitable"] == "0"]
    held_precision = sum(r["expert_label"] == "0" for r in held_negatives) / len(held_negatives)
    assert summary.held_out["precision"] == pytest.approx(held_precision, abs=1e-12)
    assert summary.estimate.precision == pytest.approx(independent_estimate(rows), abs=1e-12)
    # Removed rows are kept, marked, and say who verified them.
    assert all(r["final_suitable"] == "0" for r in removed)
    assert {r["verified_by"] for r in rows if r["verified_label"] != ""} == {"expert-1"}

    # The truth, from the shipped labels the app never saw for unsampled tuples.
    true_precision = sum(gold[int(r["proposition_id"])]["suitable"] == "0" for r in removed) / len(removed)
    print(f"removed {len(removed)}/{len(rows)}; estimate {summary.estimate.precision:.3f}; true {true_precision:.3f}")
    assert abs(summary.estimate.precision - true_precision) < 0.1


def test_removed_propositions_reach_no_likert_task_and_the_saving_is_tasks_times_cost(campaign, gold):
    summary = run_filter(campaign, gold)
    saving = suitability_saving(campaign=campaign)
    removed_ids = set(
        SuitabilityDecision.objects.filter(proposition__topic__campaign=campaign, removed=True).values_list(
            "proposition_id", flat=True
        )
    )
    assert saving.removed == summary.removed == len(removed_ids) > 0

    built_tasks = 0
    for topic in campaign.topics.all():
        batch = likert_tasks_build(topic=topic, seed=topic.pk)
        built_tasks += batch.tasks.count()
    asked = set(TaskItem.objects.filter(task__batch__kind=Batch.Kind.LIKERT).values_list("proposition_id", flat=True))
    assert asked.isdisjoint(removed_ids)
    assert built_tasks == saving.tasks_after_filter
    # Nor in a ranking: they were never rated.
    ranked = {p.pk for topic in campaign.topics.all() for p in ranked_propositions(topic=topic)}
    assert ranked.isdisjoint(removed_ids) and len(ranked) == len(gold) - len(removed_ids)

    policy = channel_policy(campaign.channel)  # MTurk: per assignment
    per_assignment = policy.assignment_cost(reward=campaign.likert_reward, max_assignments=campaign.assignments_per_hit)
    expected = saving.tasks_avoided * campaign.assignments_per_hit * per_assignment
    assert saving.money == expected > Decimal("0")


def test_the_topic_card_and_the_task_preview_leave_removed_propositions_out(campaign, gold):
    run_filter(campaign, gold)
    for progress in campaign_progress(campaign):
        topic = progress.topic
        removed = set(
            SuitabilityDecision.objects.filter(proposition__topic=topic, removed=True).values_list(
                "proposition_id", flat=True
            )
        )
        real = topic.propositions.filter(trap_kind=Proposition.TrapKind.NONE).count()
        assert removed and progress.removed == len(removed) and progress.propositions == real - len(removed)
        sample = sample_content(topic=topic)
        assert sample is not None and removed.isdisjoint(statement.id for statement in sample.statements)
