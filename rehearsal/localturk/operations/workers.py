"""Workers seen from the requester: blocks and notifications (reference §2.11-2.12)."""

from datetime import datetime

from .. import wire
from ..models import Assignment, Message, Requester, WorkerBlock
from ..pagination import page


def worker_block_create(*, requester: Requester, params: dict, now: datetime) -> dict:
    WorkerBlock.objects.update_or_create(
        requester=requester, worker_id=params["WorkerId"], defaults={"reason": params["Reason"]}
    )
    return {}


def worker_block_delete(*, requester: Requester, params: dict, now: datetime) -> dict:
    """Succeeds whether or not the worker was blocked."""
    WorkerBlock.objects.filter(requester=requester, worker_id=params["WorkerId"]).delete()
    return {}


def worker_blocks_list(*, requester: Requester, params: dict, now: datetime) -> dict:
    blocks = WorkerBlock.objects.filter(requester=requester)
    items, members = page(blocks, params, query={"op": "ListWorkerBlocks", "requester": requester.pk})
    return {"WorkerBlocks": [wire.block_wire(block) for block in items], **members}


def workers_notify(*, requester: Requester, params: dict, now: datetime) -> dict:
    """Message workers whose work this requester approved or rejected; report the others."""
    worker_ids = list(dict.fromkeys(params["WorkerIds"]))
    reviewed = set(
        Assignment.objects.filter(
            hit__requester=requester,
            worker_id__in=worker_ids,
            status__in=(Assignment.Status.APPROVED, Assignment.Status.REJECTED),
        ).values_list("worker_id", flat=True)
    )
    Message.objects.bulk_create(
        Message(requester=requester, worker_id=worker_id, subject=params["Subject"], text=params["MessageText"])
        for worker_id in worker_ids
        if worker_id in reviewed
    )
    failures = [
        {
            "NotifyWorkersFailureCode": "HardFailure",
            "NotifyWorkersFailureMessage": f"Worker {worker_id} has no approved or rejected work of yours.",
            "WorkerId": worker_id,
        }
        for worker_id in worker_ids
        if worker_id not in reviewed
    ]
    return {"NotifyWorkersFailureStatuses": failures}
