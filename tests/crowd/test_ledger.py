"""The ledger records each money event once (the writers check, the database stands behind
it), in each channel's own unit, and what it books reconciles with what the channel charged."""

from datetime import timedelta
from decimal import Decimal as D

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone
from hypothesis import given, settings
from hypothesis import strategies as st

from crowd.channels.links import links
from crowd.channels.registry import channels_sync
from crowd.models import HIT, Assignment, Bonus, LedgerEntry
from crowd.sessions import holds
from crowd.work import ledger, review
from crowd.work.expiry import batch_expire
from crowd.work.publishing import batch_publish
from crowd.work.sync import assignments_sync
from tests.factories import AssignmentFactory, CampaignFactory

from .factories import likert_batch

pytestmark = pytest.mark.django_db


def test_an_entry_is_recorded_once_per_kind_and_reference():
    campaign = CampaignFactory()
    record = {"campaign_id": campaign.pk, "reference": "assignment:A1:W1", "amount": D("0.07")}

    assert ledger.entry_record(kind=ledger.Kind.SPENT, **record) is True
    assert ledger.entry_record(kind=ledger.Kind.SPENT, **record) is False
    assert ledger.entry_record(kind=ledger.Kind.RELEASED, **record) is True  # another kind, another event

    assert LedgerEntry.objects.count() == 2
    assert ledger.campaign_money(campaign=campaign).spent == D("0.07")


def test_the_database_refuses_a_second_entry_for_the_same_event():
    campaign = CampaignFactory()
    LedgerEntry.objects.create(campaign=campaign, kind=ledger.Kind.BONUS, reference="bonus:T", amount=D("1.20"))

    with pytest.raises(IntegrityError), transaction.atomic():
        LedgerEntry.objects.create(campaign=campaign, kind=ledger.Kind.BONUS, reference="bonus:T", amount=D("1.20"))
    assert ledger.campaign_money(campaign=campaign).spent == D("1.20")


# ---- Each channel in its own unit, against what its local endpoint charged --------------------


def ledger_totals(campaign) -> dict[str, D]:
    """The campaign's raw entries per kind (committed, released, spent, bonus)."""
    totals = {kind: D("0.00") for kind in ledger.Kind.values}
    for kind, amount in LedgerEntry.objects.filter(campaign=campaign).values_list("kind", "amount"):
        totals[kind] += amount
    return totals


@pytest.mark.mturk
def test_mturk_is_booked_per_assignment_as_the_local_endpoint_charges(local_turk):
    """One HIT of three assignments at $0.06 ($0.07 with MTurk's fee): one approved, one
    rejected, one never taken. Committed − released − spent is zero once the HIT is complete,
    and spent is what the endpoint took from the requester's balance."""
    batch = likert_batch(propositions=5, assignments_per_hit=3)
    balance = D(local_turk.client.get_account_balance()["AvailableBalance"])
    batch_publish(batch_id=batch.pk)
    hit = HIT.objects.get(task__batch=batch)
    campaign = batch.topic.campaign
    assert ledger_totals(campaign)["committed"] == D("0.21")
    for worker in (local_turk.worker("AWORKERONE0001"), local_turk.worker("AWORKERTWO0002")):
        worker.complete(hit.hit_id)
        worker.http.close()  # no kept-alive connection outlives the test database
    assignments_sync()
    rejected = Assignment.objects.get(worker__external_id="AWORKERTWO0002")
    review.assignment_reject(assignment_id=rejected.pk, reason="Every statement rated the same.")
    approved = Assignment.objects.get(worker__external_id="AWORKERONE0001")
    review.assignment_approve(assignment_id=approved.pk)
    batch_expire(batch_id=batch.pk)

    assignments_sync(now=timezone.now() + timedelta(hours=1))  # past the last deadline: complete

    charged = balance - D(local_turk.client.get_account_balance()["AvailableBalance"])
    totals = ledger_totals(campaign)
    assert charged == totals["spent"] == D("0.07")
    assert totals["released"] == D("0.14")  # the rejected assignment and the slot never taken
    assert totals["committed"] - totals["released"] - totals["spent"] == 0
    assert HIT.objects.get(pk=hit.pk).complete


def test_participant_links_book_nothing(db):
    batch = likert_batch(propositions=10, channel="links", tasks_per_session=2, assignments_per_hit=1)
    batch_publish(batch_id=batch.pk)
    link = links.link_create(campaign=batch.topic.campaign, kind="open")
    session = holds.link_session_open(
        link=link, worker=holds.session_worker(channel="links", external_id=f"link{link.pk}-ann")
    )
    hold = holds.hold_next(session)
    AssignmentFactory(task=hold.task, hit=hold.task.hit, worker=session.worker, assignment_id=hold.assignment_id)
    holds.hold_submit(session=session, assignment_id=hold.assignment_id)
    channels_sync()

    review.assignment_approve(assignment_id=Assignment.objects.get().pk)

    assert Assignment.objects.get().status == Assignment.Status.APPROVED
    assert not LedgerEntry.objects.exists()


def test_the_one_budget_check_counts_bonuses_granted_but_not_paid():
    campaign = CampaignFactory(budget_cap=D("2.00"))
    ledger.entry_record(campaign_id=campaign.pk, kind=ledger.Kind.COMMITTED, reference="task:T1", amount=D("1.00"))
    assignment = AssignmentFactory(task__batch__topic__campaign=campaign)
    Bonus.objects.create(assignment=assignment, amount=D("0.50"), reason="kind", token="T")  # 0.60 with MTurk's fee

    ledger.budget_check(campaign=campaign, cost=D("0.40"), what="Publishing", remedy="")  # 1.00 + 0.60 + 0.40 = cap
    with pytest.raises(ledger.BudgetExceeded) as refused:
        ledger.budget_check(campaign=campaign, cost=D("0.41"), what="Publishing 1 HIT", remedy="Raise the cap.")

    assert refused.value.details == {
        "cost": "0.41",
        "committed": "1.00",
        "pending_bonuses": "0.60",
        "cap": "2.00",
        "shortfall": "0.01",
    }
    assert "$0.60 of bonuses is granted but not paid yet" in refused.value.message


cents = st.integers(min_value=0, max_value=500).map(lambda n: (D(n) / 100).quantize(D("0.01")))


@settings(max_examples=40, deadline=None)
@given(
    committed=cents,
    bonuses=st.lists(st.tuples(cents, st.sampled_from(["granted", "sent", "refused"])), max_size=3),
    cap=cents,
    cost=cents,
)
def test_the_budget_preview_says_fits_exactly_when_the_check_lets_the_cost_pass(committed, bonuses, cap, cost):
    with transaction.atomic():
        campaign = CampaignFactory(budget_cap=cap)
        ledger.entry_record(campaign_id=campaign.pk, kind=ledger.Kind.COMMITTED, reference="task:T", amount=committed)
        assignment = AssignmentFactory(task__batch__topic__campaign=campaign)
        now = timezone.now()
        for number, (amount, state) in enumerate(bonuses):
            Bonus.objects.create(
                assignment=assignment,
                amount=amount,
                reason="kind",
                token=f"T{number}",
                sent_at=now if state == "sent" else None,
                refused_at=now if state == "refused" else None,
            )
        unpaid = sum(
            (
                ledger.bonus_cost(amount=amount, channel=campaign.channel)
                for amount, state in bonuses
                if state == "granted"
            ),
            D("0.00"),
        )

        preview = ledger.budget_preview(campaign=campaign, cost=cost, what="Publishing", remedy="Raise the cap.")
        try:
            ledger.budget_check(campaign=campaign, cost=cost, what="Publishing", remedy="Raise the cap.")
        except ledger.BudgetExceeded as error:
            refused = error
        else:
            refused = None

        assert preview.fits is (refused is None) is (committed + unpaid + cost <= cap)
        assert preview.pending_bonuses == unpaid and preview.after == committed + unpaid + cost
        if refused is not None:
            assert preview.refusal is not None
            assert (preview.refusal.message, preview.refusal.details) == (refused.message, refused.details)
            assert D(refused.details["shortfall"]) == preview.shortfall > 0
        transaction.set_rollback(True)
