"""The pure modules against hand-computed and published values (no database)."""

import numpy as np
import pytest

from annotation.suitability import agreement, classifier, verification
from annotation.suitability.features import FEATURE_NAMES, bare_pronoun, features, known_weak
from annotation.suitability.studies import allocation
from tests.annotation.suitability.conftest import labelled_rows

# Fleiss (1971) as tabulated on Wikipedia's "Fleiss' kappa" page: 10 subjects, 14 raters,
# 5 categories; P̄ = 0.378, P_e = 0.213, κ = 0.210.
FLEISS_TABLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_fleiss_kappa_on_the_published_table():
    assert agreement.fleiss_kappa_counts(np.array(FLEISS_TABLE)) == pytest.approx(0.2099, abs=5e-4)


def test_fleiss_kappa_of_long_labels_matches_the_table():
    labels = [
        (item, f"r{item}-{category}-{k}", category)
        for item, row in enumerate(FLEISS_TABLE)
        for category, count in enumerate(row)
        for k in range(count)
    ]
    assert agreement.fleiss_kappa(labels) == pytest.approx(agreement.fleiss_kappa_counts(np.array(FLEISS_TABLE)))


def test_three_experts_by_hand():
    # item 1: S S S (P=1); items 2 and 3: two against one (P=1/3 each). P̄ = 5/9;
    # 6 of 9 labels S: P_e = (2/3)² + (1/3)² = 5/9, so κ = 0.
    labels = [
        (1, "a", True), (1, "b", True), (1, "c", True),
        (2, "a", True), (2, "b", True), (2, "c", False),
        (3, "a", False), (3, "b", False), (3, "c", True),
    ]  # fmt: skip
    assert agreement.percent_agreement(labels) == pytest.approx(5 / 9)
    assert agreement.fleiss_kappa(labels) == pytest.approx(0.0, abs=1e-12)
    assert agreement.majority(labels) == {1: True, 2: True, 3: False}


def test_two_experts_by_hand():
    # (S,S) (U,U) (S,U) (S,S): P̄ = 3/4; p_S = 5/8: P_e = 34/64; κ = (3/4 − 34/64) / (30/64) = 7/15.
    # Krippendorff's nominal α: D_o = 2/8, D_e = 2·5·3/(8·7) = 30/56; α = 1 − D_o/D_e = 8/15.
    labels = [(1, "a", 1), (1, "b", 1), (2, "a", 0), (2, "b", 0), (3, "a", 1), (3, "b", 0), (4, "a", 1), (4, "b", 1)]
    assert agreement.percent_agreement(labels) == pytest.approx(0.75)
    assert agreement.fleiss_kappa(labels) == pytest.approx(7 / 15)
    assert agreement.krippendorff_alpha(labels) == pytest.approx(8 / 15)
    assert agreement.majority(labels)[3] is None  # a tie


def test_single_labels_give_no_agreement():
    labels = [(1, "a", 1), (2, "a", 0)]
    assert agreement.percent_agreement(labels) is None
    assert agreement.fleiss_kappa(labels) is None
    assert agreement.krippendorff_alpha(labels) is None
    assert agreement.majority(labels) == {1: 1, 2: 0}


def test_features_by_hand():
    row = dict(
        zip(
            FEATURE_NAMES,
            features(subject="he", relation="was elected", object="mayor of Pittsburgh", confidence=0.42),
            strict=True,
        )
    )
    assert row["confidence"] == 0.42
    assert (row["subject_tokens"], row["relation_tokens"], row["object_tokens"]) == (1, 2, 3)
    assert row["subject_bare_pronoun"] == 1 and row["subject_pronoun_start"] == 1
    assert row["object_bare_pronoun"] == 0 and row["object_capitalised"] == 0
    assert row["relation_verb_head"] == 1  # "was"
    assert row["prepositions_share"] == pytest.approx(1 / 6)  # "of" among 6 words
    clause = dict(
        zip(
            FEATURE_NAMES,
            features(
                subject="Sandy",
                relation="aspires",
                object="to become a banker , on the grounds that it is lucrative",
                confidence=None,
            ),
            strict=True,
        )
    )
    assert clause["object_clause_marker"] == 1 and clause["object_starts_to"] == 1 and clause["object_long"] == 1
    assert clause["confidence_missing"] == 1 and clause["subject_capitalised"] == 1
    assert bare_pronoun("none of which") and not bare_pronoun("the town")
    assert known_weak(subject="Mothra", relation="named", object="it") == "bare_pronoun"
    assert known_weak(subject="Mothra", relation="retired", object="to Infant Island") == ""


def test_negative_metrics_by_hand():
    metrics = classifier.negative_metrics([0, 0, 1, 1, 0], [0, 1, 0, 1, 0])
    assert (metrics.true_negatives, metrics.false_negatives, metrics.unsuitable) == (2, 1, 3)
    assert metrics.precision == pytest.approx(2 / 3) and metrics.recall == pytest.approx(2 / 3)
    assert classifier.negative_metrics([1, 1], [1, 1]).precision is None


def test_margins_are_signed_distances():
    model = classifier.Model(mean=[0.0, 0.0], scale=[1.0, 1.0], coef=[3.0, 4.0], intercept=-5.0, suitable_weight=1.0)
    assert model.margins([[1.0, 2.0], [0.0, 0.0]]) == pytest.approx([6 / 5, -1.0])
    assert classifier.Model.from_dict(model.as_dict()) == model


def test_the_classifier_on_the_shipped_tuples():
    rows = labelled_rows()
    x = [
        features(subject=r["subject"], relation=r["relation"], object=r["object"], confidence=float(r["confidence"]))
        for r in rows
    ]
    y = [int(r["suitable"]) for r in rows]
    training = classifier.train(x, y, seed=0)
    metrics = training.held_out_metrics
    assert abs(metrics.n - 0.3 * len(rows)) <= 1
    # Better than removing everything (precision = the share unsuitable, 236/320 = 0.74).
    assert metrics.precision > 0.8 and metrics.recall > 0.5
    chosen = next(t for t in training.tried if t["suitable_weight"] == training.model.suitable_weight)
    reaching = [t for t in training.tried if (t["precision"] or 0) >= classifier.DEFAULT_TARGET_PRECISION]
    if reaching:
        assert chosen == reaching[0]  # the smallest weight that reaches the target
    else:
        assert chosen["precision"] == max(t["precision"] or 0 for t in training.tried)
    # Weighting the suitable class more never removes more suitable propositions in CV here.
    false_negatives = [t["false_negatives"] for t in training.tried]
    assert false_negatives[-1] <= false_negatives[0]


def test_training_refuses_too_few_labels():
    with pytest.raises(ValueError, match="at least 10"):
        classifier.train([[0.0]] * 6, [0, 1, 0, 1, 0, 1], seed=0)


def test_queue_order_and_budget_by_hand():
    assert verification.queue_order({1: -0.5, 2: -0.1, 3: -2.0, 4: -0.1}) == [2, 4, 1, 3]
    assert verification.budget(negatives=11, share=0.2) == 3
    assert verification.budget(negatives=0, share=0.2) == 0


def test_precision_estimate_by_hand():
    held_out = [(-2.0, 0), (-1.5, 0), (-1.0, 1), (-0.5, 0), (-0.2, 1), (0.5, 1)]
    start = verification.precision_estimate(
        confirmed=0, corrected=0, unverified=10, verified_margins=[], held_out=held_out
    )
    assert start.precision == pytest.approx(4 / 7)  # (3 unsuitable + 1) / (5 negatives + 2)
    later = {
        "confirmed": 3,
        "corrected": 1,
        "unverified": 6,
        "verified_margins": [-0.1, -0.2, -0.3, -0.6],
    }
    # Only 3 held-out negatives lie beyond 0.6 (< 5): all of them count, p_U = 4/7.
    assert verification.precision_estimate(**later, held_out=held_out).precision == pytest.approx(5 / 7)
    # With 3 enough: p_U = (2 + 1) / (3 + 2) = 3/5; (3 + 6·3/5) / 9 = 11/15.
    assert verification.precision_estimate(**later, held_out=held_out, min_held_out=3).precision == pytest.approx(
        11 / 15
    )
    done = verification.precision_estimate(
        confirmed=4, corrected=2, unverified=0, verified_margins=[-1.0], held_out=held_out
    )
    assert done.precision == 1.0


def test_allocation_by_hand():
    assert allocation({1: 50, 2: 30, 3: 20}, 10) == {1: 5, 2: 3, 3: 2}
    assert allocation({1: 1, 2: 1, 3: 1}, 2) == {1: 1, 2: 1, 3: 0}
    assert allocation({1: 2, 2: 0}, 5) == {1: 2, 2: 0}
