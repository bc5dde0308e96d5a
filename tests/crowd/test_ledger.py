"""The ledger records each money event once: the writers check, the database stands behind it."""

from decimal import Decimal as D

import pytest
from django.db import IntegrityError, transaction

from crowd import ledger
from crowd.models import LedgerEntry
from tests.factories import CampaignFactory

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
