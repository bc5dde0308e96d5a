"""Delimited files separated by tabs, commas or semicolons: the delimiter is found from the
header (or given), named in the summary and in the problem when the header lacks a column."""

import io

import pytest

from annotation.importing.importers import ImportFailed
from annotation.models import Proposition, Topic
from tests.annotation.test_importers import run_import
from tests.factories import CampaignFactory

pytestmark = pytest.mark.django_db

EXCEL = "topic;subject;relation;object;confidence\r\nloans;federal loans;do not require;a credit check;0,9\r\n"


@pytest.fixture
def campaign():
    return CampaignFactory(slug="c1")


def test_a_semicolon_csv_from_excel_imports_with_its_decimal_commas(campaign):
    summary = run_import(campaign, EXCEL, filename="export.csv")

    assert (summary.format, summary.delimiter, summary.read_as) == ("csv", "semicolon", "csv, semicolon-separated")
    assert summary.as_dict()["delimiter"] == "semicolon"
    kept = Proposition.objects.get()
    assert (kept.subject, kept.object, kept.confidence) == ("federal loans", "a credit check", 0.9)


@pytest.mark.parametrize(
    "text, filename, found",
    [
        ("topic,subject,relation,object\nloans,a,b,c\n", "p.csv", ("csv", "comma")),
        ("topic\tsubject\trelation\tobject\nloans\ta\tb\tc\n", "p.csv", ("tsv", "tab")),  # Excel's "Unicode text"
        ("topic;subject;relation;object\nloans;a;b;c\n", "p.tsv", ("csv", "semicolon")),
        ("topic;subject;relation;object\nloans;a;b;c\n", "propositions", ("csv", "semicolon")),  # no extension
        ('"topic";"subject";"relation";"object"\n"loans";"a; b";"c";"d"\n', "p.csv", ("csv", "semicolon")),
    ],
)
def test_the_delimiter_is_the_one_that_splits_the_header_into_the_columns(campaign, text, filename, found):
    summary = run_import(campaign, text, filename=filename)
    assert (summary.format, summary.delimiter) == found
    assert Proposition.objects.count() == 1


def test_a_header_without_the_columns_names_the_delimiter_it_was_read_with(campaign):
    with pytest.raises(ImportFailed) as raised:
        run_import(campaign, "topic;subject;relation\nloans;a;b\n", filename="p.csv")
    assert raised.value.details == [
        "p.csv:1 [header]: missing required column(s): object; the header must name topic, subject, relation, "
        "object (optional: confidence, source, id), separated by tabs, commas or semicolons; read as "
        "semicolon-separated, it has 3 column(s)"
    ]
    assert not Topic.objects.exists()


@pytest.mark.parametrize("delimiter", ["semicolon", ";"])
def test_a_delimiter_can_be_given(campaign, delimiter):
    summary = run_import(campaign, "topic;subject;relation;object\nloans;a,b;c;d\n", delimiter=delimiter)
    assert summary.delimiter == "semicolon"
    assert Proposition.objects.get().subject == "a,b"


def test_a_given_delimiter_is_used_even_where_another_would_fit(campaign):
    with pytest.raises(ImportFailed) as raised:
        run_import(campaign, "topic;subject;relation;object\nloans;a;b;c\n", filename="p.csv", delimiter="comma")
    assert "read as comma-separated, it has 1 column(s)" in raised.value.details[0]
    assert not Topic.objects.exists()


@pytest.mark.parametrize(
    "options, filename, code, detail",
    [
        ({"delimiter": "pipe"}, "p.csv", "import_unknown_delimiter", "p.csv: unknown delimiter 'pipe'"),
        (
            {"delimiter": "comma"},
            "p.jsonl",
            "import_unknown_delimiter",
            "p.jsonl: a delimiter applies to TSV and CSV files; p.jsonl is read as jsonl",
        ),
    ],
)
def test_a_delimiter_that_cannot_apply_is_refused(campaign, options, filename, code, detail):
    with pytest.raises(ImportFailed) as raised:
        run_import(campaign, '{"topic": "t", "subject": "a", "relation": "b", "object": "c"}\n', filename, **options)
    assert raised.value.code == code
    assert raised.value.details[0].startswith(detail)
    assert not Topic.objects.exists()


def test_a_semicolon_topics_file_is_read_too(campaign):
    topics = io.BytesIO(b"key;description\nloans;paying for college\n")
    run_import(campaign, EXCEL, filename="export.csv", topics_source=topics, topics_filename="topics.csv")
    assert Topic.objects.get().description == "paying for college"
