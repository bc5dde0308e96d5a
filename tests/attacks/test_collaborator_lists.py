"""Collaborators (issue 16): the campaign lists cost the same queries however many campaigns
are shared with the user. Apart from tests/attacks/test_collaborators.py, whose tests all share
one shared campaign, since this one counts every campaign in the database."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Campaign, CampaignMember
from tests.attacks.test_collaborators import api_client, researcher, web_client
from tests.factories import CampaignFactory, TopicFactory

pytestmark = [pytest.mark.attacks, pytest.mark.django_db]


def _queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


@pytest.mark.parametrize("url", ["dashboard:campaigns", "api-campaign-list"])
def test_the_campaign_lists_cost_the_same_however_many_campaigns_are_shared(url, django_user_model):
    owner, reader = researcher("owner"), researcher("reader")
    client = api_client(reader) if url.startswith("api-") else web_client(reader)

    def share(count: int) -> None:
        for _ in range(count):
            campaign = CampaignFactory(owner=owner)
            TopicFactory(campaign=campaign)
            CampaignMember.objects.create(campaign=campaign, user=reader, role="view", added_by=owner)

    CampaignFactory(owner=reader)
    share(1)
    client.get(reverse(url))  # warm: the session, the token, content types
    few = _queries(client, reverse(url))
    share(6)
    many = _queries(client, reverse(url))

    assert many == few
    listed = client.get(reverse(url))
    names = {campaign.name for campaign in Campaign.objects.all()}
    if url.startswith("api-"):
        assert {row["name"] for row in listed.json()["results"]} == names
    else:
        assert all(name in listed.content.decode() for name in names) and len(names) == 8
