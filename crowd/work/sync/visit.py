"""One HIT of a chunk as a sync sees it (crowd.work.sync.chunk), and the chunk's row lock."""

from dataclasses import dataclass, field
from datetime import datetime

from annotation.models import Campaign
from crowd.marketplaces.base import RemoteAssignment
from crowd.models import CONFIRMED, HIT, Assignment
from crowd.work.status import collected

Status = Assignment.Status
Verification = Assignment.Verification


@dataclass
class Visit:
    """One HIT of a chunk: what its marketplace lists, and our answers to its task."""

    hit: HIT
    remote: list[RemoteAssignment]
    ours: list[Assignment] = field(default_factory=list)

    @property
    def campaign(self) -> Campaign:
        return self.hit.task.batch.topic.campaign

    def collected(self, *, now: datetime, pending_ignored: bool = False) -> bool:
        counted = sum(1 for answer in self.ours if answer.verification in CONFIRMED)
        pending = sum(1 for answer in self.ours if answer.verification == Verification.PENDING)
        return collected(hit=self.hit, counted=counted, pending=0 if pending_ignored else pending, now=now)

    def waiting(self) -> set[tuple[str, str]]:
        """Listed as submitted and not approved (by us) since: still to be reviewed."""
        approved = {(a.assignment_id, a.worker.external_id) for a in self.ours if a.status != Status.SUBMITTED}
        submitted = {(item.assignment_id, item.worker_id) for item in self.remote if item.status == Status.SUBMITTED}
        return submitted - approved


def hits_lock(visits: list[Visit]) -> None:
    """The chunk's HIT rows, in one query. FOR NO KEY UPDATE: it serialises syncs and reviews
    of a HIT, while a worker's answer to it is stored meanwhile (its foreign key only shares
    the row's key)."""
    hits = HIT.objects.select_for_update(no_key=True).filter(pk__in=[visit.hit.pk for visit in visits])
    list(hits.order_by("pk").values("pk"))
