"""The requester operations the local endpoint implements, by MTurk operation name.

Every other operation of the model answers RequestError (not supported locally).
"""

from . import assignments, hits, workers

HANDLERS = {
    "CreateHITType": hits.hit_type_create,
    "CreateHIT": hits.hit_create,
    "CreateHITWithHITType": hits.hit_with_type_create,
    "GetHIT": hits.hit_get,
    "ListHITs": hits.hits_list,
    "ListReviewableHITs": hits.reviewable_hits_list,
    "UpdateExpirationForHIT": hits.hit_expiration_update,
    "UpdateHITReviewStatus": hits.hit_review_status_update,
    "DeleteHIT": hits.hit_delete,
    "CreateAdditionalAssignmentsForHIT": hits.additional_assignments_create,
    "ListAssignmentsForHIT": assignments.assignments_list,
    "GetAssignment": assignments.assignment_get,
    "ApproveAssignment": assignments.assignment_approve_call,
    "RejectAssignment": assignments.assignment_reject,
    "SendBonus": assignments.bonus_send,
    "ListBonusPayments": assignments.bonuses_list,
    "GetAccountBalance": assignments.balance_get,
    "CreateWorkerBlock": workers.worker_block_create,
    "DeleteWorkerBlock": workers.worker_block_delete,
    "ListWorkerBlocks": workers.worker_blocks_list,
    "NotifyWorkers": workers.workers_notify,
}
