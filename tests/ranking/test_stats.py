"""ranking.stats: Spearman's ρ between two score dicts against hand-computed values and
against scipy.stats.spearmanr on random inputs with ties."""

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import spearmanr

from ranking.stats import spearman

ROOT = Path(__file__).resolve().parents[2]

scores_strategy = st.dictionaries(
    st.integers(0, 30), st.sampled_from([0.0, 0.5, 1.0, 2.0, 2.5, 7.0, -3.0]), max_size=25
)


def test_spearman_by_hand():
    # ranks a: 1, 2, 3, 4; b: 2, 1, 3.5, 3.5 → ρ = Pearson of the ranks = 3.5 / √(5 · 4.5).
    a = {"p": 1.0, "q": 2.0, "r": 3.0, "s": 4.0}
    b = {"p": 0.2, "q": 0.1, "r": 0.9, "s": 0.9, "only-in-b": 5.0}
    assert spearman(a, b) == pytest.approx(3.5 / math.sqrt(5 * 4.5), abs=1e-12)


def test_spearman_of_two_keys_is_plus_or_minus_one():
    assert spearman({"p": 1, "q": 2}, {"p": 5, "q": 9}) == pytest.approx(1.0)
    assert spearman({"p": 1, "q": 2}, {"p": 9, "q": 5}) == pytest.approx(-1.0)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({}, {}),
        ({"p": 1.0}, {"p": 2.0}),  # one shared key
        ({"p": 1.0, "q": 2.0}, {"r": 1.0, "s": 2.0}),  # no shared key
        ({"p": 1.0, "q": 1.0, "r": 1.0}, {"p": 1.0, "q": 2.0, "r": 3.0}),  # a constant side
        ({"p": 1.0, "q": math.nan, "r": 3.0}, {"p": 1.0, "q": 2.0, "r": 3.0}),  # NaN: undefined
    ],
)
def test_spearman_is_none_when_undefined(a, b):
    assert spearman(a, b) is None


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")
@given(scores_strategy, scores_strategy)
def test_spearman_matches_scipy(a, b):
    shared = [key for key in a if key in b]
    expected = spearmanr([a[k] for k in shared], [b[k] for k in shared]).statistic if len(shared) >= 2 else math.nan
    rho = spearman(a, b)
    if math.isnan(expected):
        assert rho is None
    else:
        assert rho == expected  # the same computation, so the same bits


def test_process_start_imports_no_scipy_stats():
    """scipy.stats costs every Django process (gunicorn, Celery, manage.py) seconds of CPU at
    django.setup(); the statistics modules on that path need none of it."""
    code = (
        "import sys, django, ranking.stats, crowd.quality, maps.stability; django.setup(); "
        "sys.exit('scipy.stats' in sys.modules)"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env).returncode == 0
