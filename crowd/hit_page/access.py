"""Who may see a HIT page, and in which state. Read-only: preview traffic writes nothing."""

import enum
import functools
import re
from dataclasses import dataclass

from django.db import connection

from annotation.models import Campaign
from config.errors import ApplicationError
from config.postgresql.prepared import PreparedStatement
from crowd.hit_page.content import HitContent
from crowd.hit_page.params import MAX_ID_LENGTH, HitParams
from crowd.models import Assignment, Worker, WorkerBlock, WorkerQuality

# MTurk ids are upper-case letters and digits; other channels may use a few more symbols.
_ID = re.compile(rf"[\x21-\x7e]{{1,{MAX_ID_LENGTH}}}")


class PageState(enum.StrEnum):
    PREVIEW = "preview"  # task shown, disabled
    WORK = "work"  # task shown, enabled, with a submit token
    UNAVAILABLE = "unavailable"  # blocked, or excluded by quality control in this campaign
    SUBMITTED = "submitted"  # this worker already answered this task


@dataclass(frozen=True)
class Access:
    state: PageState
    # The stored answer of this very assignment, so its copy can be sent to MTurk again.
    assignment: Assignment | None = None


def worker_ids_check(*, assignment_id: str, worker_id: str) -> None:
    """MTurk's ids of an accepted assignment; raises ApplicationError when unusable."""
    if not assignment_id or not worker_id:
        raise ApplicationError(
            "This page needs the assignmentId and workerId that Mechanical Turk adds: open it from the HIT.",
            code="missing_ids",
        )
    if not _ID.fullmatch(assignment_id) or not _ID.fullmatch(worker_id):
        raise ApplicationError("The assignmentId or workerId in the address is not valid.", code="invalid_ids")


def hit_access_check(*, content: HitContent, params: HitParams) -> Access:
    """The page state for `params`: one query, and one more only after a submission."""
    if not params.preview:
        worker_ids_check(assignment_id=params.assignment_id, worker_id=params.worker_id)
    shown = Access(PageState.PREVIEW if params.preview else PageState.WORK)
    if not _ID.fullmatch(params.worker_id):
        return shown  # no worker yet, or (previewing) an id MTurk never makes: nobody to look up
    with connection.cursor() as cursor:
        _worker_state.execute(
            cursor,
            [
                content.campaign_id,
                content.campaign_id,
                content.campaign_id,
                WorkerQuality.Status.EXCLUDED,
                WorkerQuality.Status.EXCLUDED,
                content.task_id,
                content.channel,
                params.worker_id,
            ],
        )
        row = cursor.fetchone()
    if row is None:
        return shown  # a worker we have not met yet
    worker_pk, blocked, excluded, submitted = row
    if blocked or excluded:
        return Access(PageState.UNAVAILABLE)
    if submitted:
        same = Assignment.objects.filter(
            task_id=content.task_id, worker_id=worker_pk, assignment_id=params.assignment_id
        ).first()
        return Access(PageState.SUBMITTED, assignment=same)
    return shown


@functools.cache
def _worker_state_sql() -> str:
    """Banned or blocked by the campaign's owner (`WorkerBlock.objects.reaching`: a block set
    in this campaign or another of its owner's), excluded in the campaign (an override wins over the computed status), and
    answered this task. Written as SQL because it runs on every page view, previews
    included, and the ORM spends several times longer compiling it than the database
    spends running it (benchmarks/hit_page_bench.py)."""
    quote = connection.ops.quote_name
    return f"""
        SELECT w.id,
            w.blocked OR EXISTS (
                SELECT 1 FROM {quote(WorkerBlock._meta.db_table)} b
                JOIN {quote(Campaign._meta.db_table)} bc ON bc.id = b.campaign_id
                WHERE b.worker_id = w.id
                  AND (b.campaign_id = %s
                       OR bc.owner_id = (SELECT c.owner_id FROM {quote(Campaign._meta.db_table)} c WHERE c.id = %s))),
            EXISTS (SELECT 1 FROM {quote(WorkerQuality._meta.db_table)} q
                    WHERE q.worker_id = w.id AND q.campaign_id = %s
                      AND (q.override_status = %s OR (q.override_status = '' AND q.computed_status = %s))),
            EXISTS (SELECT 1 FROM {quote(Assignment._meta.db_table)} a
                    WHERE a.worker_id = w.id AND a.task_id = %s)
        FROM {quote(Worker._meta.db_table)} w
        WHERE w.channel = %s AND w.external_id = %s
    """


_worker_state = PreparedStatement("hit_worker_state", _worker_state_sql)
