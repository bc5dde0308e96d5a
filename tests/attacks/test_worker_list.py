"""F1-b (issue 15, left over): invented workers do not fill a researcher's worker list.

Over HTTP with the API's token client: 60 invented worker ids post answers nobody's channel
confirms (stored pending, then unverified); one real worker's answer is confirmed. The list
shows the real worker by default and the invented ones only behind `?include=unconfirmed`,
each marked `confirmed: false`.
"""

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from crowd.models import Assignment
from tests.factories import AssignmentFactory, CampaignFactory, TaskFactory, WorkerFactory

pytestmark = [pytest.mark.attacks, pytest.mark.django_db]


def test_invented_workers_are_listed_only_when_asked_for_and_marked(client):
    owner = get_user_model().objects.create_user("ada", password="pw-for-tests-only")
    campaign = CampaignFactory(owner=owner)
    task = TaskFactory(batch__topic__campaign=campaign)
    AssignmentFactory(task=task, worker=WorkerFactory(external_id="AREALWORKER"), verification="verified")
    for n in range(60):
        verification = Assignment.Verification.PENDING if n % 2 else Assignment.Verification.UNVERIFIED
        AssignmentFactory(task=task, worker=WorkerFactory(external_id=f"AFORGED{n:04d}"), verification=verification)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=owner).key}")
    url = f"/api/campaigns/{campaign.slug}/workers/"

    listed = api.get(url).json()
    assert listed["count"] == 1
    assert [(row["external_id"], row["confirmed"]) for row in listed["results"]] == [("AREALWORKER", True)]

    everyone = api.get(url, {"include": "unconfirmed", "page_size": 100}).json()
    assert everyone["count"] == 61
    forged = [row for row in everyone["results"] if row["external_id"].startswith("AFORGED")]
    assert forged and all(row["confirmed"] is False and row["quality"] is None for row in forged)

    assert api.get(url, {"include": "everything"}).status_code == 400
