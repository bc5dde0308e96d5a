"""The campaign page's figures update without a reload, in Chromium (static/js/campaign-progress.js
reading dashboard.progress_views): under the page's CSP, with no console error, and a
reload offered, not forced, when a batch appears that the page has no place for."""

import pytest
from playwright.sync_api import expect

from annotation.models import Batch, Topic
from crowd.models import Assignment
from tests.browser.test_long_lists_browser import PASSWORD, log_in
from tests.dashboard.test_views import topic_with_work
from tests.factories import BatchFactory, CampaignFactory

pytestmark = pytest.mark.browser


def test_the_meters_and_the_money_follow_the_work_and_a_new_batch_offers_a_reload(live_server, page, django_user_model):
    owner = django_user_model.objects.create_user("researcher", password=PASSWORD)
    campaign = CampaignFactory(owner=owner, slug="live", name="Live figures", trap_rate=0)
    topic = topic_with_work(campaign)
    page.clock.install()
    log_in(page, live_server.url)
    page.goto(f"{live_server.url}/campaigns/live/")
    submitted = page.locator(f"#meter-{topic.pk}-submitted").locator("xpath=..")
    assert submitted.locator(".done").text_content() == "2"

    # The channel confirms the pending answer: the next read shows it, the page stays put.
    Assignment.objects.filter(verification=Assignment.Verification.PENDING).update(
        verification=Assignment.Verification.VERIFIED
    )
    page.clock.run_for(11_000)
    expect(submitted.locator(".done")).to_have_text("3")
    assert submitted.locator("progress").get_attribute("value") == "3"
    assert "Figures read at" in page.locator("#live-status").text_content()
    assert page.get_by_role("link", name="Reload the page").count() == 0

    # A new comparison batch: the card has no place for it, so the page offers a reload.
    BatchFactory(topic=topic, kind=Batch.Kind.COMPARISON, number=2, status=Batch.Status.CREATED)
    Topic.objects.filter(pk=topic.pk).update(state=Topic.State.COMPARISONS)
    page.clock.run_for(11_000)
    reload = page.get_by_role("link", name="Reload the page")
    reload.wait_for()
    reload.click()
    page.get_by_text("Current batch: Comparison #2, created.").wait_for()
