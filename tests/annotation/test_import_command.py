"""`manage.py import_propositions`: every way it can fail is one line that says what to fix, never
a traceback; the traps file and the delimiter are options."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Proposition
from tests.factories import CampaignFactory

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
GOOD = "topic\tsubject\trelation\tobject\nloans\tfederal loans\trequire\tno credit check\n"


@pytest.fixture
def files(tmp_path):
    CampaignFactory(slug="c1")
    (tmp_path / "props.tsv").write_text(GOOD)
    return tmp_path


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["nope.tsv"], "file nope.tsv: No such file or directory."),
        (["."], "file .: Is a directory."),
        (["props.tsv", "--topics", "nope.tsv"], "--topics nope.tsv: No such file or directory."),
        (["props.tsv", "--traps", "nope.tsv"], "--traps nope.tsv: No such file or directory."),
        (["props.tsv", "--min-confidence", "5"], "--min-confidence must be between 0 and 1, not 5.0."),
        (["props.tsv", "--campaign", "zz"], "No campaign with the slug 'zz'."),
    ],
)
def test_a_command_error_is_one_line(files, monkeypatch, arguments, message):
    monkeypatch.chdir(files)
    options = [] if "--campaign" in arguments else ["--campaign", "c1"]
    with pytest.raises(CommandError) as raised:
        call_command("import_propositions", *arguments, *options)
    assert str(raised.value) == message
    assert not Proposition.objects.exists()


def test_an_unmigrated_database_is_one_line_not_a_traceback(tmp_path):
    (tmp_path / "props.tsv").write_text(GOOD)
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{tmp_path / 'empty.sqlite3'}", CELERY_BROKER_URL="")
    result = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "import_propositions", "props.tsv", "--campaign", "c1"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "CommandError: The database is not ready (no such table: annotation_campaign): "
        "run `python manage.py migrate` first."
    ]


def test_traps_and_a_delimiter_from_the_command_line(files, capsys):
    (files / "props.csv").write_text("topic;subject;relation;object\nloans;federal loans;require;no credit\n")
    (files / "traps.csv").write_text("topic;subject;relation;object\nloans;the council;approved;a garage\n")
    call_command(
        "import_propositions",
        str(files / "props.csv"),
        "--campaign",
        "c1",
        "--delimiter",
        "semicolon",
        "--traps",
        str(files / "traps.csv"),
    )
    output = capsys.readouterr().out
    assert "Imported 1 propositions from props.csv (csv, semicolon-separated)." in output
    assert "traps loans" in output
    assert dict(Proposition.objects.values_list("subject", "trap_kind")) == {
        "federal loans": "none",
        "the council": "subtle",
    }
