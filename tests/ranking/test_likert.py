"""ranking/likert.py: Likert means and the top-k shortlist, against hand-computed values."""

import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ranking.likert import likert_means, top_k_with_ties

ROOT = Path(__file__).resolve().parents[2]


def test_likert_means_by_hand():
    labels = [("w1", "a", 5), ("w2", "a", 4), ("w3", "a", 3), ("w1", "b", 1), ("w2", "b", 2)]

    assert likert_means(labels) == {"a": (4.0, 3), "b": (1.5, 2)}


def test_likert_means_skips_excluded_workers_and_traps():
    labels = [
        ("good", "a", 4),
        ("bad", "a", 1),
        ("good", "trap", 5),
        ("bad", "only-bad", 3),
        ("good", "b", 2),
    ]

    means = likert_means(labels, excluded_workers={"bad"}, traps={"trap"})

    assert means == {"a": (4.0, 1), "b": (2.0, 1)}


def test_likert_means_of_nothing_is_empty():
    assert likert_means([]) == {}
    assert likert_means([("w", "a", 3)], excluded_workers={"w"}) == {}


def test_top_k_includes_every_key_tied_with_the_kth():
    scores = {"a": 5.0, "b": 4.2, "c": 4.0, "d": 4.0, "e": 4.0, "f": 3.8}

    assert top_k_with_ties(scores, k=3) == ["a", "b", "c", "d", "e"]
    assert top_k_with_ties(scores, k=2) == ["a", "b"]


def test_top_k_ties_are_exact_float_equality():
    assert top_k_with_ties({"a": 18 / 5, "b": 36 / 10, "c": 1.0}, k=1) == ["a", "b"]
    assert top_k_with_ties({"a": 0.3, "b": 0.1 + 0.2, "c": 0.0}, k=1) == ["b"]


def test_top_k_orders_ties_by_key_and_unorderable_keys_by_repr():
    assert top_k_with_ties({3: 1.0, 1: 1.0, 2: 2.0}, k=3) == [2, 1, 3]
    assert top_k_with_ties({7: 1.0, "x": 1.0}, k=1) == ["x", 7]  # repr: "'x'" < "7"


def test_top_k_degenerate_inputs():
    assert top_k_with_ties({}, k=100) == []
    assert top_k_with_ties({"a": 1.0}, k=0) == []
    assert top_k_with_ties({"a": 1.0, "b": 2.0}, k=100) == ["b", "a"]


@given(
    st.dictionaries(st.integers(0, 300), st.integers(1, 25).map(lambda total: total / 5), max_size=80),
    st.integers(1, 60),
)
def test_top_k_keeps_the_best_and_cuts_only_below_the_kth(scores, k):
    top = top_k_with_ties(scores, k)

    assert len(top) == len(set(top)) >= min(k, len(scores))
    assert [scores[key] for key in top] == sorted((scores[key] for key in top), reverse=True)
    rest = set(scores) - set(top)
    if rest:
        assert max(scores[key] for key in rest) < scores[top[k - 1]]
        assert all(scores[key] == scores[top[k - 1]] for key in top[k:])


def test_imports_no_django():
    code = "import sys, ranking.likert; sys.exit('django' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0
