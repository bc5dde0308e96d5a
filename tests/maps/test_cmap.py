"""maps.cmap: the corpus's `.cmap` format, CmapTools' CXL and JSON with provenance."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maps.cmap import (
    MapFormatError,
    MapProposition,
    cmap_dumps,
    cmap_loads,
    cxl_dumps,
    cxl_loads,
    label_normalise,
    map_json_dumps,
    map_json_loads,
)
from tests.maps.corpus_jar import sample_require

labels = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=12).filter(
    lambda text: label_normalise(text) != ""
)
propositions = st.builds(MapProposition, labels, labels, labels)


def test_label_normalise_folds_white_space_and_composes():
    assert label_normalise("  Barack\t\tObama\r\n ") == "Barack Obama"
    assert label_normalise("cafe\u0301\u00a0au\u2028lait") == "caf\u00e9 au lait"


def test_sample_gold_map_reads_with_crlf_and_no_final_newline():
    path = sample_require() / "corpus_xyz" / "gold" / "topic1" / "topic1.cmap"
    concept_map = cmap_loads(path.read_text(encoding="utf-8"), name=path.name)
    assert concept_map.propositions == [
        MapProposition("Barack Obama", "graduated from", "Harvard Law"),
        MapProposition("Barack Obama", "is", "the 44th president of the United States"),
        MapProposition("Michelle Obama", "is married to", "Barack Obama"),
    ]


def test_cmap_loads_accepts_a_bom_lf_and_blank_lines():
    text = "\ufeffa\tb\tc\n\nc\td\te"
    assert cmap_loads(text).propositions == [MapProposition("a", "b", "c"), MapProposition("c", "d", "e")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a\tb\tc\na\tb\n", "topic.cmap:2: expected 3 tab-separated fields (source, relation, target), found 2"),
        ("a\tb\tc\td\n", "topic.cmap:1: expected 3 tab-separated fields"),
        ("a\t \tc\n", "topic.cmap:1: empty relation label"),
    ],
)
def test_cmap_loads_names_file_and_line(text, message):
    with pytest.raises(MapFormatError, match=message.replace("(", r"\(").replace(")", r"\)")):
        cmap_loads(text, name="topic.cmap")


def test_cmap_dumps_writes_one_byte_identical_label_per_concept():
    text = cmap_dumps(
        [
            MapProposition("Barack  Obama", "is", "president"),
            MapProposition("Barack\u00a0Obama ", "went\tto", "Harvard"),
        ]
    )
    assert text == "Barack Obama\tis\tpresident\nBarack Obama\twent to\tHarvard\n"
    assert text.encode("utf-8").count(b"Barack Obama\t") == 2


def test_cmap_dumps_refuses_an_empty_label():
    with pytest.raises(MapFormatError, match="empty label"):
        cmap_dumps([MapProposition("a", " ", "b")])


@given(st.lists(propositions, max_size=8))
def test_cmap_round_trip(items):
    normal = [MapProposition(*(label_normalise(x) for x in (p.source, p.relation, p.target))) for p in items]
    text = cmap_dumps(items)
    assert "\r" not in text
    assert all(line.count("\t") == 2 for line in text.splitlines())
    assert cmap_loads(text).propositions == normal


xml_labels = st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=12).filter(
    lambda text: label_normalise(text) != "" and "\ufffe" not in text and "\uffff" not in text
)


@given(st.lists(st.builds(MapProposition, xml_labels, xml_labels, xml_labels), max_size=8, unique=True))
def test_cxl_round_trip(items):
    normal = [MapProposition(*(label_normalise(x) for x in (p.source, p.relation, p.target))) for p in items]
    unique = list(dict.fromkeys(normal))
    assert cxl_loads(cxl_dumps(items, title="t")).propositions == unique


def test_cxl_dumps_refuses_what_xml_cannot_carry():
    with pytest.raises(MapFormatError, match=r"<map>:2: label 'b\\x01' holds"):
        cxl_dumps([MapProposition("a", "b", "c"), MapProposition("a", "b\x01", "d")])


def test_cxl_linking_phrase_fans_out_to_every_concept_it_connects():
    cxl = """<?xml version="1.0" encoding="UTF-8"?>
<cmap xmlns="http://cmap.ihmc.us/xml/cmap/"><map>
<concept-list><concept id="1" label="plants"/><concept id="2" label="animals"/>
<concept id="3" label="oxygen"/><concept id="4" label="water"/></concept-list>
<linking-phrase-list><linking-phrase id="9" label="need"/></linking-phrase-list>
<connection-list><connection id="a" from-id="1" to-id="9"/><connection id="b" from-id="2" to-id="9"/>
<connection id="c" from-id="9" to-id="3"/><connection id="d" from-id="9" to-id="4"/>
<connection id="e" from-id="1" to-id="2"/></connection-list></map></cmap>"""
    assert cxl_loads(cxl).propositions == [
        MapProposition("plants", "need", "oxygen"),
        MapProposition("plants", "need", "water"),
        MapProposition("animals", "need", "oxygen"),
        MapProposition("animals", "need", "water"),
    ]


def test_cxl_refuses_entities_and_names_bad_xml():
    bomb = '<?xml version="1.0"?><!DOCTYPE cmap [<!ENTITY a "aaaa">]><cmap>&a;</cmap>'
    with pytest.raises(MapFormatError, match=r"map\.cxl:1: refused XML construct"):
        cxl_loads(bomb, name="map.cxl")
    with pytest.raises(MapFormatError, match=r"map\.cxl:2: not well-formed XML"):
        cxl_loads("<cmap>\n<map></cmap>", name="map.cxl")
    with pytest.raises(MapFormatError, match="unknown id 'x'"):
        cxl_loads('<cmap><concept id="1" label="a"/><connection from-id="1" to-id="x"/></cmap>', name="map.cxl")


def test_json_round_trip_passes_provenance_through():
    items = [MapProposition("a", "b", "c"), MapProposition("c", "d", "e")]
    provenance = [
        {"crowd_rank": 1, "revised_from": 17, "merges": ["A", "a"]},
        {"synthetic": True, "crowd_rank": None},
    ]
    concept_map, back = map_json_loads(map_json_dumps(items, provenance), name="m.json")
    assert concept_map.propositions == items
    assert back == provenance


def test_json_errors_say_where():
    with pytest.raises(ValueError, match="2 propositions but 1 provenance"):
        map_json_dumps([MapProposition("a", "b", "c")] * 2, [{}])
    with pytest.raises(MapFormatError, match=r"m\.json:2: not valid JSON"):
        map_json_loads('{"propositions":\n [,]}', name="m.json")
    with pytest.raises(MapFormatError, match=r"propositions\[0\]: source, relation and target"):
        map_json_loads('{"propositions": [{"source": "a", "relation": "", "target": "c"}]}', name="m.json")
