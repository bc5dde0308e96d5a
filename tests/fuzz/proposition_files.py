"""Hypothesis strategies for proposition and topics files.

`valid_files()` draws a well-formed file of one format together with the rows it holds
(`records`, which `expected_rows` counts as a correct import would), written with any header
order and case, optional columns or not, a byte-order mark or not, LF or CRLF, duplicate rows
and case/space variants of rows. `mutated_files()` breaks such a file (truncation, dropped or extra fields, lines
removed or repeated, stray or undecodable bytes, a bad JSON line or escape, a huge field, a
topic key or proposition over its limit, another encoding): what it holds is then unknown,
only the importer's invariants apply.
"""

import csv
import io
import json
import string
from dataclasses import dataclass, field

from hypothesis import strategies as st

from annotation.text import normalize_text, proposition_text

FILE_FORMATS = ("tsv", "csv", "jsonl", "openie")
# Names chosen so that auto-detection picks the file's real format.
FILENAMES = {
    "tsv": ("props.tsv", "P.TAB"),
    "csv": ("props.csv",),
    "jsonl": ("props.jsonl", "p.ndjson"),
    "openie": ("obama.txt", "run.openie"),
}
BOM = "\ufeff"

# Text without NUL and without surrogates, which the importer refuses (no database stores
# them as text); topic keys well within Topic.key's 100 characters, of the characters a URL
# can carry (annotation/url_keys.py), with white space around them that readers strip.
_CHARACTERS = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")
_text = st.text(_CHARACTERS, min_size=1, max_size=25).filter(lambda text: text.strip())
_KEY_PART = st.text(string.ascii_letters + string.digits + "-_", min_size=1, max_size=5)
_topic_text = st.builds(
    "{}{}{}".format,
    st.sampled_from(["", " "]),
    st.lists(_KEY_PART, min_size=1, max_size=2).map(".".join),
    st.sampled_from(["", " "]),
)
# Open IE prints arguments inside 'SimpleArgument(...,List(...))' and '(a; b; c)': its text
# cannot hold the characters of that syntax (nor '{' or ',' that auto-detection reads).
_openie_text = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp"), exclude_characters=";(),:{}"),
    min_size=1,
    max_size=20,
).filter(lambda text: text.strip())
_confidence = st.one_of(st.none(), st.integers(0, 100).map(lambda n: n / 100))


@dataclass(frozen=True)
class Record:
    topic: str
    subject: str
    relation: str
    object: str
    confidence: float | None = None
    source: str = ""
    id: str = ""
    arguments: tuple[tuple[str, str], ...] = ()  # Open IE: (kind, text) of the arguments that make up `object`


@dataclass(frozen=True)
class ProposedFile:
    filename: str
    format: str  # what to pass as format=: "auto" or the format itself
    real_format: str
    content: bytes
    records: tuple[Record, ...]
    topic_key: str | None = None  # the topic= option (Open IE files)
    descriptions: dict[str, str] = field(default_factory=dict)  # for topics files

    @property
    def name(self) -> str:
        """The file name without its folder, as the importer reports it."""
        return self.filename.rsplit("/", 1)[-1]

    @property
    def lines(self) -> int:
        """The physical lines a problem may name: lines end at LF, whatever reads the file."""
        return self.content.count(b"\n") + 1


def _variant(record: Record, data) -> Record:
    """The same proposition written differently: the importer counts it as a duplicate."""

    def vary(text: str) -> str:
        return data.draw(st.sampled_from([text, text.upper(), f"  {text} ", text.replace(" ", "  ")]))

    return Record(record.topic, vary(record.subject), vary(record.relation), vary(record.object), record.confidence)


@st.composite
def _records(draw, *, text=_text, topic_text=_topic_text, topics=None) -> tuple[Record, ...]:
    topic_keys = topics or draw(st.lists(topic_text, min_size=1, max_size=3, unique_by=lambda key: key.strip()))
    rows = draw(
        st.lists(
            st.builds(
                Record,
                topic=st.sampled_from(topic_keys),
                subject=text,
                relation=text,
                object=text,
                confidence=_confidence,
                source=st.one_of(st.just(""), text),
                id=st.one_of(st.just(""), st.text(_CHARACTERS, max_size=10)),
            ),
            min_size=1,
            max_size=12,
        )
    )
    repeats = draw(st.lists(st.sampled_from(rows), max_size=3))
    data = draw(st.data())
    return tuple(rows + [_variant(row, data) for row in repeats])


def _tabular(records, *, delimiter: str, draw, newline: str) -> tuple[str, tuple[Record, ...]]:
    """The file's text, and its records as read back: without a confidence column, none."""
    optional = draw(st.lists(st.sampled_from(["confidence", "source", "id", "extra"]), unique=True))
    if "confidence" not in optional:
        records = tuple(Record(r.topic, r.subject, r.relation, r.object, None, r.source, r.id) for r in records)
    columns = draw(st.permutations(["topic", "subject", "relation", "object", *optional]))
    header = [draw(st.sampled_from([name, name.upper(), name.title(), f" {name} "])) for name in columns]
    out = io.StringIO()
    # Python's writer leaves a bare CR unquoted, which no reader reads back: quote all then.
    has_cr = any("\r" in value for record in records for value in vars(record).values() if isinstance(value, str))
    quoting = csv.QUOTE_ALL if has_cr else draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]))
    writer = csv.writer(out, delimiter=delimiter, lineterminator=newline, quoting=quoting)
    writer.writerow(header)
    for record in records:
        values = {
            **vars(record),
            "confidence": "" if record.confidence is None else repr(record.confidence),
            "extra": "x",
        }
        writer.writerow([values[name] for name in columns])
    return out.getvalue(), records


def _jsonl(records, *, draw, newline: str) -> str:
    lines = []
    for record in records:
        item = {"topic": record.topic, "subject": record.subject, "relation": record.relation, "object": record.object}
        if record.confidence is not None or draw(st.booleans()):
            as_text = None if record.confidence is None else str(record.confidence)
            item["confidence"] = draw(st.sampled_from([record.confidence, as_text]))
        if record.id:
            item["id"] = record.id
        item = {draw(st.sampled_from([key, key.upper()])): value for key, value in item.items()}
        lines.append(json.dumps(item, ensure_ascii=draw(st.booleans())))
    blank = draw(st.sampled_from(["", newline]))
    return blank + newline.join(lines) + newline


def _openie_column(records, *, newline: str) -> str:
    lines = []
    for record in records:
        arguments = "; ".join(f"{kind}Argument({part},List([0, 1)))" for kind, part in record.arguments)
        lines.append(
            f"{record.confidence if record.confidence is not None else 1.0:.2f}\t\t"
            f"SimpleArgument({record.subject},List([0, 1)))\tRelation({record.relation},List([2, 3)))\t"
            f"{arguments}\t{record.source or 'A sentence.'}"
        )
    return newline.join(lines) + newline


def _openie_simple(records, *, newline: str) -> str:
    blocks = [
        f"A sentence about {record.subject}.{newline}"
        f"{record.confidence if record.confidence is not None else 1.0:.2f} "
        f"({record.subject}; {record.relation}; {'; '.join(marked for _kind, marked in record.arguments)}){newline}"
        for record in records
    ]
    return newline.join(blocks)


_openie_argument = st.tuples(st.sampled_from(["Simple", "Spatial", "Temporal"]), _openie_text)


_MARKERS = {"Spatial": "L:", "Temporal": "T:"}


def _openie_record(draft: Record, arguments: list[tuple[str, str]], *, marked: bool) -> Record:
    """Open IE rows always carry a confidence; the object is the arguments joined by a space
    (the simple layout marks spatial and temporal ones with L: and T:, dropped on import)."""
    return Record(
        topic=draft.topic,
        subject=draft.subject,
        relation=draft.relation,
        object=" ".join(text.strip() for _kind, text in arguments),
        confidence=1.0 if draft.confidence is None else draft.confidence,
        arguments=tuple((kind, (_MARKERS.get(kind, "") if marked else "") + text) for kind, text in arguments),
    )


@st.composite
def valid_files(draw, formats=FILE_FORMATS) -> ProposedFile:
    """A well-formed file and the rows it holds."""
    real = draw(st.sampled_from(formats))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    filename = draw(st.sampled_from(FILENAMES[real]))
    topic_key = None
    if real == "openie":
        topic_key = draw(st.one_of(st.none(), _topic_text.map(str.strip)))
        topic = topic_key or filename.split(".", 1)[0]
        drafts = draw(_records(text=_openie_text, topics=[topic]))
        layout = draw(st.sampled_from([_openie_column, _openie_simple]))
        records = tuple(
            _openie_record(
                draft, draw(st.lists(_openie_argument, min_size=1, max_size=3)), marked=layout is _openie_simple
            )
            for draft in drafts
        )
        text = layout(records, newline=newline)
    elif real == "jsonl":
        records = draw(_records())
        text = _jsonl(records, draw=draw, newline=newline)
    else:
        text, records = _tabular(draw(_records()), delimiter="\t" if real == "tsv" else ",", draw=draw, newline=newline)
    if draw(st.booleans()):
        text = BOM + text
    return ProposedFile(
        filename=filename,
        format=draw(st.sampled_from(["auto", real])),
        real_format=real,
        content=text.encode("utf-8"),
        records=records,
        topic_key=topic_key,
    )


def expected_rows(records: tuple[Record, ...], *, min_confidence: float, existing: dict[str, set[str]]) -> dict:
    """Per topic: read, kept, below threshold and duplicates, as a correct import counts them."""
    counts: dict[str, dict[str, int]] = {}
    seen = {topic: set(texts) for topic, texts in existing.items()}
    filled: set[tuple[str, str]] = set()
    for record in records:
        topic = record.topic.strip()
        row = counts.setdefault(topic, {"read": 0, "kept": 0, "below_threshold": 0, "duplicates": 0, "ids_filled": 0})
        row["read"] += 1
        if record.confidence is not None and record.confidence < min_confidence:
            row["below_threshold"] += 1
            continue
        text = normalize_text(proposition_text(record.subject.strip(), record.relation.strip(), record.object.strip()))
        if text in seen.setdefault(topic, set()):
            row["duplicates"] += 1
            # A row repeating a proposition imported before without an id gives it the row's id (the
            # seed's propositions have none). Fuzzed texts practically never repeat the seed's, so
            # the refusals of a second, different id are tested in tests/annotation/test_import_ids.py.
            if record.id.strip() and text in existing.get(topic, set()) and (topic, text) not in filled:
                filled.add((topic, text))
                row["ids_filled"] += 1
            continue
        seen[topic].add(text)
        row["kept"] += 1
    return counts


@st.composite
def topics_files(draw) -> ProposedFile:
    """A well-formed topics file (key, description) and the descriptions it sets."""
    delimiter, filename = draw(st.sampled_from([("\t", "topics.tsv"), (",", "topics.csv")]))
    keys = draw(st.lists(_topic_text, min_size=1, max_size=4, unique_by=lambda key: key.strip()))
    descriptions = {key: draw(st.one_of(st.just(""), _text)) for key in keys}
    extra = draw(st.booleans())
    header = ["key", "description", *(["notes"] if extra else [])]
    out = io.StringIO()
    writer = csv.writer(
        out, delimiter=delimiter, lineterminator=draw(st.sampled_from(["\n", "\r\n"])), quoting=csv.QUOTE_ALL
    )
    writer.writerow([draw(st.sampled_from([name, name.upper(), f" {name}"])) for name in header])
    for key, description in descriptions.items():
        writer.writerow([key, description, *(["n"] if extra else [])])
    text = (BOM if draw(st.booleans()) else "") + out.getvalue()
    return ProposedFile(
        filename=filename,
        format="auto",
        real_format="topics",
        content=text.encode("utf-8"),
        records=(),
        descriptions={key.strip(): description.strip() for key, description in descriptions.items()},
    )


# --- mutations ----------------------------------------------------------------------------

_STRAY_BYTES = st.sampled_from(
    [b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\x00", b"\r", b"\t", b",", b'"', b"\n", b"{", b"\xef\xbb\xbf"]
)


def _lines(content: bytes) -> list[bytes]:
    return content.splitlines(keepends=True) or [b""]


@st.composite
def _mutate(draw, content: bytes) -> bytes:
    kind = draw(
        st.sampled_from(
            [
                "truncate",
                "drop_line",
                "repeat_line",
                "swap_lines",
                "drop_field",
                "add_field",
                "stray_bytes",
                "bad_json_line",
                "json_escape",
                "reencode",
                "blank_lines",
                "empty",
                "long_value",
                "huge_field",
            ]
        )
    )
    lines = _lines(content)
    at = draw(st.integers(0, len(lines) - 1))
    if kind == "truncate":
        return content[: draw(st.integers(0, len(content)))]
    if kind == "drop_line":
        return b"".join(lines[:at] + lines[at + 1 :])
    if kind == "repeat_line":
        return b"".join(lines[: at + 1] + lines[at:])
    if kind == "swap_lines":
        other = draw(st.integers(0, len(lines) - 1))
        lines[at], lines[other] = lines[other], lines[at]
        return b"".join(lines)
    if kind in ("drop_field", "add_field"):
        separator = draw(st.sampled_from([b"\t", b","]))
        parts = lines[at].split(separator)
        if kind == "drop_field":
            parts.pop(draw(st.integers(0, len(parts) - 1)))
        else:
            parts.insert(draw(st.integers(0, len(parts))), draw(st.binary(max_size=5)))
        lines[at] = separator.join(parts)
        return b"".join(lines)
    if kind == "stray_bytes":
        position = draw(st.integers(0, len(content)))
        return content[:position] + draw(_STRAY_BYTES) + content[position:]
    if kind == "bad_json_line":
        bad = draw(st.sampled_from([b"{\n", b"not json\n", b"[1, 2]\n", b'"text"\n', b"{'single': 1}\n", b"null\n"]))
        return b"".join(lines[:at] + [bad] + lines[at:])
    if kind == "json_escape":  # NUL, lone surrogates of either half, a valid pair
        escape = draw(st.sampled_from([b"\\u0000", b"\\ud800", b"\\udfff", b"\\ud83d", b"\\ud83d\\ude00"]))
        parts = content.split(b'": "')
        at = draw(st.integers(1, len(parts) - 1)) if len(parts) > 1 else 0
        return b'": "'.join(parts[:at] + [escape + b"".join(parts[at : at + 1])] + parts[at + 1 :])
    if kind == "long_value":  # a topic key over 100 characters, or a proposition over 2,000 bytes
        where = draw(st.sampled_from([b'"topic": "', b'"TOPIC": "', b"\n", b"\t", b"("]))
        return content.replace(where, where + b"k" * draw(st.sampled_from([101, 2_100])), 1)
    if kind == "reencode":
        codec = draw(st.sampled_from(["utf-16", "latin-1", "cp1252", "utf-32"]))
        return content.decode("utf-8", errors="replace").encode(codec, errors="replace")
    if kind == "blank_lines":
        return b"".join(lines[:at] + [b"\n", b"  \t\r\n"] + lines[at:])
    if kind == "empty":
        return draw(st.sampled_from([b"", b"\n\n", b" \t ", b"\xef\xbb\xbf"]))
    # huge_field: a field past csv's 131,072-character limit, or a huge JSON string.
    huge = b"x" * draw(st.sampled_from([70_000, 140_000]))
    return content.replace(b"\t", b"\t" + huge, 1).replace(b'"subject": "', b'"subject": "' + huge, 1)


@st.composite
def mutated_files(draw) -> ProposedFile:
    """A valid file with one to three mutations: its rows are no longer known."""
    original = draw(valid_files())
    content = original.content
    for _ in range(draw(st.integers(1, 3))):
        content = draw(_mutate(content))
    return ProposedFile(
        filename=original.filename,
        format=original.format,
        real_format=original.real_format,
        content=content,
        records=(),
        topic_key=original.topic_key,
    )


@st.composite
def mutated_topics_files(draw) -> ProposedFile:
    original = draw(topics_files())
    content = draw(_mutate(original.content))
    return ProposedFile(original.filename, "auto", "topics", content, ())


@st.composite
def arbitrary_files(draw) -> ProposedFile:
    """Bytes or text that owe nothing to any format, under any name and format option."""
    content = draw(
        st.one_of(
            st.binary(max_size=400),
            st.text(max_size=300).map(str.encode),
            st.text(max_size=300).map(lambda text: f"topic\tsubject\trelation\tobject\n{text}".encode()),
            st.text(max_size=300).map(lambda text: f"topic,subject,relation,object\n{text}".encode()),
            st.lists(st.text(max_size=40).map(json.dumps), max_size=5).map(lambda lines: "\n".join(lines).encode()),
        )
    )
    names = ["p.tsv", "p.csv", "p.jsonl", "p.txt", "notes", "p.json", "P.CSV", ".tsv", "dir/x.tsv"]
    filename = draw(st.sampled_from(names))
    return ProposedFile(filename, draw(st.sampled_from(["auto", *FILE_FORMATS])), "unknown", content, ())
