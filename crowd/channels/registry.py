"""The living channels' lifecycles: the one place that lists them, beside the leaf packages'
own registry (crowd/marketplaces/registry.py: adapter and policy per channel).

A lifecycle is what a channel does each pass of the loop beyond the HIT sync every channel
shares (Prolific: its studies reconciled, places topped up, finished studies stopped) and
where its participants arrive (a urls module mounted under /s/ by crowd/channels/urls.py).
Adding a channel touches its leaf package and that registry, and — when it has a lifecycle of
its own — its package here and one line in LIFECYCLES (tests/crowd/channels/test_registry.py
holds the layout to that).
"""

from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime

from annotation.models import Batch, Campaign
from crowd.channels.prolific.study_sync import studies_sync
from crowd.models import HIT, Assignment
from crowd.sessions.holds import sessions_verify
from crowd.work.chunks import Dispatch
from crowd.work.sync import assignments_sync
from crowd.work.sync.report import SyncReport


@dataclass(frozen=True)
class Lifecycle:
    channel: str
    urls: str  # the module of its participants' entry points, mounted under /s/
    sync: Callable[..., object] | None = None  # run each pass with `now`; returns a dataclass report


LIFECYCLES: tuple[Lifecycle, ...] = (
    Lifecycle(channel=Campaign.Channel.PROLIFIC, urls="crowd.channels.prolific.urls", sync=studies_sync),
    Lifecycle(channel=Campaign.Channel.LINKS, urls="crowd.channels.links.urls"),
)


def channels_sync_report(*, now: datetime | None = None, dispatch: Dispatch | None = None) -> tuple[SyncReport, dict]:
    """One sync of everything, for the loop's owner (ranking.workflow): answers of the session
    channels matched with their holds, every open HIT with news of every channel
    (crowd.work.sync), then each channel's own lifecycle. Returns the HIT sync's report and
    the whole summary."""
    verified = sessions_verify(now=now)
    report = assignments_sync(now=now, dispatch=dispatch)
    summary = {**report.as_dict(), "sessions": asdict(verified)}
    for lifecycle in LIFECYCLES:
        if lifecycle.sync is not None:
            summary[lifecycle.channel] = asdict(lifecycle.sync(now=now))  # type: ignore[call-overload]
    return report, summary


def batch_sync_report(*, batch_id: int, now: datetime | None = None) -> SyncReport:
    """The answers of one batch confirmed with their channel, for the loop's event path
    (ranking.workflow.step_requests_run): its campaign's session answers matched with their
    holds, then its open HITs that hold a pending answer (crowd.work.sync with `hit_ids`: at
    MTurk one listing per HIT), confirmed only: approvals and completion wait for the next
    pass, so a step does not wait for them. Nothing of another batch or campaign is read or
    called."""
    campaign_id = Batch.objects.values_list("topic__campaign_id", flat=True).get(pk=batch_id)
    sessions_verify(campaign_ids=[campaign_id], now=now)
    pending = HIT.objects.filter(
        task__batch_id=batch_id, task__assignments__verification=Assignment.Verification.PENDING
    )
    hit_ids = set(pending.values_list("pk", flat=True))
    return assignments_sync(hit_ids=hit_ids, now=now, reviews=False) if hit_ids else SyncReport()


def channels_sync(*, now: datetime | None = None, dispatch: Dispatch | None = None) -> dict:
    """`channels_sync_report`'s summary alone (the Celery task, tests)."""
    return channels_sync_report(now=now, dispatch=dispatch)[1]
