"""Screenshots of every researcher page at 1280 and 390 px wide, for a human to look at.

Opt-in: the journey test (tests/browser/test_journey_browser.py) calls `researcher_pages_shoot`
once its campaign is done when SCREENSHOTS names a directory (relative to the repository; under
artifacts/, which git ignores):

    SCREENSHOTS=artifacts/researcher-pages .venv/bin/python -m tests.services run -- \\
        .venv/bin/python -m pytest tests/browser/test_journey_browser.py -q

It also opens a second campaign, a draft on Prolific, for the pages a finished campaign no
longer shows (the upload form with a refused file, a topic's description, the publish page, the
Prolific eligibility form). Files are named `<width>-<page>.png`; a page wider than the screen
at 390 px is listed in `overflowing.txt` beside them, with the elements that stick out.
"""

import os
from pathlib import Path

from django.conf import settings

from tests.browser.conftest import DESKTOP, PHONE

WIDTHS = {1280: DESKTOP, 390: PHONE}
# A page wider than a `width`-pixel screen (on a phone the page then zooms out, so
# window.innerWidth grows with it): the elements that reach past its right edge while their
# parent does not, or that are positioned out of their scrolling box; none when it fits.
STICKING_OUT = """width => {
  if (document.documentElement.scrollWidth <= width + 1) return [];
  const right = e => e.getBoundingClientRect().right;
  return [...document.querySelectorAll("body *")]
    .filter(e => right(e) > width + 1)
    .filter(e => right(e.parentElement) <= width + 1 || getComputedStyle(e).position === "absolute")
    .slice(0, 5)
    .map(e => `${e.tagName.toLowerCase()}${e.className ? "." + e.className : ""} ${Math.round(right(e))}px`);
}"""
DRAFT = "draft-prolific"


def _directory() -> Path:
    directory = Path(settings.BASE_DIR) / os.environ["SCREENSHOTS"]
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def _draft_campaign(page, base: str, *, propositions: Path, topics: Path, topic: str) -> None:
    """A draft campaign on Prolific with one described topic, made as a researcher makes it."""
    page.goto(f"{base}/campaigns/new/")
    page.get_by_label("Name").fill("Draft on Prolific")
    page.get_by_label("Slug").fill(DRAFT)
    page.get_by_label("Prolific", exact=True).check()
    page.get_by_role("button", name="Create campaign").click()
    page.get_by_role("heading", name="Draft on Prolific").wait_for()
    page.get_by_label("Proposition file").set_input_files(propositions)
    page.get_by_label("Topic descriptions (optional)").set_input_files(topics)
    page.get_by_role("button", name="Upload").click()
    page.locator(f"[data-topic] h3:has-text('{topic}')").wait_for()


def _refused_upload(page, base: str) -> None:
    page.goto(f"{base}/campaigns/{DRAFT}/")
    broken = {"name": "broken.tsv", "mimeType": "text/tab-separated-values", "buffer": b"topic\tsubject\nx\n"}
    page.get_by_label("Proposition file").set_input_files(broken)
    page.get_by_role("button", name="Upload").click()
    page.locator("#import-problems").wait_for()


def researcher_pages(base: str, *, campaign: str, topic: str, proposition: int) -> dict[str, str]:
    """Page name → address, for every page a researcher reads."""
    done = f"{base}/campaigns/{campaign}"
    draft = f"{base}/campaigns/{DRAFT}"
    return {
        "campaigns": f"{base}/",
        "campaign-new": f"{base}/campaigns/new/",
        "campaign": f"{done}/",
        "campaign-draft": f"{draft}/",
        "topic-description": f"{draft}/topics/{topic}/description/",
        "publish": f"{draft}/topics/{topic}/publish/",
        "channel-links": f"{done}/channel/",
        "channel-prolific": f"{draft}/channel/",
        "settings": f"{done}/settings/",
        "collaborators": f"{done}/members/",
        "preview": f"{done}/topics/{topic}/preview/",
        "quality": f"{done}/quality/",
        "quality-topic": f"{done}/topics/{topic}/quality/",
        "ranking": f"{done}/topics/{topic}/ranking/",
        "proposition": f"{done}/topics/{topic}/propositions/{proposition}/",
    }


def researcher_pages_shoot(
    open_context,
    *,
    base: str,
    storage_state: dict,
    campaign: str,
    topic: str,
    propositions: Path,
    topics: Path,
    proposition: int,
) -> Path:
    """Every researcher page at each width into $SCREENSHOTS; the directory."""
    directory = _directory()
    overflowing = []
    pages = researcher_pages(base, campaign=campaign, topic=topic, proposition=proposition)
    _draft_campaign(
        open_context(storage_state=storage_state).new_page(),
        base,
        propositions=propositions,
        topics=topics,
        topic=topic,
    )
    for width, options in WIDTHS.items():
        shots = {"login": (open_context(**options).new_page(), f"{base}/accounts/login/")}
        page = open_context(storage_state=storage_state, **options).new_page()
        shots.update((name, (page, url)) for name, url in pages.items())
        for name, (tab, url) in shots.items():
            tab.goto(url)
            tab.wait_for_load_state("networkidle")
            tab.screenshot(path=str(directory / f"{width}-{name}.png"), full_page=True)
            overflowing.extend(f"{width}-{name}: {culprit}" for culprit in tab.evaluate(STICKING_OUT, width))
        _refused_upload(page, base)
        page.locator("#upload").screenshot(path=str(directory / f"{width}-upload-refused.png"))
        page.goto(pages["ranking"])
        page.locator("nav.downloads").screenshot(path=str(directory / f"{width}-downloads.png"))
    (directory / "overflowing.txt").write_text("".join(f"{name}\n" for name in overflowing), encoding="utf-8")
    return directory
