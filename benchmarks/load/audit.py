"""Correctness after the run: what the clients were told against what the database holds.

Every acknowledged answer stored once, exactly as sent; nothing stored that no client was
told about; each Likert answer with its five labels; answers sent twice (after the reply,
or at the same time from a second tab) stored once; one Worker row per workerId; and no
request failed (a 5xx, a refusal of a legitimate submission, a dropped connection).
"""

from collections import Counter
from dataclasses import dataclass

from benchmarks.load.client import RACE, RETRY, Failure, Outcome

STATEMENTS_PER_TASK = 5  # the paper's Likert HIT (fixtures.py builds them): 5 labels an answer
SHOWN = 5  # examples quoted per failed check


@dataclass(frozen=True)
class Stored:
    """The answers in the database: assignment id -> (worker id, task uuid, {statement: score})."""

    assignments: dict[str, tuple[str, str, dict[int, int]]]
    rows: int  # assignment rows, duplicates included
    labels: int
    workers: int
    labels_per_assignment: Counter  # labels of an assignment row -> rows with that many


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    figures: str
    detail: str = ""


def audit(*, outcomes: list[Outcome], failures: list[Failure], stored: Stored, workers: int) -> list[Check]:
    acknowledged = {outcome.job.assignment_id: outcome for outcome in outcomes if outcome.acknowledged}
    stored_ids = set(stored.assignments)
    lost = sorted(set(acknowledged) - stored_ids)
    unannounced = sorted(stored_ids - set(acknowledged))
    mismatched = sorted(
        assignment_id
        for assignment_id, outcome in acknowledged.items()
        if assignment_id in stored.assignments
        and stored.assignments[assignment_id] != (outcome.worker_id, outcome.job.task_uuid, outcome.scores)
    )
    server_errors = [failure for failure in failures if failure.status >= 500]
    other_failures = [failure for failure in failures if failure.status < 500]
    doubled = stored.rows - len(stored_ids)
    expected_labels = STATEMENTS_PER_TASK * stored.rows
    return [
        Check("no 5xx response", not server_errors, f"{len(server_errors)}", _failures(server_errors)),
        Check(
            "no refused or broken request",
            not other_failures,
            f"{len(other_failures)}",
            _failures(other_failures),
        ),
        Check(
            "stored assignments = acknowledged submissions",
            stored.rows == len(acknowledged) and not lost and not unannounced,
            f"{stored.rows} = {len(acknowledged)}",
            "; ".join(
                part
                for part in (
                    f"lost (acknowledged, not stored): {_some(lost)}" if lost else "",
                    f"stored without a 200 to the client: {_some(unannounced)}" if unannounced else "",
                )
                if part
            ),
        ),
        Check("no doubled assignment", doubled == 0, f"{doubled} extra rows"),
        Check(
            f"labels = {STATEMENTS_PER_TASK} × assignments",
            stored.labels == expected_labels and set(stored.labels_per_assignment) <= {STATEMENTS_PER_TASK},
            f"{stored.labels} = {STATEMENTS_PER_TASK} × {stored.rows}",
            ""
            if set(stored.labels_per_assignment) <= {STATEMENTS_PER_TASK}
            else f"labels per assignment: {dict(stored.labels_per_assignment)}",
        ),
        Check("stored answers = answers sent", not mismatched, f"{len(mismatched)} differ", _some(mismatched)),
        _duplicates_check(outcomes),
        Check("worker rows = distinct workerIds", stored.workers == workers, f"{stored.workers} = {workers}"),
    ]


def _duplicates_check(outcomes: list[Outcome]) -> Check:
    """A duplicate sent after the reply must find the answer stored; one sent at the same time
    may be the one that stores it. Either way, the row counts above show nothing was added."""
    by_mode = {mode: Counter(o.duplicate_status for o in outcomes if o.job.duplicate == mode) for mode in (RETRY, RACE)}
    retry_ok = set(by_mode[RETRY]) <= {"already_stored"}
    race_ok = set(by_mode[RACE]) <= {"stored", "already_stored"}
    figures = (
        f"{sum(by_mode[RETRY].values())} after the reply ({_counts(by_mode[RETRY])}), "
        f"{sum(by_mode[RACE].values())} at the same time ({_counts(by_mode[RACE])})"
    )
    return Check("duplicate POSTs stored nothing new", retry_ok and race_ok, figures)


def _counts(counter: Counter) -> str:
    return ", ".join(f"{count} {status}" for status, count in sorted(counter.items())) or "none"


def _failures(failures: list[Failure]) -> str:
    kinds = Counter((failure.kind, failure.status) for failure in failures)
    summary = ", ".join(f"{count} {kind} {status or 'no response'}" for (kind, status), count in sorted(kinds.items()))
    examples = "\n".join(f"      {failure.kind} {failure.status}: {failure.detail}" for failure in failures[:SHOWN])
    return f"{summary}\n{examples}" if failures else ""


def _some(ids: list[str]) -> str:
    return ", ".join(ids[:SHOWN]) + (f" … ({len(ids)} in all)" if len(ids) > SHOWN else "")
