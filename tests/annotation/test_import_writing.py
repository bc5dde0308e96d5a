"""Writing imported rows (annotation/importing/writing.py): COPY on PostgreSQL, executemany on
SQLite, the same rows either way, in the import's one transaction."""

import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.importing import writing
from annotation.importing.importers import ImportFailed, _Admission
from annotation.models import ImportRecord, Proposition, Topic
from tests.annotation.test_importers import run_import
from tests.factories import CampaignFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign():
    return CampaignFactory(slug="c1")


@pytest.fixture
def small_reads(monkeypatch):
    """Many COPY reads, pauses and executemany chunks for a few rows."""
    monkeypatch.setattr(writing, "ROWS_PER_READ", 3)
    monkeypatch.setattr(writing, "LOOKAHEAD_ROWS", 3)
    monkeypatch.setattr(writing, "CHUNK_ROWS", 3)


AWKWARD = [
    # subject, relation, object, source, id: what COPY's text format escapes, or could misread
    ("C:\\temp\\new", "is", "a path", "doc\\N", "\\N"),
    ("a\ttab", "inside", "quotes", "x", "\\."),
    ("two\nlines", "in one", "field", "a\rb", "p3"),
    ("Ünïcödé – “quoted”", "has", "emoji 🐝", "", ""),
]


def test_awkward_text_is_stored_exactly(campaign, small_reads):
    lines = ["topic,subject,relation,object,confidence,source,id"]
    for subject, relation, obj, source, external_id in AWKWARD:
        cells = [subject, relation, obj, "", source, external_id]
        lines.append("t," + ",".join('"' + cell.replace('"', '""') + '"' for cell in cells))
    summary = run_import(campaign, "\n".join(lines) + "\n", filename="p.csv")

    assert summary.topics["t"].kept == len(AWKWARD)
    stored = list(
        Proposition.objects.order_by("pk").values_list("subject", "relation", "object", "source", "external_id")
    )
    assert stored == AWKWARD
    assert not Proposition.objects.filter(confidence__isnull=False).exists()  # an empty cell is NULL


@pytest.mark.parametrize("read_ahead", [3, 2000])
def test_rows_of_many_topics_go_to_their_own(campaign, small_reads, monkeypatch, read_ahead):
    """A topic met for the first time ends one COPY; the next begins once it, and the topics of
    the rows read ahead, are open."""
    monkeypatch.setattr(writing, "LOOKAHEAD_ROWS", read_ahead)
    rows = "".join(f"k{index % 7}\ts{index}\tr\to\t0.9\n" for index in range(50))
    summary = run_import(campaign, "topic\tsubject\trelation\tobject\tconfidence\n" + rows)

    assert {key: counts.kept for key, counts in summary.topics.items()} == {
        f"k{key}": len(range(key, 50, 7)) for key in range(7)
    }
    for topic in Topic.objects.all():
        subjects = sorted(topic.propositions.values_list("subject", flat=True), key=lambda s: int(s[1:]))
        assert subjects == [f"s{index}" for index in range(50) if f"k{index % 7}" == topic.key]


def test_a_traps_file_is_imported_in_the_same_call(campaign):
    traps = io.BytesIO(b"topic\tsubject\trelation\tobject\nloans\tthe city council\tapproved\ta parking garage\n")
    summary = run_import(
        campaign,
        "topic\tsubject\trelation\tobject\nloans\tfederal loans\trequire\tno credit check\n",
        traps_source=traps,
        traps_filename="traps.tsv",
    )

    assert dict(Proposition.objects.values_list("subject", "trap_kind")) == {
        "federal loans": "none",
        "the city council": "subtle",
    }
    assert vars(summary.traps["loans"]) == {
        "read": 1,
        "kept": 1,
        "below_threshold": 0,
        "duplicates": 0,
        "ids_filled": 0,
    }
    assert ImportRecord.objects.get().summary["traps"]["loans"]["kept"] == 1


def test_a_problem_in_the_traps_file_writes_nothing_at_all(campaign):
    traps = io.BytesIO(b"topic\tsubject\trelation\tobject\nloans\t\tapproved\ta garage\n")
    with pytest.raises(ImportFailed) as raised:
        run_import(
            campaign,
            "topic\tsubject\trelation\tobject\nloans\tfederal loans\trequire\tno credit check\n",
            traps_source=traps,
            traps_filename="traps.tsv",
        )
    assert raised.value.details == ["traps.tsv:2 [subject]: required field is empty"]
    assert not Topic.objects.exists() and not Proposition.objects.exists() and not ImportRecord.objects.exists()


def test_an_error_while_rows_stream_is_raised_as_itself_and_nothing_is_written(campaign, monkeypatch, small_reads):
    admit = _Admission.admit

    def failing(self, row, text):
        if row.line == 8:
            raise RuntimeError("disk on fire")
        return admit(self, row, text)

    monkeypatch.setattr(_Admission, "admit", failing)
    rows = "".join(f"t\ts{index}\tr\to\n" for index in range(10))
    with pytest.raises(RuntimeError, match="disk on fire"):
        run_import(campaign, "topic\tsubject\trelation\tobject\n" + rows)
    assert not Topic.objects.exists() and not Proposition.objects.exists()


def _import_queries(campaign, rows: int) -> int:
    text = "topic\tsubject\trelation\tobject\n" + "".join(f"t{i % 3}\ts{i}\tr\to\n" for i in range(rows))
    with CaptureQueriesContext(connection) as queries:
        run_import(campaign, text)
    return len(queries)


def test_queries_grow_with_topics_not_rows(campaign):
    few = _import_queries(campaign, 30)
    Proposition.objects.all().delete()
    Topic.objects.all().delete()
    many = _import_queries(campaign, 3 * writing.CHUNK_ROWS - 30)  # SQLite: the executemany chunks count
    assert many - few <= 2
