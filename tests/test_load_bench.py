"""The load benchmark (benchmarks/load/): its audit catches lost and doubled answers, and a
tiny run through gunicorn on PostgreSQL comes out correct. No time is asserted."""

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.load.audit import Stored, audit
from benchmarks.load.client import RACE, RETRY, Failure, Job, Outcome
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
