"""Concept-map file formats: the corpus's `.cmap`, CmapTools' CXL and JSON with provenance.

Pure (no Django). A concept map is a list of propositions (source concept, relation, target
concept), as in Falke & Gurevych, EMNLP 2017, §3; the `.cmap` format is the one the corpus's
tools read (UKPLab/emnlp2017-cmapsum-corpus, `eval.ConceptMap`): UTF-8, one proposition per
line, `source<TAB>relation<TAB>target`. A concept is identified by its label, so each concept
label must be byte-identical on every line it appears on; `label_normalise` gives the one
normal form written here (NFC, white space folded, no tab/CR/LF).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from xml.etree.ElementTree import Element, SubElement, tostring

import defusedxml.ElementTree as safe_etree
from defusedxml import DefusedXmlException

__all__ = [
    "ConceptMap",
    "MapFormatError",
    "MapProposition",
    "cmap_dumps",
    "cmap_loads",
    "cxl_dumps",
    "cxl_loads",
    "label_normalise",
    "map_json_dumps",
    "map_json_loads",
]

_WHITE_SPACE = re.compile(r"\s+")
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
CXL_NAMESPACE = "http://cmap.ihmc.us/xml/cmap/"
JSON_FORMAT = "salience-concept-map/1"


@dataclass(frozen=True)
class MapProposition:
    """One proposition of a concept map: source concept, relation (linking phrase), target concept."""

    source: str
    relation: str
    target: str


@dataclass
class ConceptMap:
    """A named concept map: its propositions in file order (the jar keeps file order too)."""

    name: str
    propositions: list[MapProposition] = field(default_factory=list)


class MapFormatError(ValueError):
    """A map file that cannot be read; the message says `file:line` and what is wrong."""


def label_normalise(text: str) -> str:
    """One normal form per label: Unicode NFC, every run of white space (tab, CR, LF, NBSP, ...)
    folded to one space, stripped. Two labels that differ only in these ways name one concept."""
    return _WHITE_SPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def _proposition_normalise(proposition: MapProposition) -> MapProposition:
    return MapProposition(
        label_normalise(proposition.source),
        label_normalise(proposition.relation),
        label_normalise(proposition.target),
    )


def _where(name: str, line: int) -> str:
    return f"{name or '<map>'}:{line}"


# --- .cmap (the corpus format) ---------------------------------------------------------------


def cmap_dumps(propositions: Iterable[MapProposition]) -> str:
    """The `.cmap` text of the propositions: `source\\trelation\\ttarget\\n` per proposition, labels
    normalised (so a concept's label is byte-identical on every line). An empty label cannot be
    read back by the corpus tools: it raises MapFormatError."""
    lines = []
    for number, proposition in enumerate(propositions, start=1):
        normal = _proposition_normalise(proposition)
        if not (normal.source and normal.relation and normal.target):
            raise MapFormatError(f"{_where('', number)}: empty label in proposition {proposition!r}")
        lines.append(f"{normal.source}\t{normal.relation}\t{normal.target}\n")
    return "".join(lines)


def cmap_loads(text: str, *, name: str = "") -> ConceptMap:
    """Read the corpus format: UTF-8 text, CRLF or LF line ends, with or without a final
    newline, a leading BOM allowed. Blank lines are skipped (the jar skips them too). A line
    without exactly three non-empty tab-separated fields raises MapFormatError naming
    `name:line`. Labels are normalised as `label_normalise` does."""
    text = text.removeprefix("\ufeff")
    propositions = []
    for number, raw in enumerate(re.split(r"\r\n|\n|\r", text), start=1):
        if not raw.strip():
            continue
        fields = raw.split("\t")
        if len(fields) != 3:
            raise MapFormatError(
                f"{_where(name, number)}: expected 3 tab-separated fields (source, relation, target), found {len(fields)}"
            )
        source, relation, target = (label_normalise(value) for value in fields)
        for label, value in (("source", source), ("relation", relation), ("target", target)):
            if not value:
                raise MapFormatError(f"{_where(name, number)}: empty {label} label")
        propositions.append(MapProposition(source, relation, target))
    return ConceptMap(name=name, propositions=propositions)


# --- CXL (CmapTools) -------------------------------------------------------------------------


def cxl_dumps(propositions: Iterable[MapProposition], *, title: str = "") -> str:
    """CmapTools' CXL: one `concept` per distinct normalised concept label, one `linking-phrase`
    per proposition (so two propositions sharing a relation label stay two), and two
    `connection`s per proposition (source → phrase, phrase → target)."""
    root = Element("cmap", {"xmlns": CXL_NAMESPACE})
    metadata = SubElement(root, "res-meta")
    SubElement(metadata, "dc:title", {"xmlns:dc": "http://purl.org/dc/elements/1.1/"}).text = title
    body = SubElement(root, "map")
    concept_list = SubElement(body, "concept-list")
    phrase_list = SubElement(body, "linking-phrase-list")
    connection_list = SubElement(body, "connection-list")
    concept_ids: dict[str, str] = {}

    def xml_label(label: str, number: int) -> str:
        bad = _NOT_XML.search(label)
        if bad:
            raise MapFormatError(
                f"{_where('', number)}: label {label!r} holds {bad.group()!r}, which XML 1.0 cannot carry"
            )
        return label

    def concept_id(label: str) -> str:
        if label not in concept_ids:
            concept_ids[label] = f"c{len(concept_ids) + 1}"
            SubElement(concept_list, "concept", {"id": concept_ids[label], "label": label})
        return concept_ids[label]

    for number, proposition in enumerate(propositions, start=1):
        normal = _proposition_normalise(proposition)
        for label in (normal.source, normal.relation, normal.target):
            xml_label(label, number)
        source, target = concept_id(normal.source), concept_id(normal.target)
        phrase = f"l{number}"
        SubElement(phrase_list, "linking-phrase", {"id": phrase, "label": normal.relation})
        SubElement(connection_list, "connection", {"id": f"e{number}a", "from-id": source, "to-id": phrase})
        SubElement(connection_list, "connection", {"id": f"e{number}b", "from-id": phrase, "to-id": target})
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + tostring(root, encoding="unicode") + "\n"


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def cxl_loads(text: str, *, name: str = "") -> ConceptMap:
    """Read CmapTools' CXL (parsed with defusedxml: no entities, no external references).

    A linking phrase connected from several concepts and to several concepts fans out to one
    proposition per (source, target) it connects, in connection order. Concept-to-concept
    connections (no linking phrase) and phrases with no source or no target carry no
    proposition and are skipped. Errors name `name:line` where the parser knows the line."""
    try:
        root = safe_etree.fromstring(text.removeprefix("\ufeff").encode("utf-8"))
    except DefusedXmlException as error:
        raise MapFormatError(f"{_where(name, 1)}: refused XML construct ({error.__class__.__name__})") from error
    except safe_etree.ParseError as error:
        line = error.position[0] if error.position else 1
        raise MapFormatError(f"{_where(name, line)}: not well-formed XML: {error}") from error
    if _local(root.tag) != "cmap":
        raise MapFormatError(f"{_where(name, 1)}: root element is <{_local(root.tag)}>, expected <cmap>")
    concepts: dict[str, str] = {}
    phrases: dict[str, str] = {}
    connections: list[tuple[str, str]] = []
    for element in root.iter():
        tag = _local(element.tag)
        if tag in ("concept", "linking-phrase"):
            identifier, label = element.get("id"), element.get("label")
            if not identifier or label is None:
                raise MapFormatError(f"{_where(name, 1)}: <{tag}> without id or label")
            (concepts if tag == "concept" else phrases)[identifier] = label_normalise(label)
        elif tag == "connection":
            start, end = element.get("from-id"), element.get("to-id")
            if not start or not end:
                raise MapFormatError(
                    f"{_where(name, 1)}: <connection id={element.get('id')!r}> without from-id or to-id"
                )
            connections.append((start, end))
    for start, end in connections:
        for identifier in (start, end):
            if identifier not in concepts and identifier not in phrases:
                raise MapFormatError(f"{_where(name, 1)}: connection refers to unknown id {identifier!r}")
    propositions: list[MapProposition] = []
    for phrase_id, relation in phrases.items():
        sources = [start for start, end in connections if end == phrase_id and start in concepts]
        targets = [end for start, end in connections if start == phrase_id and end in concepts]
        for source in sources:
            for target in targets:
                proposition = MapProposition(concepts[source], relation, concepts[target])
                if proposition not in propositions:
                    propositions.append(proposition)
    return ConceptMap(name=name, propositions=propositions)


# --- JSON with provenance --------------------------------------------------------------------


def map_json_dumps(propositions: Iterable[MapProposition], provenance: list[dict[str, Any]]) -> str:
    """JSON: `{"format", "propositions": [{"source", "relation", "target", "provenance": {...}}]}`.
    `provenance[i]` belongs to the i-th proposition and is passed through as given (crowd rank,
    revised_from, merges, synthetic flag, ...); it must have one entry per proposition."""
    items = list(propositions)
    if len(items) != len(provenance):
        raise ValueError(f"{len(items)} propositions but {len(provenance)} provenance entries")
    rows = []
    for proposition, extra in zip(items, provenance, strict=True):
        normal = _proposition_normalise(proposition)
        rows.append(
            {"source": normal.source, "relation": normal.relation, "target": normal.target, "provenance": dict(extra)}
        )
    return json.dumps({"format": JSON_FORMAT, "propositions": rows}, ensure_ascii=False, indent=2) + "\n"


def map_json_loads(text: str, *, name: str = "") -> tuple[ConceptMap, list[dict[str, Any]]]:
    """Read what `map_json_dumps` wrote: the map and the provenance list (one dict per
    proposition, passed through as stored)."""
    try:
        data = json.loads(text.removeprefix("\ufeff"))
    except json.JSONDecodeError as error:
        raise MapFormatError(f"{_where(name, error.lineno)}: not valid JSON: {error.msg}") from error
    if not isinstance(data, dict) or not isinstance(data.get("propositions"), list):
        raise MapFormatError(f"{_where(name, 1)}: expected an object with a 'propositions' list")
    propositions: list[MapProposition] = []
    provenance: list[dict[str, Any]] = []
    for index, row in enumerate(data["propositions"]):
        where = f"{name or '<map>'}: propositions[{index}]"
        if not isinstance(row, dict):
            raise MapFormatError(f"{where}: expected an object")
        labels = [row.get(key) for key in ("source", "relation", "target")]
        if not all(isinstance(label, str) and label_normalise(label) for label in labels):
            raise MapFormatError(f"{where}: source, relation and target must be non-empty strings")
        extra = row.get("provenance", {})
        if not isinstance(extra, dict):
            raise MapFormatError(f"{where}: provenance must be an object")
        propositions.append(MapProposition(*(label_normalise(str(label)) for label in labels)))
        provenance.append(extra)
    return ConceptMap(name=name, propositions=propositions), provenance
