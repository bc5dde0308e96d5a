"""Worker quality control (crowd.quality): hand-computed values, invariants, and a
simulated crowd with spammers."""

import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from crowd.quality import (
    HitTimes,
    KindStats,
    QCPolicy,
    TimeReport,
    TrapStats,
    WorkerCorrelation,
    comparison_agreement,
    exclusion_reasons,
    exclusions,
    leave_one_out,
    leave_one_out_details,
    time_report,
    trap_report,
)
from tests.crowd.simulated_crowd import correlation_with_truth, simulated_crowd

# Three workers on four items:   i1 i2 i3 i4
#                             A   1  2  3  4
#                             B   2  2  4  4
#                             C   1  3  3  5
GRID = {"A": (1, 2, 3, 4), "B": (2, 2, 4, 4), "C": (1, 3, 3, 5)}
GRID_LABELS = [(worker, f"i{k}", score) for worker, scores in GRID.items() for k, score in enumerate(scores, start=1)]

labels_strategy = st.lists(st.tuples(st.sampled_from("abcde"), st.integers(0, 7), st.integers(1, 5)), max_size=40)


def test_leave_one_out_by_hand():
    # A: others (B+C)/2 = (1.5, 2.5, 3.5, 4.5) = A + 0.5 → r = 1.
    # B: others (A+C)/2 = (1, 2.5, 3, 4.5): dx = (-1, -1, 1, 1), dy = (-1.75, -.25, .25,
    #    1.75): Σdxdy = 4, Σdx² = 4, Σdy² = 6.25 → r = 4/√25 = 0.8.
    # C: others (A+B)/2 = (1.5, 2, 3.5, 4): dx = (-2, 0, 0, 2), dy = (-1.25, -.75, .75,
    #    1.25): Σdxdy = 5, Σdx² = 8, Σdy² = 4.25 → r = 5/√34.
    # D rated only i9, which nobody else rated: skipped, so no items and r None.
    r = leave_one_out(iter(GRID_LABELS + [("D", "i9", 4)]))
    assert r == {"A": pytest.approx(1.0), "B": pytest.approx(0.8), "C": pytest.approx(5 / math.sqrt(34)), "D": None}


def test_leave_one_out_uses_a_workers_mean_for_a_repeated_item():
    # A rates i1 again with 3: A counts as (1+3)/2 = 2 on i1, once, for itself and others.
    # A: own (2, 2, 3, 4), others (1.5, 2.5, 3.5, 4.5): dx = (-.75, -.75, .25, 1.25),
    #    dy = (-1.5, -.5, .5, 1.5): Σdxdy = 3.5, Σdx² = 2.75, Σdy² = 5 → 3.5/√13.75.
    # B: others (A+C)/2 = (1.5, 2.5, 3, 4.5): dy = (-1.375, -.375, .125, 1.625),
    #    Σdxdy = 3.5, Σdx² = 4, Σdy² = 4.6875 → 3.5/√18.75.
    # A's label on i5, rated by nobody else, is skipped.
    r = leave_one_out(GRID_LABELS + [("A", "i1", 3), ("A", "i5", 5)])
    assert r["A"] == pytest.approx(3.5 / math.sqrt(13.75))
    assert r["B"] == pytest.approx(3.5 / math.sqrt(18.75))


def test_leave_one_out_details_say_why_r_is_none():
    labels = GRID_LABELS + [
        ("E", "i1", 2),
        ("E", "i2", 2),
        ("E", "i3", 2),  # constant scores
        ("F", "i1", 5),
        ("F", "i2", 1),  # two shared items
        ("G", "i7", 3),  # nothing shared
    ]
    details = leave_one_out_details(labels)
    assert details["E"] == WorkerCorrelation(None, 3, "the worker's scores are constant")
    assert details["F"] == WorkerCorrelation(None, 2, "fewer than 3 items shared with other workers")
    assert details["G"] == WorkerCorrelation(None, 0, "no item shared with another worker")
    assert details["A"].items == 4 and details["A"].reason == ""
    # Others constant: H's partners always average 3 on H's items.
    constant_others = [("H", item, score) for item, score in zip("pqr", (1, 2, 5))]
    constant_others += [("J", item, 3) for item in "pqr"]
    assert leave_one_out_details(constant_others)["H"].reason == "the other workers' means are constant"


@pytest.mark.parametrize("labels", [[], [("A", "i1", 3)], [("A", f"i{k}", k) for k in range(9)]])
def test_leave_one_out_is_none_for_degenerate_crowds(labels):
    assert all(r is None for r in leave_one_out(labels).values())


@given(labels_strategy, st.floats(0.1, 10), st.floats(-10, 10))
def test_leave_one_out_is_invariant_to_an_affine_change_of_one_worker(labels, scale, shift):
    assume(labels)
    worker = labels[0][0]
    changed = [(w, item, scale * score + shift if w == worker else score) for w, item, score in labels]
    before, after = leave_one_out(labels)[worker], leave_one_out(changed)[worker]
    assert (before is None) == (after is None)
    if before is not None:
        assert after == pytest.approx(before, abs=1e-9)


def test_trap_report_by_hand():
    traps = {"t1": "obvious", "t2": "subtle", "t3": "subtle"}
    labels = [
        ("A", "t1", 1),
        ("A", "t2", 3),
        ("A", "x", 5),
        ("B", "t1", 4),
        ("B", "t2", 2),
        ("B", "t3", 1),
        ("C", "t1", 1),
        ("C", "x", 4),
        ("D", "x", 2),
    ]
    report = trap_report(labels, traps, fail_at=3)
    # A: t1 = 1 passes, t2 = 3 fails; B: t1 = 4 fails; C: t1 passes; D saw none.
    assert report.workers == {"A": TrapStats(2, 1), "B": TrapStats(3, 1), "C": TrapStats(1, 0), "D": TrapStats(0, 0)}
    # obvious: (1 + 4 + 1)/3 = 2; subtle: (3 + 2 + 1)/3 = 2.
    assert report.kinds == {"obvious": KindStats(2.0, 3), "subtle": KindStats(2.0, 3)}
    # Per kind: A failed its subtle one, B its obvious one; a kind not seen is absent.
    assert report.worker_kinds == {
        "obvious": {"A": TrapStats(1, 0), "B": TrapStats(1, 1), "C": TrapStats(1, 0)},
        "subtle": {"A": TrapStats(1, 1), "B": TrapStats(2, 0)},
    }


def test_trap_report_on_no_labels_lists_kinds_with_nan_means():
    report = trap_report([], {"t1": "obvious"})
    assert report.workers == {}
    assert math.isnan(report.kinds["obvious"].mean) and report.kinds["obvious"].n == 0


def test_comparison_agreement_by_hand():
    votes = [
        ("W1", "a", "b", "a"),
        ("W2", "a", "b", "a"),
        ("W3", "b", "a", "a"),
        ("W4", "a", "b", "b"),
        ("W1", "a", "c", "c"),
        ("W2", "a", "c", "c"),
        ("W3", "c", "a", "a"),
        ("W4", "a", "c", "a"),
        ("W5", "d", "e", "d"),
    ]
    # (a,b): every one of W1-W3 sees others a, a, b → majority a, they agree; W4 sees
    #        a, a, a and disagrees.
    # (a,c): W1 and W2 see c, a, a → a, they disagree; W3 and W4 see c, c, a → c, they
    #        disagree. So W1-W3 1/2 and W4 0/2. W5 is alone on (d,e): nothing counts.
    assert comparison_agreement(votes) == {"W1": 0.5, "W2": 0.5, "W3": 0.5, "W4": 0.0, "W5": None}


def test_comparison_agreement_leaves_out_all_of_a_workers_votes_and_tied_others():
    # W1 voted (a,b) twice; the others are W2 a, W3 b → tied → W1 has nothing that counts.
    # W2's others: W1 a, a and W3 b → a, agrees: 1/1. W3's others a, a, a → disagrees: 0/1.
    votes = [("W1", "a", "b", "a"), ("W1", "b", "a", "a"), ("W2", "a", "b", "a"), ("W3", "a", "b", "b")]
    assert comparison_agreement(votes) == {"W1": None, "W2": 1.0, "W3": 0.0}


def crowd(bad: dict[str, list[int]], good_workers: int = 18, items: int = 10):
    """Good workers rate items 0..items-1 as 1 + item % 5 (all identical); `bad` workers
    rate the same items with the given scores."""
    labels = [(f"g{k:02d}", item, 1 + item % 5) for k in range(good_workers) for item in range(items)]
    labels += [(worker, item, score) for worker, scores in bad.items() for item, score in enumerate(scores)]
    return labels


# Bad workers on 10 items against the truth 1 2 3 4 5 1 2 3 4 5:
REVERSED = [5, 4, 3, 2, 1, 5, 4, 3, 2, 1]  # r = -1
NOISY = [1, 2, 3, 4, 5, 5, 4, 3, 2, 1]  # r = 0
WEAK = [1, 2, 3, 4, 5, 4, 4, 3, 2, 2]  # 0 < r < 0.5


def test_exclusions_take_the_worst_correlations_first_within_the_cap():
    labels = crowd({"rev": REVERSED, "noisy": NOISY, "weak": WEAK})  # 21 workers × 10 labels
    r = leave_one_out(labels)
    assert r["rev"] < r["noisy"] < r["weak"] < 0.5 < min(r[f"g{k:02d}"] for k in range(18))
    # 210 labels: a 5 % cap holds 10.5 labels → one worker; 10 % → 21 → two; 50 % → only
    # the three below max_r = 0.5, never a good worker.
    assert exclusions(labels) == {"rev"}
    assert exclusions(labels, max_label_share=0.10) == {"rev", "noisy"}
    assert exclusions(labels, max_label_share=0.5) == {"rev", "noisy", "weak"}
    assert exclusions(labels, max_label_share=0.5, max_r=-0.5) == {"rev"}


def test_exclusions_stop_at_the_first_worker_over_the_cap():
    # "rev" holds 20 labels (it rated every item twice), "noisy" 10 of 240: a 6 % cap
    # (14.4 labels) cannot take "rev", and the walk stops there instead of skipping to
    # the smaller "noisy".
    labels = crowd({"rev": REVERSED, "noisy": NOISY}, good_workers=21)
    labels += [("rev", item, score) for item, score in enumerate(REVERSED)]
    assert len(labels) == 240
    assert exclusions(labels, max_label_share=0.06) == set()
    assert exclusions(labels, max_label_share=0.10) == {"rev"}


def test_exclusions_do_not_judge_workers_on_few_items():
    labels = crowd({"rev": REVERSED[:4]})
    assert exclusions(labels, max_label_share=0.5) == set()
    assert exclusions(labels, max_label_share=0.5, min_items=4) == {"rev"}


def test_exclusions_by_traps_are_uncapped_and_count_toward_the_cap():
    traps = {"t1": "obvious", "t2": "subtle", "t3": "obvious"}
    labels = crowd({"rev": REVERSED}, good_workers=19)  # 200 labels
    labels += [(f"g{k:02d}", trap, 1) for k in range(19) for trap in traps]
    labels += [("half", "t1", 4), ("half", "t2", 1)]  # 1 of 2 failed → out
    labels += [("third", trap, s) for trap, s in zip(traps, (5, 1, 1))]  # 1 of 3 → in
    labels += [("once", "t1", 5)]  # one trap seen → in
    labels += [(worker, item, 1 + item % 5) for worker in ("half", "third", "once") for item in range(10)]
    # 200 + 57 + 6 + 30 = 293 labels; "half" holds 12. A 7.5 % cap (21.98) leaves no
    # room for "rev"'s 10 after "half"'s 12; a 8 % cap (23.44) does.
    reasons = exclusion_reasons(labels, traps, policy=QCPolicy(max_label_share=0.075))
    assert reasons == {"half": "failed 1 of 2 traps (score ≥ 3)"}
    assert exclusions(labels, traps, max_label_share=0.08) == {"half", "rev"}


PAIRS = [("a", "b"), ("a", "c"), ("b", "c"), ("a", "d"), ("b", "d"), ("c", "d")]


def ordered_votes(worker: str, order: str, times: int = 1) -> list[tuple[str, str, str, str]]:
    """The C(4, 2) = 6 votes of `times` orderings of a, b, c, d placing `order` best first."""
    return [(worker, x, y, x if order.index(x) < order.index(y) else y) for x, y in PAIRS] * times


def test_comparisons_judge_a_worker_on_orderings_not_on_votes():
    # 12 good voters, 3 orderings each, agree with a > b > c > d; "contrary" orders the
    # reverse once: 6 countable votes, all disagreeing, but one ordering is one judgement.
    votes = [vote for k in range(12) for vote in ordered_votes(f"g{k:02d}", "abcd", 3)]
    votes += ordered_votes("contrary", "dcba")
    orderings = {f"g{k:02d}": 3 for k in range(12)} | {"contrary": 1}
    assert exclusions([], votes=votes, max_label_share=1.0, min_items=1, orderings=orderings) == set()
    assert exclusions([], votes=votes, max_label_share=1.0, min_items=1, orderings=orderings, min_orderings=1) == {
        "contrary"
    }
    # Three reversed orderings are enough evidence.
    votes += ordered_votes("contrary", "dcba", 2)
    reasons = exclusion_reasons(
        [], votes=votes, policy=QCPolicy(max_label_share=1.0), orderings=orderings | {"contrary": 3}
    )
    assert reasons == {
        "contrary": "comparison agreement 0.00 on 18 votes from 3 orderings, below 0.6; worst first within 100% of votes"
    }
    # Without `orderings` (votes not from orderings), countable votes are the evidence.
    assert exclusions([], votes=votes, max_label_share=1.0, min_items=18) == {"contrary"}
    assert exclusions([], votes=votes, max_label_share=1.0, min_items=19) == set()


def test_one_untouched_ordering_never_excludes_a_worker():
    # The defect of the quality issue: one ordering submitted as shown counted as 10
    # disagreeing votes. Its votes are left out of `votes`, and one is not enough evidence.
    votes = [vote for k in range(12) for vote in ordered_votes(f"g{k:02d}", "abcd", 3)]
    orderings = {f"g{k:02d}": 3 for k in range(12)}
    assert (
        exclusions([], votes=votes, max_label_share=1.0, orderings=orderings, untouched_orderings={"lazy": 1}) == set()
    )
    # An untouched ordering beside changed ones counts neither for nor against: "mixed" has
    # 3 agreeing orderings and 2 untouched (40 %), agreement 1.0 on its 18 votes.
    votes += ordered_votes("mixed", "abcd", 3)
    reasons = exclusion_reasons(
        [],
        votes=votes,
        policy=QCPolicy(max_label_share=1.0),
        orderings=orderings | {"mixed": 3},
        untouched_orderings={"mixed": 2},
    )
    assert reasons == {}


def test_mostly_untouched_orderings_exclude_a_worker_without_a_cap():
    votes = [vote for k in range(12) for vote in ordered_votes(f"g{k:02d}", "abcd", 3)]
    orderings = {f"g{k:02d}": 3 for k in range(12)} | {"half": 2, "idle": 1}
    votes += ordered_votes("half", "abcd", 2) + ordered_votes("idle", "abcd")
    untouched = {"half": 2, "idle": 3, "few": 2}
    # half: 2 of 4 untouched is not more than half → in; idle: 3 of 4 → out; few: 2 of 2
    # is below the 3 orderings of evidence → in. A 0 % cap does not hold idle back, and
    # idle's 6 changed votes count toward it (nobody else fits).
    reasons = exclusion_reasons(
        [], votes=votes, policy=QCPolicy(max_label_share=0.0), orderings=orderings, untouched_orderings=untouched
    )
    assert reasons == {"idle": "submitted 3 of 4 orderings in the order shown (untouched)"}
    assert exclusions([], votes=votes, orderings=orderings, untouched_orderings=untouched, max_untouched_share=0.4) == {
        "idle",
        "half",
    }
    assert exclusions([], votes=votes, orderings=orderings, untouched_orderings=untouched, min_orderings=2) == {
        "idle",
        "few",
    }


def test_exclusions_by_traps_need_the_minimum_of_trap_answers():
    traps = {"t1": "obvious", "t2": "subtle"}
    labels = crowd({}) + [(f"g{k:02d}", trap, 1) for k in range(18) for trap in traps] + [("once", "t1", 5)]
    assert exclusions(labels, traps) == set()
    assert exclusion_reasons(labels, traps, policy=QCPolicy(min_traps=1)) == {"once": "failed 1 of 1 traps (score ≥ 3)"}
    assert exclusions(labels, traps, min_traps=0) == {"once"}  # never below one trap answer


def test_time_report_by_hand():
    times = [("A", "likert", s) for s in (30, 40, 50)] + [("B", "likert", s) for s in (2, 4, 9)]
    times += [("C", "likert", s) for s in (35, 45)] + [("C", "comparison", s) for s in (60, 3, 5)]
    times += [("D", "comparison", 50), ("D", "comparison", 70)]
    report = time_report(times)
    # Likert HITs: 2 4 9 30 35 40 45 50 → median (30 + 35)/2 = 32.5; orderings: 3 5 50 60 70 → 50.
    assert report.kinds == {"likert": HitTimes(32.5, 8), "comparison": HitTimes(50.0, 5)}
    assert report.workers["A"] == {"likert": HitTimes(40.0, 3)}
    assert report.workers["C"] == {"likert": HitTimes(40.0, 2), "comparison": HitTimes(5.0, 3)}
    # B: 4 s < 32.5 / 3 over 3 HITs; C: 5 s < 50 / 3 on orderings. D is typical.
    assert set(report.speeders) == {"B", "C"}
    assert (
        report.speeders["B"] == "median 4.0 s per likert HIT over 3 HITs, below 0.33 × the campaign's median of 32.5 s"
    )
    assert set(time_report(times, min_hits=4).speeders) == set()
    assert set(time_report(times, fraction=0.12).speeders) == {"C"}  # 4 > 3.9, 5 < 6


def test_time_report_of_nothing_is_empty():
    assert time_report([]) == TimeReport({}, {}, {})
    with pytest.raises(ValueError, match="finite"):
        time_report([("A", "likert", float("inf"))])


def test_exclusions_judge_a_constant_worker_as_r_zero():
    # "flat" answers 1 everywhere, traps included, so no trap catches it; its r is
    # undefined (zero variance) and counts as 0 for exclusion: after "rev" (-1), before
    # "weak" (0 < r < 0.5). 21 workers × 10 labels + 2 trap labels per worker = 252
    # labels: a 10 % cap (25.2) holds two workers of 12 labels, 15 % (37.8) three.
    traps = {"t1": "obvious", "t2": "subtle"}
    labels = crowd({"rev": REVERSED, "flat": [1] * 10, "weak": WEAK})
    labels += [(worker, trap, 1) for worker in {w for w, _, _ in labels} for trap in traps]
    assert leave_one_out(labels)["flat"] is None
    reasons = exclusion_reasons(labels, traps, policy=QCPolicy(max_label_share=0.10))
    assert list(reasons) == ["rev", "flat"]
    assert reasons["flat"].startswith("leave-one-out r = 0.00 on 10 items (constant scores)")
    assert exclusions(labels, traps, max_label_share=0.15) == {"rev", "flat", "weak"}


def test_exclusions_judge_a_constant_worker_only_on_enough_items():
    labels = crowd({"flat": [3] * 4})
    assert exclusions(labels, max_label_share=0.5) == set()
    assert exclusions(labels, max_label_share=0.5, min_items=4) == {"flat"}


def test_exclusions_returns_the_workers_of_exclusion_reasons():
    labels = crowd({"rev": REVERSED, "noisy": NOISY})
    reasons = exclusion_reasons(labels, policy=QCPolicy(max_label_share=0.1))
    assert set(reasons) == exclusions(labels, max_label_share=0.1) == {"rev", "noisy"}
    assert reasons["rev"].startswith("leave-one-out r = -1.00 on 10 items, below 0.5")


@pytest.mark.parametrize(
    "labels",
    [[], [("A", "i1", 3)], [("A", f"i{k}", 3) for k in range(9)], [(w, f"i{k}", 3) for w in "AB" for k in range(9)]],
)
def test_exclusions_of_degenerate_crowds_are_empty(labels):
    assert exclusions(labels, votes=[("A", "x", "y", "x")], max_label_share=1.0) == set()


def test_malformed_input_raises_value_error():
    with pytest.raises(ValueError, match="max_label_share"):
        exclusions([], max_label_share=1.5)
    with pytest.raises(ValueError, match="finite"):
        leave_one_out([("A", "i1", float("nan"))])


@given(labels_strategy, st.floats(0, 1))
def test_exclusions_never_exceed_the_label_share(labels, share):
    excluded = exclusions(labels, max_label_share=share, min_items=3, max_r=1.0)
    assert sum(worker in excluded for worker, _, _ in labels) <= share * len(labels)


@given(
    st.lists(
        st.tuples(st.sampled_from("uvwxyz"), st.sampled_from("abcd"), st.sampled_from("abcd"), st.booleans()),
        max_size=40,
    ),
    st.floats(0, 1),
)
def test_exclusions_never_exceed_the_vote_share(raw, share):
    votes = [(w, a, b, a if first else b) for w, a, b, first in raw if a != b]
    excluded = exclusions([], votes=votes, max_label_share=share, min_items=1, max_agreement=1.0)
    assert sum(worker in excluded for worker, *_ in votes) <= share * len(votes)


@given(labels_strategy)
def test_worker_statistics_never_raise_on_small_inputs(labels):
    for r in leave_one_out(labels).values():
        assert r is None or -1.0 <= r <= 1.0
    trap_report(labels, {0: "obvious", 1: "subtle"})
    votes = [(w, item, item + 1, item) for w, item, _ in labels]
    for share in comparison_agreement(votes).values():
        assert share is None or 0.0 <= share <= 1.0
    exclusions(labels, {0: "obvious"}, votes, max_label_share=0.5, min_items=1)


# Seeds where leave-one-out r, not only the traps, excludes spammers (1, 2 and 2 of them).
SIMULATION_SEEDS = [4, 11, 13]


@pytest.mark.parametrize("seed", SIMULATION_SEEDS)
def test_simulated_crowd_spammers_are_excluded(seed):
    # The three spammers hold about 10 % of the labels (8.6-12.0 % over seeds 1-20), so
    # the default 5 % cap cannot take all of them by correlation: only trap failures
    # (uncapped) can, which happened in 11 of those 20 seeds. 12 % is the share this
    # scenario needs: it excluded every spammer and no good worker in all 20 seeds.
    labels, truth, traps, spammers = simulated_crowd(seed)
    excluded = exclusions(labels, traps, max_label_share=0.12)
    assert len(excluded & spammers) >= 0.9 * len(spammers)
    assert excluded <= spammers
    assert correlation_with_truth(labels, truth, traps, excluded) > correlation_with_truth(labels, truth, traps, set())


@pytest.mark.parametrize("seed", SIMULATION_SEEDS)
def test_simulated_crowd_default_cap_excludes_only_spammers(seed):
    labels, _truth, traps, spammers = simulated_crowd(seed)
    reasons = exclusion_reasons(labels, traps)
    assert set(reasons) <= spammers
    by_correlation = {worker for worker, reason in reasons.items() if reason.startswith("leave-one-out")}
    assert sum(worker in set(reasons) for worker, _, _ in labels) <= 0.05 * len(labels) or not by_correlation


def test_quality_imports_no_django():
    code = "import sys, crowd.quality; sys.exit(any(m == 'django' or m.startswith('django.') for m in sys.modules))"
    root = Path(__file__).resolve().parents[2]
    assert subprocess.run([sys.executable, "-c", code], cwd=root).returncode == 0


def test_the_policy_carries_exactly_the_loose_keywords_of_the_public_signature():
    labels = crowd({"rev": REVERSED, "noisy": NOISY, "flat": [3] * 4})
    for loose in ({}, {"max_label_share": 0.5, "min_items": 4}, {"max_label_share": 0.5, "max_r": -0.5}):
        assert exclusions(labels, **loose) == set(exclusion_reasons(labels, policy=QCPolicy(**loose)))
    with pytest.raises(ValueError, match="max_label_share"):
        QCPolicy(max_label_share=-0.1)
