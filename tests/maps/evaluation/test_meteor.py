"""maps.evaluation.meteor: METEOR 1.5 where Java and its jar are present, None with a reason
elsewhere (never a made-up figure)."""

import pytest

from maps.evaluation import meteor
from maps.evaluation.meteor import meteor_batch, meteor_unavailable_reason


def test_without_a_jar_there_is_no_figure_and_a_reason(monkeypatch, tmp_path):
    monkeypatch.setenv("SALIENCE_METEOR_JAR", str(tmp_path / "missing.jar"))
    assert "METEOR 1.5 jar not found" in meteor_unavailable_reason()
    assert meteor_batch([(["a b c"], ["a b c"])]) is None


def test_without_java_there_is_no_figure(monkeypatch):
    monkeypatch.setattr(meteor.shutil, "which", lambda name: None)
    assert meteor_unavailable_reason() == "METEOR 1.5 needs Java: no `java` on the PATH"
    assert meteor_batch([(["a b c"], ["a b c"])]) is None


def test_best_match_precision_and_recall():
    scores = meteor._scores_from_matrix([[1.0, 0.2], [0.3, 0.4], [0.0, 0.1]])
    assert scores.p == pytest.approx((1.0 + 0.4 + 0.1) / 3)
    assert scores.r == pytest.approx((1.0 + 0.4) / 2)
    assert meteor._scores_from_matrix([]).as_dict() == {"p": 0.0, "r": 0.0, "f1": 0.0}


@pytest.mark.slow
def test_meteor_scores_pairs_in_one_run():
    """Optional (requirements-meteor.txt); one JVM loading METEOR's paraphrase table: ~20-60 s."""
    if meteor_unavailable_reason():
        pytest.skip(f"optional METEOR 1.5: {meteor_unavailable_reason()}")
    same, partial, empty = meteor_batch(
        [
            (["Barack Obama graduated from Harvard Law"], ["Barack Obama graduated from Harvard Law"]),
            (["long papers must describe research", "cats"], ["long papers should present research"]),
            ([], ["anything"]),
        ]
    )
    assert (same.p, same.r, same.f1) == (1.0, 1.0, 1.0)
    assert 0 < partial.r < 1 and partial.p < partial.r
    assert (empty.p, empty.r, empty.f1) == (0.0, 0.0, 0.0)
