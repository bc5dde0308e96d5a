"""Review actions through real boto3: approve, reject with a reason, block, bonus."""

from decimal import Decimal as D

import pytest
from django.urls import reverse

from config.errors import ApplicationError, Conflict
from crowd.marketplaces.base import MarketplaceError
from crowd.models import HIT, Assignment, Bonus, Worker, WorkerBlock, WorkerDecision
from crowd.work import ledger, review
from crowd.work.publishing import batch_publish
from crowd.work.sync import assignments_sync

from .factories import likert_batch

pytestmark = pytest.mark.mturk


@pytest.fixture
def submitted(local_turk):
    """A verified, submitted assignment of a published HIT."""
    batch = likert_batch(propositions=5, assignments_per_hit=2)
    batch_publish(batch_id=batch.pk)
    hit = HIT.objects.get(task__batch=batch)
    local_turk.worker("AWORKERONE0001").complete(hit.hit_id)
    assignments_sync()
    return Assignment.objects.select_related("worker", "task__batch__topic__campaign").get()


def _remote(local_turk, assignment):
    return local_turk.client.get_assignment(AssignmentId=assignment.assignment_id)["Assignment"]


def _balance(local_turk) -> D:
    return D(local_turk.client.get_account_balance()["AvailableBalance"])


def test_approve_pays_the_worker_once(local_turk, submitted):
    before = _balance(local_turk)

    assert review.assignment_approve(assignment_id=submitted.pk) is True
    assert review.assignment_approve(assignment_id=submitted.pk) is True

    submitted.refresh_from_db()
    assert submitted.status == Assignment.Status.APPROVED and submitted.reviewed_at is not None
    assert _remote(local_turk, submitted)["AssignmentStatus"] == "Approved"
    assert before - _balance(local_turk) == D("0.07")
    assert ledger.campaign_money(campaign=submitted.task.batch.topic.campaign).spent == D("0.07")


def test_approving_what_mturk_approved_already_is_recorded_not_failed(local_turk, submitted):
    local_turk.client.approve_assignment(AssignmentId=submitted.assignment_id)  # e.g. the requester website

    assert review.assignment_approve(assignment_id=submitted.pk) is True

    submitted.refresh_from_db()
    assert submitted.status == Assignment.Status.APPROVED
    assert ledger.LedgerEntry.objects.filter(kind=ledger.Kind.SPENT).count() == 1


def test_reject_sends_the_reason_to_the_worker(local_turk, submitted, django_user_model):
    admin = django_user_model.objects.create(username="reviewer")

    review.assignment_reject(assignment_id=submitted.pk, reason="All five answers were identical.", decided_by=admin)

    submitted.refresh_from_db()
    assert submitted.status == Assignment.Status.REJECTED
    assert submitted.reject_reason == "All five answers were identical."
    assert not Assignment.objects.counted().filter(pk=submitted.pk).exists()
    remote = _remote(local_turk, submitted)
    assert remote["AssignmentStatus"] == "Rejected"
    assert remote["RequesterFeedback"] == "All five answers were identical."
    decision = WorkerDecision.objects.get()
    assert (decision.action, decision.worker, decision.decided_by) == ("reject", submitted.worker, admin)
    assert "identical" in decision.reason
    money = ledger.campaign_money(campaign=submitted.task.batch.topic.campaign)
    assert money.committed == D("0.07")  # one of the two slots released, the other still open
    review.assignment_reject(assignment_id=submitted.pk, reason="again")  # repeat: nothing happens
    assert WorkerDecision.objects.count() == 1


def test_reject_needs_a_reason_and_approved_work_cannot_be_rejected(local_turk, submitted):
    with pytest.raises(ApplicationError) as refused:
        review.assignment_reject(assignment_id=submitted.pk, reason="   ")
    assert refused.value.code == "reason_required"

    review.assignment_approve(assignment_id=submitted.pk)
    with pytest.raises(Conflict):
        review.assignment_reject(assignment_id=submitted.pk, reason="too late")
    assert _remote(local_turk, submitted)["AssignmentStatus"] == "Approved"


def test_block_reaches_mturk_and_our_pages(local_turk, submitted):
    campaign = submitted.task.batch.topic.campaign

    review.worker_block(worker_id=submitted.worker_id, campaign_id=campaign.pk, reason="Copies answers across HITs.")

    blocks = local_turk.client.list_worker_blocks()["WorkerBlocks"]
    assert blocks == [{"WorkerId": "AWORKERONE0001", "Reason": "Copies answers across HITs."}]
    block = WorkerBlock.objects.get()
    assert (block.campaign, block.worker_id, block.at_marketplace) == (campaign, submitted.worker_id, True)
    assert not Worker.objects.get(pk=submitted.worker_id).blocked  # the site-wide ban stays a superuser's
    assert WorkerDecision.objects.get().action == "block"


def test_unblock_lifts_the_block_at_mturk_and_on_our_pages(local_turk, submitted, client):
    campaign = submitted.task.batch.topic.campaign
    review.worker_block(worker_id=submitted.worker_id, campaign_id=campaign.pk, reason="Looked like a script.")
    page = f"/hit/{submitted.task.uuid}/?assignmentId=ANEWASSIGNMENT&hitId=H&workerId=AWORKERONE0001"
    assert "not available to you" in client.get(page).content.decode()

    review.worker_unblock(worker_id=submitted.worker_id, campaign_id=campaign.pk, reason="A person after all.")

    assert local_turk.client.list_worker_blocks()["WorkerBlocks"] == []
    assert not WorkerBlock.objects.exists()
    assert list(WorkerDecision.objects.order_by("id").values_list("action", "reason")) == [
        ("block", "Looked like a script."),
        ("unblock", "A person after all."),
    ]
    assert "not available to you" not in client.get(page).content.decode()  # the page of work it did
    with pytest.raises(ApplicationError) as refused:
        review.worker_unblock(worker_id=submitted.worker_id, campaign_id=campaign.pk, reason="  ")
    assert refused.value.code == "reason_required"


def test_a_bonus_is_paid_once_even_when_its_record_was_lost(local_turk, submitted):
    before = _balance(local_turk)

    bonus = review.bonus_grant(assignment_id=submitted.pk, amount=D("1.00"), reason="Thoughtful answers, thank you!")

    assert bonus.sent_at is not None
    assert before - _balance(local_turk) == D("1.20")
    assert review.bonus_send(bonus_id=bonus.pk).sent_at == bonus.sent_at  # a repeat is a no-op
    # The marketplace paid, but our record of it was lost (a crash before the commit):
    Bonus.objects.filter(pk=bonus.pk).update(sent_at=None)
    ledger.LedgerEntry.objects.filter(kind=ledger.Kind.BONUS).delete()
    WorkerDecision.objects.all().delete()

    review.bonus_send(bonus_id=bonus.pk)

    assert before - _balance(local_turk) == D("1.20")  # the token kept MTurk from paying twice
    assert Bonus.objects.get().sent_at is not None
    assert ledger.LedgerEntry.objects.get(kind=ledger.Kind.BONUS).amount == D("1.20")
    assert WorkerDecision.objects.get().action == "bonus"
    money = ledger.campaign_money(campaign=submitted.task.batch.topic.campaign)
    assert money.spent == D("1.20")


def test_a_bonus_over_the_budget_cap_is_refused_before_anything_is_paid(local_turk, submitted):
    campaign = submitted.task.batch.topic.campaign
    committed = ledger.campaign_money(campaign=campaign).committed
    campaign.budget_cap = committed + D("1.20")  # room for a $1.00 bonus and its 20 % fee, no more
    campaign.save(update_fields=["budget_cap"])
    before = _balance(local_turk)

    with pytest.raises(ledger.BudgetExceeded) as refused:
        review.bonus_grant(assignment_id=submitted.pk, amount=D("1.05"), reason="Generous")
    assert "costs $1.26 with MTurk fees" in str(refused.value) and "$0.06 short" in str(refused.value)
    assert refused.value.details["shortfall"] == "0.06"
    assert not Bonus.objects.exists() and _balance(local_turk) == before

    review.bonus_grant(assignment_id=submitted.pk, amount=D("1.00"), reason="Exactly the headroom")
    assert before - _balance(local_turk) == D("1.20")
    with pytest.raises(ledger.BudgetExceeded):
        review.bonus_grant(assignment_id=submitted.pk, amount=D("0.01"), reason="One cent more")


def test_a_granted_unpaid_bonus_counts_against_the_cap(local_turk, submitted):
    campaign = submitted.task.batch.topic.campaign
    campaign.budget_cap = ledger.campaign_money(campaign=campaign).committed + D("1.20")
    campaign.save(update_fields=["budget_cap"])
    # A bonus recorded, whose send failed: promised, not paid, not in the ledger yet.
    Bonus.objects.create(assignment=submitted, amount=D("0.50"), reason="Pending", token="pending-token")

    with pytest.raises(ledger.BudgetExceeded) as refused:
        review.bonus_grant(assignment_id=submitted.pk, amount=D("0.60"), reason="Too much beside the pending one")
    assert "$0.60 of bonuses is granted but not paid yet" in str(refused.value)
    assert review.bonus_grant(assignment_id=submitted.pk, amount=D("0.50"), reason="Fits").sent_at is not None


def test_a_bonus_the_marketplace_refuses_is_released_from_the_cap_with_its_reason(local_turk, submitted):
    campaign = submitted.task.batch.topic.campaign
    campaign.budget_cap = ledger.campaign_money(campaign=campaign).committed + D("1.20")
    campaign.save(update_fields=["budget_cap"])
    # MTurk refuses a bonus for an assignment of another worker: here our record names one MTurk
    # does not know for it (as after a worker id mix-up), so the refusal is MTurk's own.
    Worker.objects.filter(pk=submitted.worker_id).update(external_id="ANOTHERWORKER01")

    with pytest.raises(MarketplaceError) as refused:
        review.bonus_grant(assignment_id=submitted.pk, amount=D("1.00"), reason="Refused")

    bonus = Bonus.objects.get()
    assert bonus.sent_at is None and bonus.refused_at is not None and "does not belong" in bonus.refused_reason
    assert refused.value.message == bonus.refused_reason
    assert ledger.bonuses_pending(campaign=campaign) == D("0.00")  # no longer held against the cap
    assert WorkerDecision.objects.filter(action="bonus_refused", reason__contains="refused by the marketplace").exists()
    assert review.bonus_send(bonus_id=bonus.pk).refused_at == bonus.refused_at  # not sent again
    Worker.objects.filter(pk=submitted.worker_id).update(external_id="AWORKERONE0001")
    assert review.bonus_grant(assignment_id=submitted.pk, amount=D("1.00"), reason="Fits again").sent_at is not None


def test_a_bonus_needs_whole_cents(local_turk, submitted):
    with pytest.raises(ApplicationError) as refused:
        review.bonus_grant(assignment_id=submitted.pk, amount=D("0.005"), reason="tiny")
    assert refused.value.code == "invalid_amount"
    assert not Bonus.objects.exists()


def test_unverified_answers_are_not_reviewed_at_the_marketplace(local_turk, submitted):
    Assignment.objects.filter(pk=submitted.pk).update(verification=Assignment.Verification.UNVERIFIED)

    with pytest.raises(ApplicationError) as refused:
        review.assignment_approve(assignment_id=submitted.pk)
    assert refused.value.code == "assignment_not_at_marketplace"


def test_admin_rejects_with_the_reason_typed_on_the_intermediate_page(local_turk, submitted, admin_client):
    changelist = reverse("admin:crowd_assignment_changelist")
    selection = {"action": "reject_assignments", "_selected_action": [submitted.pk]}

    form_page = admin_client.post(changelist, selection)
    assert form_page.status_code == 200 and b"reason" in form_page.content
    assert Assignment.objects.get().status == Assignment.Status.SUBMITTED

    done = admin_client.post(changelist, {**selection, "apply": "Reject assignments", "reason": "Random clicking."})

    assert done.status_code == 302
    assert Assignment.objects.get().status == Assignment.Status.REJECTED
    assert _remote(local_turk, submitted)["RequesterFeedback"] == "Random clicking."
    assert WorkerDecision.objects.get().decided_by.is_superuser


def test_admin_pays_a_bonus_and_blocks_a_worker(local_turk, submitted, admin_client):
    admin_client.post(
        reverse("admin:crowd_assignment_changelist"),
        {
            "action": "bonus_assignments",
            "_selected_action": [submitted.pk],
            "apply": "Pay a bonus",
            "amount": "0.50",
            "reason": "Great work.",
        },
    )
    admin_client.post(
        reverse("admin:crowd_worker_changelist"),
        {
            "action": "block_workers",
            "_selected_action": [submitted.worker_id],
            "apply": "Block workers",
            "campaign": submitted.task.batch.topic.campaign_id,
            "reason": "Spam.",
        },
    )

    assert Bonus.objects.get().amount == D("0.50")
    assert WorkerBlock.objects.filter(worker_id=submitted.worker_id).exists()
    assert sorted(WorkerDecision.objects.values_list("action", flat=True)) == ["block", "bonus"]

    admin_client.post(
        reverse("admin:crowd_worker_changelist"),
        {
            "action": "unblock_workers",
            "_selected_action": [submitted.worker_id],
            "apply": "Unblock workers",
            "campaign": submitted.task.batch.topic.campaign_id,
            "reason": "Appeal accepted.",
        },
    )

    assert not WorkerBlock.objects.exists()
    assert local_turk.client.list_worker_blocks()["WorkerBlocks"] == []
