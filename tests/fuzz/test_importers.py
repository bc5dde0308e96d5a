"""propositions_import on fuzzed files: a file is imported whole, with the counts it holds,
or refused with ImportFailed naming file:line [field] and nothing written. Never another
exception, never part of a file."""

import io
import random

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from annotation.importing.importers import PROPOSITION_MAX_BYTES, SNIFF_BYTES, ImportFailed, propositions_import
from annotation.models import Proposition, Topic
from tests.fuzz.examples import FUZZ, isolated
from tests.fuzz.import_checks import (
    KEY_LENGTH,
    assert_imported_whole,
    assert_nothing_written,
    assert_problems_name_lines,
    import_snapshot,
)
from tests.fuzz.known_bugs import skip_known_bug
from tests.fuzz.proposition_files import (
    ProposedFile,
    arbitrary_files,
    expected_rows,
    mutated_files,
    mutated_topics_files,
    topics_files,
    valid_files,
)

pytestmark = pytest.mark.django_db

_min_confidence = st.sampled_from([0.0, 0.5, 0.95, 1.0])


def _import(campaign, file: ProposedFile, *, topics: ProposedFile | None = None, **options):
    return propositions_import(
        campaign=campaign,
        source=io.BytesIO(file.content),
        filename=file.filename,
        format=file.format,
        topic_key=file.topic_key,
        topics_source=io.BytesIO(topics.content) if topics else None,
        topics_filename=topics.filename if topics else "topics",
        **options,
    )


def _existing_texts(campaign) -> dict[str, set[str]]:
    texts: dict[str, set[str]] = {}
    for key, normalized in Proposition.objects.filter(topic__campaign=campaign).values_list("topic__key", "normalized"):
        texts.setdefault(key, set()).add(normalized)
    return texts


def assert_refused_by_line(failure: ImportFailed, before: dict, campaign, *files: ProposedFile) -> None:
    assert failure.code.startswith("import_") and failure.message
    assert_problems_name_lines(failure.details, *files)
    assert_nothing_written(before, campaign)


def _import_or_refusal(campaign, file, *, topics=None, **options):
    """The summary, or the ImportFailed; an example that hits a known bug is skipped."""
    try:
        summary = _import(campaign, file, topics=topics, **options)
    except ImportFailed as failure:
        event(f"refused: {failure.code}")
        return failure
    except Exception as error:
        skip_known_bug(error)
        raise
    event("imported")
    return summary


# --- properties ---------------------------------------------------------------------------


@FUZZ
@given(file=valid_files(), min_confidence=_min_confidence, trap_kind=st.sampled_from(["none", "subtle"]))
def test_a_valid_file_imports_exactly_the_rows_it_holds(campaign, file, min_confidence, trap_kind):
    with isolated():
        before, existing = import_snapshot(campaign), _existing_texts(campaign)
        summary = _import(campaign, file, min_confidence=min_confidence, trap_kind=trap_kind)
        assert summary.format == file.real_format
        assert {key: vars(counts) for key, counts in summary.topics.items()} == expected_rows(
            file.records, min_confidence=min_confidence, existing=existing
        )
        assert_imported_whole(summary.as_dict(), before, campaign, trap_kind=trap_kind)


@FUZZ
@given(file=valid_files(), topics=topics_files())
def test_a_valid_topics_file_sets_its_descriptions(campaign, file, topics):
    with isolated():
        before = import_snapshot(campaign)
        described = dict(Topic.objects.filter(campaign=campaign).values_list("key", "description"))
        summary = _import(campaign, file, topics=topics)
        assert_imported_whole(summary.as_dict(), before, campaign)
        stored = dict(Topic.objects.filter(campaign=campaign).values_list("key", "description"))
        kept = {key for key, counts in summary.topics.items() if counts.kept}
        for key, description in topics.descriptions.items():
            if key in described or key in kept:
                assert stored[key] == (description or described.get(key, ""))
            else:  # only the topics file names it: reported, never created empty
                assert key not in stored
        # Each key without a description, or without a topic, is named in a warning.
        unusable = {key for key in set(summary.topics) | set(topics.descriptions) if not stored.get(key)}
        assert {key for key in unusable if any(repr(key) in warning for warning in summary.warnings)} == unusable


@FUZZ
@given(file=st.one_of(mutated_files(), arbitrary_files()), min_confidence=_min_confidence)
def test_a_broken_file_is_refused_by_line_or_imported_whole(campaign, file, min_confidence):
    with isolated():
        before = import_snapshot(campaign)
        result = _import_or_refusal(campaign, file, min_confidence=min_confidence)
        if isinstance(result, ImportFailed):
            assert_refused_by_line(result, before, campaign, file)
        else:
            assert_imported_whole(result.as_dict(), before, campaign)


@FUZZ
@given(file=valid_files(), topics=mutated_topics_files())
def test_a_broken_topics_file_refuses_the_whole_import(campaign, file, topics):
    with isolated():
        before = import_snapshot(campaign)
        result = _import_or_refusal(campaign, file, topics=topics)
        if isinstance(result, ImportFailed):
            assert_refused_by_line(result, before, campaign, file, topics)
        else:
            assert_imported_whole(result.as_dict(), before, campaign)


@FUZZ
@given(
    file=valid_files(), trap_kind=st.one_of(st.sampled_from(["obvious", "", "NONE", " subtle"]), st.text(max_size=10))
)
def test_an_unknown_trap_kind_is_refused_before_anything_is_written(campaign, file, trap_kind):
    with isolated():
        before = import_snapshot(campaign)
        result = _import_or_refusal(campaign, file, trap_kind=trap_kind)
        if trap_kind in ("none", "subtle"):
            assert_imported_whole(result.as_dict(), before, campaign, trap_kind=trap_kind)
        else:
            assert isinstance(result, ImportFailed) and result.code == "import_invalid_trap_kind"
            assert repr(trap_kind) in result.message
            assert import_snapshot(campaign) == before


# --- what the fuzzing found, one minimal input each (issue #7) ----------------------------

HEADER = "topic\tsubject\trelation\tobject\n"
JSON_ROW = b'{"topic": "t", "subject": "a", "relation": "r", "object": "o"'
TOPICS_HEADER = b"key\tdescription\n"


def _tsv(text: str, name: str = "p.tsv") -> ProposedFile:
    return ProposedFile(name, "auto", "tsv", text.encode("utf-8"), ())


def _jsonl(line: bytes) -> ProposedFile:
    return ProposedFile("p.jsonl", "auto", "jsonl", line + b"\n", ())


def _topics(content: bytes) -> ProposedFile:
    return ProposedFile("topics.tsv", "auto", "topics", content, ())


def _refusal(campaign, file: ProposedFile, *, topics: ProposedFile | None = None) -> list[str]:
    """The problems of a refused import, having checked that nothing was written."""
    before = import_snapshot(campaign)
    with pytest.raises(ImportFailed) as refused:
        _import(campaign, file, topics=topics)
    assert_refused_by_line(refused.value, before, campaign, *[f for f in (file, topics) if f])
    return refused.value.details


def test_a_topic_key_over_100_characters_in_a_row(campaign):
    assert _refusal(campaign, _tsv(HEADER + "t" * 101 + "\ta\tb\tc\n")) == [
        "p.tsv:2 [topic]: the topic key is 101 characters long; the limit is 100"
    ]


def test_a_topic_key_of_100_characters_is_kept(campaign):
    summary = _import(campaign, _tsv(HEADER + "t" * KEY_LENGTH + "\ta\tb\tc\n"))
    assert summary.created_topics == ["t" * KEY_LENGTH]


def test_a_topic_key_over_100_characters_in_the_topics_file(campaign):
    topics = _topics(TOPICS_HEADER + b"k" * 101 + b"\tx\n")
    assert _refusal(campaign, _tsv(HEADER + "loans\ta\tb\tc\n"), topics=topics) == [
        "topics.tsv:2 [key]: the topic key is 101 characters long; the limit is 100"
    ]


def test_a_topic_key_over_100_characters_from_an_open_ie_file_name(campaign):
    line = "0.9\t\tSimpleArgument(a,List([0, 1)))\tRelation(b,List([2, 3)))\tSimpleArgument(c,List([4, 5)))\tA b c.\n"
    file = ProposedFile("n" * 101 + ".txt", "openie", "openie", line.encode(), ())
    assert _refusal(campaign, file) == [
        f"{file.name}:1 [topic]: the topic key is 101 characters long; the limit is 100"
    ]


def test_a_nul_character_from_a_json_escape(campaign):
    assert _refusal(campaign, _jsonl(JSON_ROW + b', "source": "a\\u0000b"}')) == [
        "p.jsonl:1 [source]: contains a NUL character (a zero byte or \\u0000); expected text"
    ]


def test_a_nul_character_past_the_sniffed_head_of_a_tsv(campaign):
    rows = "".join(f"loans\tsubject {i}\tr\to\n" for i in range(400))  # past the 8 KiB checked for NUL
    assert _refusal(campaign, _tsv(HEADER + rows + "loans\tx\x00y\tr\to\n")) == [
        "p.tsv:402 [subject]: contains a NUL character (a zero byte or \\u0000); expected text"
    ]


def test_a_nul_character_in_the_topics_file(campaign):
    topics = _topics(TOPICS_HEADER + b"loans\t" + b"d" * SNIFF_BYTES + b"\x00\n")
    assert _refusal(campaign, _tsv(HEADER + "loans\ta\tb\tc\n"), topics=topics) == [
        "topics.tsv:2 [description]: contains a NUL character (a zero byte or \\u0000); expected text"
    ]


@pytest.mark.parametrize("escape", [b"\\ud800", b"\\udfff", b"\\ud83d"], ids=["high", "low", "cut-pair"])
def test_a_json_lone_surrogate_escape(campaign, escape):
    assert _refusal(campaign, _jsonl(JSON_ROW + b', "source": "a' + escape + b'"}')) == [
        "p.jsonl:1 [source]: contains an unpaired surrogate (a \\ud800-\\udfff escape without its pair); "
        "expected valid Unicode"
    ]


def test_a_json_surrogate_pair_is_one_character(campaign):
    _import(campaign, _jsonl(JSON_ROW + b', "source": "\\ud83d\\ude00"}'))
    assert Proposition.objects.get(topic__key="t").source == "\U0001f600"


def test_a_json_confidence_past_float_range(campaign):
    assert _refusal(campaign, _jsonl(JSON_ROW + b', "confidence": 1' + b"0" * 400 + b"}")) == [
        "p.jsonl:1 [confidence]: expected a number between 0 and 1, got '1" + "0" * 39 + "…'"
    ]


def test_a_json_integer_over_4300_digits(campaign):
    assert _refusal(campaign, _jsonl(JSON_ROW + b', "n": ' + b"9" * 4301 + b"}")) == [
        "p.jsonl:1: invalid JSON: a number of more than 4300 digits"
    ]


def test_deeply_nested_json(campaign):
    nested = b"[" * 100_000 + b"]" * 100_000
    assert _refusal(campaign, _jsonl(JSON_ROW + b', "x": ' + nested + b"}")) == [
        "p.jsonl:1: invalid JSON: arrays or objects nested too deeply"
    ]


def test_a_json_array_where_text_belongs(campaign):
    nested = b"[" * 50 + b"]" * 50  # str() of one nested deep enough would exceed the recursion limit
    assert _refusal(
        campaign, _jsonl(b'{"topic": "t", "subject": ' + nested + b', "relation": "r", "object": "o"}')
    ) == ["p.jsonl:1 [subject]: expected text, got a JSON array"]


@pytest.mark.parametrize(
    "topics_text, problem",
    [
        (
            TOPICS_HEADER + b"loans\tpaying\rfor college\n",
            "topics.tsv:2: unreadable row: a carriage return (CR) not followed by a line feed, outside quotes; "
            "lines end with LF or CRLF",
        ),
        (
            TOPICS_HEADER + b"loans\t" + b"x" * 140_000 + b"\n",
            "topics.tsv:2: unreadable row: field larger than field limit (131072)",
        ),
    ],
    ids=["bare-cr", "huge-field"],
)
def test_an_unreadable_topics_row(campaign, topics_text, problem):
    assert _refusal(campaign, _tsv(HEADER + "loans\ta\tb\tc\n"), topics=_topics(topics_text)) == [problem]


def test_a_proposition_over_the_index_row_limit(campaign):
    subject = "".join(random.Random(7).choices("abcdefghijklmnopqrstuvwxyz0123456789", k=3000))
    assert _refusal(campaign, _tsv(HEADER + f"loans\t{subject}\tr\to\n")) == [
        "p.tsv:2 [subject]: the proposition (subject – relation – object, normalized) is 3,012 bytes in UTF-8; "
        f"the limit is {PROPOSITION_MAX_BYTES:,} bytes"
    ]


def test_a_proposition_at_the_limit_is_stored(campaign):
    """The limit is in bytes of the normalized text ('é' is two, each ' – ' five), and text
    that does not compress fits PostgreSQL's index at the limit."""
    rng = random.Random(7)
    letters = rng.choices(
        "abcdefghijklmnopqrstuvwxyz0123456789", k=PROPOSITION_MAX_BYTES - len(" – r – o".encode()) - 400
    )
    subject = "".join(rng.sample(letters + ["é"] * 200, k=len(letters) + 200))
    _import(campaign, _tsv(HEADER + f"loans\t{subject}\tr\to\n"))
    assert len(Proposition.objects.get(subject=subject).normalized.encode()) == PROPOSITION_MAX_BYTES
