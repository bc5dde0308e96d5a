"""A participant follows a self-managed link through a whole session in Chromium: the
code, "task N of M" above each framed task, the answers, the thank-you page."""

import pytest
from django.core.cache import cache

from annotation.models import Campaign
from crowd.channels.links import links
from crowd.models import Assignment, LikertLabel, WorkSession
from crowd.work.publishing import batch_publish
from tests.crowd.factories import likert_batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _site(live_server, settings):
    cache.clear()
    settings.SITE_URL = live_server.url


def _links_campaign(tasks_per_session=3):
    batch = likert_batch(propositions=20, channel=Campaign.Channel.LINKS, tasks_per_session=tasks_per_session)
    batch_publish(batch_id=batch.pk)
    return batch.topic.campaign


def test_a_participant_does_a_whole_session_through_an_open_link(live_server, page, screenshot):
    campaign = _links_campaign()
    link = links.link_create(campaign=campaign, kind="open", label="seminar group")

    page.goto(f"{live_server.url}/s/l/{link.token}/")
    page.get_by_label("Your participant code").fill("student-07")
    page.get_by_role("button", name="Start").click()
    for number in (1, 2, 3):
        page.get_by_text(f"Task {number} of 3").wait_for()
        task = page.frame_locator("iframe.session-task")
        task.locator("fieldset.rating").first.wait_for()
        if number == 1:
            screenshot(page, "session-desktop-task")
        for fieldset in range(5):
            task.locator("fieldset.rating").nth(fieldset).get_by_text("Very important", exact=True).click()
        task.locator("#submitButton").click()
    page.get_by_role("heading", name="Thank you!").wait_for()
    screenshot(page, "session-desktop-finished")

    assert "3 tasks done" in page.locator("main").text_content()
    session = WorkSession.objects.get()
    assert session.status == "finished" and session.worker.external_id == f"link{link.pk}-student-07"
    assert Assignment.objects.filter(worker=session.worker, verification="verified").count() == 3
    assert set(LikertLabel.objects.values_list("score", flat=True)) == {4}


def test_a_personal_link_on_a_phone_shows_progress_and_resumes(live_server, open_context, screenshot):
    from tests.browser.conftest import PHONE

    campaign = _links_campaign(tasks_per_session=2)
    link = links.link_create(campaign=campaign, label="Dr. Expert")
    page = open_context(**PHONE).new_page()

    page.goto(f"{live_server.url}/s/l/{link.token}/")
    page.get_by_role("button", name="Start").click()
    page.get_by_text("Task 1 of 2").wait_for()
    task = page.frame_locator("iframe.session-task")
    task.locator("fieldset.rating").first.wait_for()
    screenshot(page, "session-phone-task")
    for fieldset in range(5):
        task.locator("fieldset.rating").nth(fieldset).get_by_text("Slightly important", exact=True).click()
    task.locator("#submitButton").click()
    page.get_by_text("Task 2 of 2").wait_for()
    page.goto(f"{live_server.url}/s/l/{link.token}/")  # leaves, comes back through the link

    assert "You have done 1 task so far" in page.locator("main").text_content()
    page.get_by_role("button", name="Continue").click()
    page.get_by_text("Task 2 of 2").wait_for()


def test_the_researcher_sees_links_and_participants(live_server, page, screenshot, django_user_model):
    campaign = _links_campaign(tasks_per_session=2)
    researcher = django_user_model.objects.create_user("ada", password="pw-for-tests-only")
    Campaign.objects.filter(pk=campaign.pk).update(owner=researcher)
    expert = links.link_create(campaign=campaign, label="Dr. Expert")
    links.link_create(campaign=campaign, kind="open", label="seminar group")
    from crowd.sessions import holds

    session = holds.link_session_open(link=expert, worker=expert.worker)
    holds.hold_next(session)

    page.goto(f"{live_server.url}/campaigns/{campaign.slug}/channel/")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill("pw-for-tests-only")
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Participants").wait_for()
    screenshot(page, "dashboard-channel-links")

    rows = page.locator("section[aria-labelledby=participants-heading] tbody tr")
    assert rows.count() == 1 and "Dr. Expert" in rows.first.text_content()
    page.get_by_role("button", name="Revoke").first.click()
    page.get_by_text("Link revoked; 1 session(s) stopped.").wait_for()
