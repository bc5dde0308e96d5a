"""maps.statistics against hand-counted values on the corpus's sample gold map."""

import math

import pytest

from maps.cmap import MapProposition
from maps.statistics import collection_statistics, map_statistics

GOLD = [
    MapProposition("Barack Obama", "graduated from", "Harvard Law"),
    MapProposition("Barack Obama", "is", "the 44th president of the United States"),
    MapProposition("Michelle Obama", "is married to", "Barack Obama"),
]


def test_map_statistics_hand_counted():
    result = map_statistics(GOLD, [{"synthetic": True}, {}, {"synthetic": False}])
    assert (result.concepts, result.relations, result.connected) == (4, 3, True)
    assert result.concept_tokens == pytest.approx(13 / 4)  # 2 + 2 + 7 + 2
    assert result.concept_characters == pytest.approx(76 / 4)  # 12 + 11 + 39 + 14
    assert result.relation_tokens == pytest.approx(6 / 3)  # 2 + 1 + 3
    assert result.relation_characters == pytest.approx(29 / 3)  # 14 + 2 + 13
    assert result.label_tokens == pytest.approx(19 / 7)
    assert result.central_concepts == 1  # Barack Obama: 3 relations
    assert result.synthetic == 1


def test_central_concepts_threshold_and_unconnected_map():
    items = [MapProposition("a", "r", "b"), MapProposition("c", "r", "d")]
    result = map_statistics(items, central_min_degree=1)
    assert (result.central_concepts, result.connected, result.synthetic) == (4, False, 0)


def test_collection_mean_and_sample_sd():
    first = map_statistics(GOLD)
    second = map_statistics(GOLD[:2])
    result = collection_statistics([first, second])
    assert result["maps"] == 2 and result["connected"] == 2
    assert result["concepts"] == {"mean": 3.5, "sd": pytest.approx(math.sqrt(0.5))}
    assert result["relations"]["mean"] == 2.5
    assert collection_statistics([first])["concepts"] == {"mean": 4.0, "sd": 0.0}
