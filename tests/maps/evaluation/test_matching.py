"""maps.evaluation.matching against the corpus's jar: strict, unlabeled and concept match."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maps.cmap import MapProposition, cmap_dumps, cmap_loads
from maps.evaluation.matching import STOP_WORDS, concept_match, match_key, strict_match, unlabeled_match
from maps.evaluation.scores import Scores, scores_macro_average
from tests.maps.corpus_jar import CorpusJar, sample_require


@pytest.fixture(scope="module")
def corpus_jar():
    jar = CorpusJar()
    yield jar
    jar.close()


def read(path):
    return cmap_loads(path.read_text(encoding="utf-8"), name=path.name).propositions


def test_the_jars_stop_words():
    assert sorted(STOP_WORDS) == sorted(
        ["a", "an", "all", "any", "the", "there", "there's", "these", "this", "that", "those", "many", "most"]
    )


def test_match_key_drops_stop_words_and_stems_as_opennlp():
    assert match_key("the students") == match_key("student")
    assert match_key("there's many generously running studies") == "generous run studi"
    assert match_key("the this") == ""


def test_sample_strict_figures_are_the_jars():
    """RunEvaluation on sample_data/corpus_xyz prints these (and the README quotes them)."""
    sample = sample_require() / "corpus_xyz"
    expected = {
        ("topic1", "system_a.cmap"): (1.0, 1.0, 1.0),
        ("topic1", "system_b.cmap"): (1.0, 2 / 3, 0.8),
        ("topic2", "system_a.cmap"): (0.0, 0.0, 0.0),
        ("topic2", "system_b.cmap"): (0.5, 0.5, 0.5),
    }
    per_system: dict[str, list[Scores]] = {}
    for (topic, name), (p, r, f1) in expected.items():
        gold = read(sample / "gold" / topic / f"{topic}.cmap")
        scores = strict_match(read(sample / "system" / topic / name), gold)
        assert (scores.p, scores.r, scores.f1) == pytest.approx((p, r, f1), abs=1e-12)
        per_system.setdefault(name, []).append(scores)
    macro = scores_macro_average(per_system["system_b.cmap"])
    assert (round(macro.p, 4), round(macro.r, 4), round(macro.f1, 4)) == (0.75, 0.5833, 0.65)


def test_sample_unlabeled_and_concept_figures_are_the_jars(corpus_jar):
    sample = sample_require() / "corpus_xyz"
    for topic in ("topic1", "topic2"):
        gold_path = sample / "gold" / topic / f"{topic}.cmap"
        for system_path in sorted((sample / "system" / topic).glob("*.cmap")):
            jar = corpus_jar.metrics(gold_path, system_path)
            system, gold = read(system_path), read(gold_path)
            ours = [strict_match(system, gold), unlabeled_match(system, gold), concept_match(system, gold)]
            assert [x for s in ours for x in (s.p, s.r, s.f1)] == pytest.approx(jar, abs=1e-12)


WORDS = [
    "the",
    "a",
    "many",
    "there's",
    "Student",
    "students",
    "studies",
    "studied",
    "running",
    "ran",
    "generously",
    "U.S.",
    "e-mail",
    "naïve",
    "Läufer",
    "ACL",
    "acl",
    "2017",
    "papers",
    "paper",
    "is",
    "has",
]
labels = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
propositions = st.builds(MapProposition, labels, st.sampled_from(["is", "has", "the", "studies", "invites"]), labels)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(propositions, max_size=6), st.lists(propositions, max_size=6))
def test_random_maps_score_as_the_jar_scores_them(corpus_jar, system, gold):
    jar = corpus_jar.metrics(corpus_jar.write(cmap_dumps(gold)), corpus_jar.write(cmap_dumps(system)))
    ours = [strict_match(system, gold), unlabeled_match(system, gold), concept_match(system, gold)]
    assert [x for s in ours for x in (s.p, s.r, s.f1)] == pytest.approx(jar, abs=1e-12)


def test_macro_average_averages_f1_separately():
    macro = scores_macro_average([Scores(1.0, 0.5, 2 / 3), Scores(0.0, 0.0, 0.0)])
    assert (macro.p, macro.r, macro.f1) == (0.5, 0.25, 1 / 3)
    with pytest.raises(ValueError, match="no scores"):
        scores_macro_average([])
