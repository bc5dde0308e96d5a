"""maps.files: a stored map as CXL and JSON with provenance, and .cmap/CXL imports as gold or
system maps (errors name file:line; nothing is stored when a file is refused)."""

import json

import pytest

from maps.cmap import cxl_loads
from maps.files import MapImportError, map_cxl_text, map_import, map_json_text
from maps.models import ConceptMap
from tests.maps.builders import chain_topic, map_built

pytestmark = pytest.mark.django_db


def test_cxl_and_json_hold_the_maps_relations_with_provenance(campaign, owner):
    topic = chain_topic(campaign=campaign, length=4)
    concept_map = map_built(topic=topic, annotator=owner, relations=3)
    back = cxl_loads(map_cxl_text(concept_map), name="x.cxl")
    assert [(p.source, p.target) for p in back.propositions] == [
        ("apple", "banana"),
        ("banana", "cherry"),
        ("cherry", "damson"),
    ]
    rows = json.loads(map_json_text(concept_map))["propositions"]
    first = rows[0]["provenance"]
    assert first["crowd_rank"] == 1 and first["operation"] == "kept" and first["synthetic"] is False
    assert first["revised_from"] == topic.revised_propositions.get(position=1).revised_from_id


def test_a_cxl_file_imports_as_a_system_map(campaign, owner):
    topic = chain_topic(campaign=campaign, length=4)
    text = map_cxl_text(map_built(topic=topic, annotator=owner, relations=3)).encode()
    imported = map_import(topic=topic, name="system_a.cxl", data=text, kind=ConceptMap.Kind.SYSTEM).concept_map
    assert imported.kind == "system" and imported.relations.count() == 3 and imported.concepts.count() == 4


def test_what_a_stored_map_cannot_hold_is_skipped_and_said(campaign):
    topic = chain_topic(campaign=campaign, length=2)
    data = b"a\tr1\tb\nB\tr2\tA\nc\tr3\tc\nb\tr4\tc\n"
    result = map_import(topic=topic, name="sys.cmap", data=data, kind=ConceptMap.Kind.SYSTEM)
    assert result.skipped == [
        "sys.cmap: proposition 2 (B — A) is a second relation on its pair",
        "sys.cmap: proposition 3 (c — c) joins a concept to itself",
    ]
    assert result.concept_map.relations.count() == 2 and result.concept_map.concepts.count() == 3


def test_a_refused_file_stores_nothing(campaign):
    topic = chain_topic(campaign=campaign, length=2)
    with pytest.raises(MapImportError, match=r"bad\.cxl:1: not well-formed XML"):
        map_import(topic=topic, name="bad.cxl", data=b"<cmap><map>", kind=ConceptMap.Kind.GOLD)
    with pytest.raises(MapImportError, match=r"latin\.cmap:2: not UTF-8"):
        map_import(topic=topic, name="latin.cmap", data=b"a\tb\tc\n\xe9\tb\tc\n", kind=ConceptMap.Kind.GOLD)
    with pytest.raises(MapImportError, match=r"name it \.cmap"):
        map_import(topic=topic, name="map.txt", data=b"a\tb\tc\n", kind=ConceptMap.Kind.GOLD)
    assert not ConceptMap.objects.filter(topic=topic).exists()
