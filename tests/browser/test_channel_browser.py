"""The Channel page's "New links" form in Chromium (static/js/links-form.js): the labels field is
shown for personal links only, the codes fields for open links only, and what was typed in the
hidden ones is not sent."""

import pytest
from playwright.sync_api import expect

from annotation.models import Campaign
from crowd.models import ParticipantLink
from tests.browser.test_long_lists_browser import PASSWORD, log_in
from tests.factories import CampaignFactory

pytestmark = pytest.mark.browser


def test_the_labels_field_is_for_personal_links_only(live_server, page, django_user_model):
    owner = django_user_model.objects.create_user("researcher", password=PASSWORD)
    CampaignFactory(owner=owner, slug="own-crowd", channel=Campaign.Channel.LINKS)
    log_in(page, live_server.url)
    page.goto(f"{live_server.url}/campaigns/own-crowd/channel/")
    kind, labels = page.get_by_label("Kind"), page.get_by_label("Labels")
    codes = page.locator("form[data-links-form]").get_by_label("Participant codes allowed")

    expect(labels).to_be_visible()
    expect(codes).to_be_hidden()
    labels.fill("Dr. A\nDr. B")
    kind.select_option("open")
    expect(labels).to_be_hidden()
    kind.select_option("personal")
    expect(labels).to_be_visible()
    expect(labels).to_have_value("Dr. A\nDr. B")  # kept while hidden, for a change of mind

    kind.select_option("open")
    expect(codes).to_be_visible()
    codes.fill("P-001\n p-002 ")
    page.get_by_role("button", name="Create").click()
    page.get_by_text("1 link created.").wait_for()

    assert list(ParticipantLink.objects.values_list("kind", "label", "codes_allowed")) == [("open", "", "p-001\np-002")]
    page.get_by_text("Lets in 2 listed codes").wait_for()
