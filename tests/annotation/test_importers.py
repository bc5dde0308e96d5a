"""Proposition import: every format, the threshold, dedup, topics, and every bad input."""

import io
import json

import pytest
from django.core.management import call_command
from django.test import override_settings

from annotation.campaigns import campaign_create
from annotation.importing.importers import ImportFailed, propositions_import
from annotation.models import ImportRecord, Proposition, Topic

pytestmark = pytest.mark.django_db

TSV = (
    "topic\tsubject\trelation\tobject\tconfidence\tsource\tid\n"
    "loans\tfederal loans\tdo not require\ta credit check\t0.9\tdoc1\tp1\n"
    "loans\tprivate loans\trequire\ta co-signer\t0.3\tdoc1\tp2\n"
    "loans\tFederal   Loans\tdo NOT require\ta credit check\t0.8\tdoc2\tp3\n"
    "bees\tvarroa mites\tweaken\tcolonies\t\tdoc3\tp4\n"
)


@pytest.fixture
def campaign():
    return campaign_create(slug="c1", name="Campaign one")


def run_import(campaign, text, filename="props.tsv", **options):
    data = text.encode("utf-8") if isinstance(text, str) else text
    return propositions_import(campaign=campaign, source=io.BytesIO(data), filename=filename, **options)


def test_tsv_threshold_dedup_and_summary(campaign):
    summary = run_import(campaign, TSV)
    assert summary.format == "tsv"
    assert vars(summary.topics["loans"]) == {
        "read": 3,
        "kept": 1,
        "below_threshold": 1,
        "duplicates": 1,
        "ids_filled": 0,
    }
    assert vars(summary.topics["bees"]) == {
        "read": 1,
        "kept": 1,
        "below_threshold": 0,
        "duplicates": 0,
        "ids_filled": 0,
    }
    kept = Proposition.objects.get(topic__key="loans")
    assert (kept.subject, kept.relation, kept.object) == ("federal loans", "do not require", "a credit check")
    assert kept.text == "federal loans – do not require – a credit check"
    assert kept.confidence == 0.9 and kept.source == "doc1" and kept.external_id == "p1"
    assert Proposition.objects.get(topic__key="bees").confidence is None  # kept without confidence
    assert sorted(summary.created_topics) == ["bees", "loans"]
    assert ImportRecord.objects.get().summary["topics"]["loans"]["kept"] == 1


def test_second_import_of_the_same_rows_counts_them_as_duplicates(campaign):
    run_import(campaign, TSV)
    summary = run_import(campaign, TSV)
    assert summary.topics["loans"].duplicates == 2 and summary.topics["loans"].kept == 0
    assert Proposition.objects.count() == 2


def test_threshold_is_configurable(campaign):
    summary = run_import(campaign, TSV, min_confidence=0.0)
    assert summary.topics["loans"].kept == 2


def test_csv_with_quoted_fields(campaign):
    text = 'topic,subject,relation,object\nloans,"loans, grants",cover,"tuition, fees"\n'
    summary = run_import(campaign, text, filename="props.csv")
    assert summary.format == "csv"
    assert Proposition.objects.get().subject == "loans, grants"


def test_jsonl(campaign):
    lines = [
        {"topic": "loans", "subject": "a", "relation": "b", "object": "c", "confidence": 0.7, "id": 12},
        {"topic": "loans", "subject": "d", "relation": "e", "object": "f"},
    ]
    summary = run_import(campaign, "\n".join(json.dumps(line) for line in lines) + "\n", filename="p.jsonl")
    assert summary.format == "jsonl" and summary.topics["loans"].kept == 2
    assert Proposition.objects.get(subject="a").external_id == "12"


OPENIE_COLUMN = (
    "0.93\t\tSimpleArgument(Barack Obama,List([25, 37)))\tRelation(gave,List([38, 42)))\t"
    "SimpleArgument(his speech,List([43, 53))); TemporalArgument(on Tuesday,List([54, 64)))\t"
    "The U.S. president Barack Obama gave his speech on Tuesday.\n"
    "0.41\t\tSimpleArgument(his speech,List([43, 53)))\tRelation(was on,List([0, 1)))\t"
    "TemporalArgument(Tuesday,List([57, 64)))\tThe U.S. president Barack Obama gave his speech on Tuesday.\n"
    "0.88\tContext(Some people say,List([0, 15)))\tSimpleArgument(Barack Obama,List([16, 28)))\t"
    "Relation(was born,List([29, 37)))\tSpatialArgument(in Kenya,List([38, 46)))\t"
    "Some people say Barack Obama was born in Kenya.\n"
)


def test_openie_column_layout(campaign):
    summary = run_import(campaign, OPENIE_COLUMN, filename="obama.txt", format="openie")
    assert summary.format == "openie"
    assert vars(summary.topics["obama"]) == {
        "read": 3,
        "kept": 2,
        "below_threshold": 1,
        "duplicates": 0,
        "ids_filled": 0,
    }
    first = Proposition.objects.get(relation="gave")
    assert first.subject == "Barack Obama" and first.object == "his speech on Tuesday"
    assert first.source.startswith("The U.S. president")
    assert Proposition.objects.get(relation="was born").object == "in Kenya"


OPENIE_SIMPLE = (
    "The U.S. president Barack Obama gave his speech on Tuesday.\n"
    "0.93 (Barack Obama; gave; his speech; T:on Tuesday)\n"
    "0.38 (Barack Obama; is the president of; U.S.)\n"
    "\n"
    "Some people say Barack Obama was born in Kenya.\n"
    "0.88 Context(Some people say,List([0, 15))):(Barack Obama; was born; L:in Kenya)\n"
    "\n"
)


def test_openie_simple_layout_detected_and_topic_from_option(campaign):
    summary = run_import(campaign, OPENIE_SIMPLE, filename="out.openie", topic_key="obama")
    assert summary.format == "openie"
    assert summary.topics["obama"].kept == 2 and summary.topics["obama"].below_threshold == 1
    born = Proposition.objects.get(relation="was born")
    assert born.object == "in Kenya" and born.source == "Some people say Barack Obama was born in Kenya."


def test_topics_file_sets_descriptions_and_missing_ones_warn(campaign):
    topics = io.BytesIO(b"key\tdescription\nloans\tpaying for college\n")
    summary = run_import(campaign, TSV, topics_source=topics, topics_filename="topics.tsv")
    assert Topic.objects.get(key="loans").description == "paying for college"
    assert Topic.objects.get(key="bees").description == ""
    assert any("'bees' has no description" in warning for warning in summary.warnings)
    assert not any("'loans'" in warning for warning in summary.warnings)


def _assert_nothing_written():
    assert Proposition.objects.count() == 0
    assert Topic.objects.count() == 0
    assert ImportRecord.objects.count() == 0


@pytest.mark.parametrize(
    "content, filename, options, expected",
    [
        (
            b"topic\tsubject\trelation\tobject\nloans\ta\tb\tc\nloans\t\xff\xfe bad\tb\tc\n",
            "p.tsv",
            {},
            "p.tsv:3: undecodable bytes at position 6",
        ),
        (
            b"topic\tsubject\trelation\nloans\ta\tb\n",
            "p.tsv",
            {},
            "p.tsv:1 [header]: missing required column(s): object",
        ),
        (
            b"topic\tsubject\trelation\tobject\nloans\ta\t\tc\n",
            "p.tsv",
            {},
            "p.tsv:2 [relation]: required field is empty",
        ),
        (
            b"topic\tsubject\trelation\tobject\tconfidence\nloans\ta\tb\tc\thigh\n",
            "p.tsv",
            {},
            "p.tsv:2 [confidence]: expected a number between 0 and 1, got 'high'",
        ),
        (
            b"topic\tsubject\trelation\tobject\tconfidence\nloans\ta\tb\tc\t1.5\n",
            "p.tsv",
            {},
            "p.tsv:2 [confidence]: expected a number between 0 and 1, got 1.5",
        ),
        (b"topic\tsubject\trelation\tobject\nloans\ta\tb\tc\n", "p.tsv", {"format": "xml"}, "unknown format 'xml'"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image.tsv", {}, "image.tsv:1: this looks like a binary file"),
        (b"just some words\nnothing tabular\n", "notes", {}, "cannot tell the format"),
        (
            b'{"topic": "loans", "subject": "a"}\nnot json\n',
            "p.jsonl",
            {},
            "p.jsonl:1 [relation]: required field is empty",
        ),
        (
            b'{"topic": "loans", "subject": "a", "relation": "b", "object": "c"}\nnot json\n',
            "p.jsonl",
            {},
            "p.jsonl:2: invalid JSON",
        ),
        (
            b"0.9\t\tSimpleArgument(a,List([0, 1)))\tbroken\tSimpleArgument(c,List([4, 5)))\tA sentence.\n",
            "x.txt",
            {"format": "openie"},
            "x.txt:1 [relation]: expected a relation",
        ),
        (b"", "empty.tsv", {}, "empty.tsv: the file is empty"),
    ],
)
def test_bad_input_is_reported_by_line_and_nothing_is_written(campaign, content, filename, options, expected):
    with pytest.raises(ImportFailed) as raised:
        run_import(campaign, content, filename=filename, **options)
    assert any(expected in detail for detail in raised.value.details), raised.value.details
    _assert_nothing_written()


def test_a_problem_late_in_the_file_rolls_back_the_chunks_already_inserted(campaign, monkeypatch):
    monkeypatch.setattr("annotation.importing.writing.CHUNK_ROWS", 10)  # SQLite
    monkeypatch.setattr("annotation.importing.writing.ROWS_PER_READ", 10)  # PostgreSQL's COPY
    rows = "".join(f"loans\tsubject {i}\trel\tobj\t0.9\n" for i in range(55))
    text = "topic\tsubject\trelation\tobject\tconfidence\n" + rows + "loans\tx\ty\tz\tnope\n"
    with pytest.raises(ImportFailed) as raised:
        run_import(campaign, text)
    assert raised.value.details == ["props.tsv:57 [confidence]: expected a number between 0 and 1, got 'nope'"]
    _assert_nothing_written()


def test_problems_are_capped_at_twenty(campaign):
    text = "topic\tsubject\trelation\tobject\n" + "loans\t\tb\tc\n" * 30
    with pytest.raises(ImportFailed) as raised:
        run_import(campaign, text)
    assert len(raised.value.details) == 20
    assert "showing the first 20" in raised.value.message


@override_settings(IMPORT_MAX_BYTES=100)
def test_file_over_the_size_limit_is_refused(campaign):
    with pytest.raises(ImportFailed) as raised:
        run_import(campaign, TSV)
    assert raised.value.code == "import_too_large"
    assert "over the import limit of 100 bytes" in raised.value.message
    _assert_nothing_written()


def test_bad_topics_file_is_refused_with_its_own_name(campaign):
    topics = io.BytesIO(b"name\ttext\nloans\tx\n")
    with pytest.raises(ImportFailed) as raised:
        run_import(campaign, TSV, topics_source=topics, topics_filename="topics.tsv")
    assert raised.value.details == ["topics.tsv:1 [header]: the header must name the columns key and description"]
    _assert_nothing_written()


def test_command_prints_summary(campaign, tmp_path, capsys):
    path = tmp_path / "props.tsv"
    path.write_text(TSV)
    call_command("import_propositions", str(path), "--campaign", "c1")
    output = capsys.readouterr().out
    assert "Imported 2 propositions from props.tsv (tsv, tab-separated)." in output
    assert "loans" in output and "bees" in output


def test_command_exits_with_status_2_and_lists_problems(campaign, tmp_path, capsys):
    path = tmp_path / "bad.tsv"
    path.write_text("topic\tsubject\trelation\tobject\nloans\t\tb\tc\n")
    with pytest.raises(SystemExit) as exited:
        call_command("import_propositions", str(path), "--campaign", "c1")
    assert exited.value.code == 2
    assert "bad.tsv:2 [subject]: required field is empty" in capsys.readouterr().err
    assert Proposition.objects.count() == 0


def test_create_campaign_command_uses_the_papers_defaults(capsys):
    call_command("create_campaign", "paper", "--name", "Paper defaults")
    from annotation.models import Campaign

    campaign = Campaign.objects.get(slug="paper")
    assert (campaign.likert_group_size, campaign.assignments_per_hit, campaign.top_k) == (5, 5, 100)
    assert str(campaign.likert_reward) == "0.06" and str(campaign.comparison_reward) == "0.05"
    assert campaign.pair_budget_fraction == 0.10 and campaign.batch_pairs == 100


def test_subtle_traps_are_imported_with_their_kind(campaign):
    text = "topic\tsubject\trelation\tobject\nloans\tthe city council\tapproved\ta parking garage\n"
    summary = run_import(campaign, text, filename="traps.tsv", trap_kind="subtle")
    assert summary.topics["loans"].kept == 1
    assert Proposition.objects.get().trap_kind == Proposition.TrapKind.SUBTLE
