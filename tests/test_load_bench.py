"""The load benchmark (benchmarks/load/): its audit catches lost and doubled answers, and a
tiny run through gunicorn on PostgreSQL comes out correct. No time is asserted."""

import os
import re
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from annotation.models import Batch
from benchmarks.load import profiling
from benchmarks.load.audit import Stored, audit
from benchmarks.load.client import RACE, RETRY, Failure, Job, Outcome, forms_read
from crowd.hit_page.content import ProcessCache
from crowd.simulation.hits import HIT_FORM_ID, forms_parse
from tests.factories import BatchFactory, PropositionFactory, TaskFactory, TopicFactory
from tests.services import _postgres_bindir

ROOT = Path(__file__).resolve().parent.parent
SCORES = {11: 5, 12: 4, 13: 3, 14: 2, 15: 1}


def _outcome(assignment_id: str, duplicate: str = "", duplicate_status: str = "") -> Outcome:
    job = Job("task-uuid", "HIT", assignment_id, duplicate)
    return Outcome(job, "W1", dict(SCORES), acknowledged=True, duplicate_status=duplicate_status)


def _stored(*assignment_ids: str, rows: int | None = None) -> Stored:
    return Stored(
        assignments={assignment_id: ("W1", "task-uuid", dict(SCORES)) for assignment_id in assignment_ids},
        rows=len(assignment_ids) if rows is None else rows,
        labels=5 * (len(assignment_ids) if rows is None else rows),
        workers=1,
        labels_per_assignment=Counter({5: len(assignment_ids) if rows is None else rows}),
    )


def _failed(checks) -> set[str]:
    return {check.name for check in checks if not check.ok}


def test_audit_passes_when_every_acknowledged_answer_is_stored_once():
    outcomes = [_outcome("A1"), _outcome("A2", RETRY, "already_stored"), _outcome("A3", RACE, "stored")]

    checks = audit(outcomes=outcomes, failures=[], stored=_stored("A1", "A2", "A3"), workers=1)

    assert _failed(checks) == set()


def test_audit_reports_a_lost_answer_a_doubled_row_and_a_5xx():
    outcomes = [_outcome("A1"), _outcome("A2")]
    failures = [Failure("submit", 500, "POST /hit/x/submit/: 'Server Error'")]

    checks = audit(outcomes=outcomes, failures=failures, stored=_stored("A1", rows=2), workers=1)

    assert _failed(checks) == {
        "no 5xx response",
        "stored assignments = acknowledged submissions",
        "no doubled assignment",
    }


def test_audit_reports_a_retried_duplicate_that_was_stored_anew():
    outcomes = [_outcome("A1", RETRY, "stored")]

    checks = audit(outcomes=outcomes, failures=[], stored=_stored("A1"), workers=1)

    assert _failed(checks) == {"duplicate POSTs stored nothing new"}


@pytest.mark.slow
@pytest.mark.skipif(
    _postgres_bindir() is None and not os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="needs PostgreSQL (python -m tests.services ensure)",
)
def test_tiny_load_runs_store_every_answer_once_and_report_their_spread():
    command = [
        sys.executable,
        "benchmarks/load/run.py",
        "--workers",
        "3",
        "--submissions",
        "12",
        "--trivial",
        "6",
        "--rounds",
        "2",
        "--duplicates",
        "0.25",
        "--timeout",
        "150",
        "--repeat",
        "2",
    ]

    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=400)

    assert result.returncode == 0, result.stdout + result.stderr
    output = result.stdout
    assert output.count("12 = 12") == 2  # stored assignments = acknowledged submissions, in each run
    assert output.count("60 = 5 × 12") == 2  # labels
    assert output.count("2 after the reply (2 already_stored)") == 2
    assert output.count("correct: every answer stored once, as sent") == 2
    spread = output.split("2 runs, in order", 1)[1]
    assert "median" in spread and "of 2 runs" in spread and "correct in every run" in spread


def test_profiling_writes_one_profile_per_thread_and_kind_and_prints_them(tmp_path, monkeypatch, capsys):
    """run.py --profile: gunicorn's request hooks (profiling.py) in a worker of one thread."""
    monkeypatch.setenv(profiling.DIRECTORY_VARIABLE, str(tmp_path))
    monkeypatch.setattr(profiling, "_local", threading.local())
    monkeypatch.setattr(profiling, "_profiles", [])
    for path in ("/trivial/", "/hit/5a1e0ce0-0000-4000-8000-000000000001/", "/hit/x/submit/", "/trivial/"):
        request = SimpleNamespace(path=path)
        profiling.pre_request(None, request)
        sorted(range(1000), key=str)
        profiling.post_request(None, request, {}, None)

    profiling.worker_exit(None, None)
    profiling.profiles_print(tmp_path, lines=3)

    assert sorted(file.name.split("-")[0] for file in tmp_path.glob("*.prof")) == ["page", "submit", "trivial"]
    output = capsys.readouterr().out
    assert all(f"===== {kind}: 1 thread profiles =====" in output for kind in profiling.KINDS)
    trivial = output.split("===== trivial")[1]
    assert re.search(r"^\s+2\s.*builtins\.sorted", trivial, re.MULTILINE)  # both trivial requests, one profile


@pytest.mark.django_db
@pytest.mark.parametrize("kind", Batch.Kind.values)
def test_the_clients_form_reader_reads_what_forms_parse_reads(client, kind):
    """The benchmark's client reads forms with a regex (client.forms_read) instead of
    crowd/simulation/hits.py's HTMLParser: the same forms, fields and values on every HIT page
    it loads (work, preview, the hand-over to MTurk), hostile statement text included."""
    ProcessCache.clear_all()
    topic = TopicFactory(description="loans \"for\" <students> & 'others'")
    propositions = PropositionFactory.create_batch(4, topic=topic) + [
        PropositionFactory(topic=topic, subject='<input type="hidden" name="token" value="forged">', object="a & b")
    ]
    task = TaskFactory(batch=BatchFactory(topic=topic, kind=kind), propositions=propositions)
    query = "hitId=H1&turkSubmitTo=https%3A%2F%2Fworkersandbox.mturk.com"
    preview = client.get(f"/hit/{task.uuid}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&{query}").content.decode()
    page = client.get(f"/hit/{task.uuid}/?assignmentId=A1&workerId=W1&{query}").content.decode()
    form = forms_parse(page)[HIT_FORM_ID]
    answer = {name: values[-1] for name, values in form.radios.items()} or {"order": dict(form.hidden)["order"]}
    stored = client.post(f"/hit/{task.uuid}/submit/", {**dict(form.hidden), **answer}).content.decode()

    for html in (preview, page, stored):
        assert forms_read(html) == forms_parse(html)
    assert forms_read(stored)["external-submit"].hidden and dict(forms_read(page)[HIT_FORM_ID].hidden)["token"]
