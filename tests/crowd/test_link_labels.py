"""Personal link labels (issue 25, point 7): two personal links with one label cannot be told
apart, so a label a link of the campaign has, or one the list repeats, is refused whole."""

import pytest
from django.urls import reverse

from annotation.models import Campaign
from config.errors import ApplicationError
from crowd.channels.links.links import links_issue
from crowd.models import ParticipantLink
from tests.factories import CampaignFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(owner):
    return CampaignFactory(owner=owner, slug="study", channel=Campaign.Channel.LINKS)


def test_a_repeated_label_in_the_list_is_refused_and_nothing_made(study):
    with pytest.raises(ApplicationError, match=r"'ana' is already the label of another link") as refused:
        links_issue(campaign=study, kind=ParticipantLink.Kind.PERSONAL, labels=["Ana", "Ben", " ana "])

    assert refused.value.code == "duplicate_link_label"
    assert not ParticipantLink.objects.exists()


def test_a_label_another_link_has_is_refused(study):
    links_issue(campaign=study, kind=ParticipantLink.Kind.PERSONAL, labels=["P-017"])

    with pytest.raises(ApplicationError, match="'p-017'"):
        links_issue(campaign=study, kind=ParticipantLink.Kind.PERSONAL, labels=["Cleo", "p-017"])

    assert list(ParticipantLink.objects.values_list("label", flat=True)) == ["P-017"]


def test_the_channel_page_says_so(owner_client, study):
    links_issue(campaign=study, kind=ParticipantLink.Kind.PERSONAL, labels=["Ana"])

    response = owner_client.post(reverse("crowd:links-new", args=["study"]), {"kind": "personal", "labels": "Ana\nBen"})

    assert response.status_code == 400 and "A personal link is one person" in response.content.decode()
    assert ParticipantLink.objects.count() == 1
