"""Long lists in pages, in Chromium: the ranking of a large topic a hundred propositions at a
time with global ranks, and a campaign's topics ten at a time, reached by link and by number."""

import pytest

from ranking.ranking_report import PAGE_SIZE
from tests.test_page_queries import campaign_with

pytestmark = pytest.mark.browser

PASSWORD = "a long enough password"


@pytest.fixture
def researcher(django_user_model):
    return django_user_model.objects.create_user("researcher", password=PASSWORD)


def log_in(page, base: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Username").fill("researcher")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Campaigns").wait_for()


def ranks(page) -> list[int]:
    return [int(text) for text in page.locator("table.ranking tbody td:first-child").all_text_contents()]


def test_the_ranking_of_a_large_topic_comes_in_pages_with_global_ranks(live_server, page, researcher, screenshot):
    campaign_with(researcher, "large", topics=1, propositions=2 * PAGE_SIZE + 30)
    log_in(page, live_server.url)

    page.goto(f"{live_server.url}/campaigns/large/topics/topic-0/ranking/")
    assert ranks(page) == list(range(1, PAGE_SIZE + 1))
    pages = page.get_by_role("navigation", name="Pages of propositions").first
    assert "Propositions 1–100 of 230: page 1 of 3." in pages.text_content()

    pages.get_by_role("link", name="Next").click()
    page.wait_for_url("**?page=2#propositions-heading")
    assert ranks(page) == list(range(PAGE_SIZE + 1, 2 * PAGE_SIZE + 1))
    screenshot(page, "ranking-page-2")

    pages = page.get_by_role("navigation", name="Pages of propositions").first
    pages.get_by_label("Page").fill("3")
    pages.get_by_label("Page").press("Enter")
    page.wait_for_url("**?page=3#propositions-heading")
    assert ranks(page) == list(range(2 * PAGE_SIZE + 1, 2 * PAGE_SIZE + 31))
    assert page.locator("#top-intervals svg:visible .chart-interval").count() == 5  # the topic's top, on every page


def test_a_campaign_shows_its_topics_ten_at_a_time(live_server, page, researcher):
    campaign_with(researcher, "many", topics=13, propositions=5)
    log_in(page, live_server.url)

    page.goto(f"{live_server.url}/campaigns/many/")
    assert page.locator("article.topic").count() == 10
    page.get_by_role("navigation", name="Pages of topics").first.get_by_role("link", name="Last").click()
    page.wait_for_url("**?page=2#topics-heading")
    assert page.locator("article.topic h3").all_text_contents() == ["topic-7", "topic-8", "topic-9"]
