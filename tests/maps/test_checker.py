"""maps.checker against the corpus's own `eval.CheckConceptMaps` (the bundled jar as oracle)."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maps.checker import at_most_one_relation_per_unordered_pair, map_check
from maps.cmap import MapProposition, cmap_dumps, cmap_loads
from tests.maps.corpus_jar import CorpusJar, sample_require


@pytest.fixture(scope="module")
def corpus_jar():
    jar = CorpusJar()
    yield jar
    jar.close()


def read(path):
    return cmap_loads(path.read_text(encoding="utf-8"), name=path.name).propositions


def test_sample_malformed_maps_fail_as_the_jar_says():
    folder = sample_require() / "malformed"
    unconnected = map_check(read(folder / "unconnected.cmap"))
    assert (unconnected.concepts, unconnected.relations, unconnected.connected) == (4, 2, False)
    assert not unconnected.passes
    for name in ("duplicate1.cmap", "duplicate2.cmap"):
        check = map_check(read(folder / name))
        assert (check.concepts, check.relations, check.connected) == (3, 3, True)
        assert check.duplicate_pairs == [("acl 2017", "short papers")]
        assert not check.passes


def test_sample_corpus_maps_pass():
    for path in sorted((sample_require() / "corpus_xyz").rglob("*.cmap")):
        assert map_check(read(path)).passes, path


def test_reversed_pair_is_no_double_edge_for_the_jar_but_breaks_the_workbench_rule(corpus_jar):
    items = [MapProposition("a", "causes", "b"), MapProposition("b", "prevents", "a")]
    check = map_check(items)
    assert check.duplicate_pairs == [] and check.passes
    assert corpus_jar.check(corpus_jar.write(cmap_dumps(items))) == (2, 2, True, None)
    assert at_most_one_relation_per_unordered_pair(items) == [("a", "b")]
    assert at_most_one_relation_per_unordered_pair(items[:1]) == []


def test_empty_map_is_connected_as_for_the_jar(corpus_jar):
    assert map_check([]) == map_check([])
    assert (map_check([]).concepts, map_check([]).connected) == (0, True)
    assert corpus_jar.check(corpus_jar.write("")) == (0, 0, True, None)


def test_case_variants_a_deliberate_difference(corpus_jar):
    """The jar counts `ACL` and `acl` as one concept but cannot walk between them: it calls this
    connected map unconnected. Here they are one concept, and the variants are listed."""
    items = [MapProposition("ACL", "invites", "papers"), MapProposition("acl", "meets in", "Vienna")]
    check = map_check(items)
    assert (check.concepts, check.connected, check.case_variants) == (3, True, [("ACL", "acl")])
    concepts, relations, connected, _ = corpus_jar.check(corpus_jar.write(cmap_dumps(items)))
    assert (concepts, relations, connected) == (3, 2, False)


CONCEPTS = ["acl 2017", "long papers", "Short Papers", "research", "the reviewers", "Vienna", "x"]


@st.composite
def maps(draw):
    pool = draw(st.lists(st.sampled_from(CONCEPTS), min_size=1, max_size=6, unique=True))
    edges = st.tuples(st.sampled_from(pool), st.sampled_from(["is", "has", "invites"]), st.sampled_from(pool))
    return [MapProposition(*edge) for edge in draw(st.lists(edges, max_size=8))]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(maps())
def test_random_maps_checked_as_the_jar_checks_them(corpus_jar, items):
    check = map_check(items)
    concepts, relations, connected, double = corpus_jar.check(corpus_jar.write(cmap_dumps(items)))
    assert (check.concepts, check.relations, check.connected) == (concepts, relations, connected)
    assert bool(check.duplicate_pairs) == (double is not None)
    if double is not None:
        assert double in check.duplicate_pairs
