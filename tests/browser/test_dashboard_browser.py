"""A researcher runs a whole campaign from the dashboard in Chromium: log in, create a
campaign, upload a file with an error and then a good one, publish the Likert round to the
local endpoint, watch progress while the simulated crowd works over HTTP, then read the
ranking with both plots and download it. Screenshots of each page go to
artifacts/screenshots/dashboard-*.png for a human to look at.

Sync and the ranking pipeline run in this process with eager Celery, as in `make demo`.
"""

import csv
import io
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from playwright.sync_api import expect

from annotation.models import Proposition, Topic
from config.celery import app as celery_app
from crowd.models import HIT
from crowd.simulation.hits import crowd_simulate
from ranking.workflow import loop_run

pytestmark = pytest.mark.browser

PASSWORD = "a long enough password"
SAMPLE = Path(django_settings.BASE_DIR) / "samples" / "demo"
TOPIC = "home-composting"
PROPOSITIONS = 25  # 5 Likert HITs; with the settings below, 3 comparison batches of 3 HITs
CROWD = {"workers": 10, "spammers": 0.1, "trap_blind": 0.0, "seed": 11}
ZOOM_200 = {"viewport": {"width": 640, "height": 450}, "device_scale_factor": 2}


def sample_rows() -> tuple[str, list[list[str]]]:
    """The demo sample's header and its first rows of one topic that pass the confidence threshold."""
    header, *lines = (SAMPLE / "propositions.tsv").read_text(encoding="utf-8").splitlines()
    rows = [line.split("\t") for line in lines]
    kept = [row for row in rows if row[0] == TOPIC and float(row[4]) >= 0.5][:PROPOSITIONS]
    assert len(kept) == PROPOSITIONS
    return header, kept


def topic_rows() -> tuple[str, list[list[str]]]:
    header, *lines = (SAMPLE / "topics.tsv").read_text(encoding="utf-8").splitlines()
    return header, [line.split("\t") for line in lines if line.startswith(TOPIC + "\t")]


def tsv_payload(name: str, header: str, rows: list[list[str]]) -> dict:
    text = "\n".join([header, *("\t".join(row) for row in rows)]) + "\n"
    return {"name": name, "mimeType": "text/tab-separated-values", "buffer": text.encode()}


def latent_importance(rows: list[list[str]]) -> dict[int, float]:
    """The sample's hidden importance (0..1) as the simulated crowd's latent scale, per proposition id."""
    importance = {row[6]: float(row[7]) for row in rows}
    ids = Proposition.objects.filter(topic__key=TOPIC).values_list("external_id", "pk")
    return {pk: 4 * (importance[external_id] - 0.5) for external_id, pk in ids if external_id in importance}


@pytest.fixture
def local_marketplace(live_server, settings):
    settings.MTURK_ENVIRONMENT = "local"
    settings.SITE_URL = live_server.url
    settings.MTURK_LOCAL_ENDPOINT_URL = f"{live_server.url}/localturk/"
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield live_server
    celery_app.conf.task_always_eager = previous


@pytest.fixture
def shoot(screenshot):
    """Screenshots in mid-flow. After a full-page capture Chromium dispatches the next click as
    if the page were scrolled as during the capture (mousedown and mouseup land on different
    elements); scrolling once puts it right."""

    def take(page, name: str) -> Path:
        path = screenshot(page, name)
        page.evaluate("window.scrollTo(0, 0)")
        return path

    return take


def meter(page, name: str) -> tuple[int, int]:
    """(done, total) of a progress bar of the topic."""
    bar = page.locator(f"#topic-{TOPIC} [data-meter='{name}']")
    return int(bar.locator(".done").text_content()), int(bar.locator(".total").text_content())


def pending(page) -> int:
    """Answers stored but not yet confirmed by the channel, as the topic's notice says."""
    notice = page.locator(f"[data-pending='{Topic.objects.get(key=TOPIC).pk}']")
    return int(notice.text_content().split()[0]) if notice.count() else 0


def test_a_researcher_runs_a_campaign_from_the_dashboard(
    local_marketplace, page, open_context, shoot, django_user_model
):
    base = local_marketplace.url
    django_user_model.objects.create_user("researcher", password=PASSWORD)
    header, rows = sample_rows()

    # Log in: every dashboard page sends a stranger to the login page first.
    page.goto(f"{base}/")
    assert page.url.startswith(f"{base}/accounts/login/")
    page.get_by_label("Username").fill("researcher")
    page.get_by_label("Password").fill(PASSWORD)
    shoot(page, "dashboard-login")
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Campaigns").wait_for()

    # Create a campaign: the paper's defaults are filled in; a small pair budget in batches
    # of 30 pairs gives three refits quickly.
    page.get_by_role("link", name="New campaign").click()
    assert page.get_by_label("Likert task reward (US$)").input_value() == "0.06"
    page.get_by_label("Name").fill("Home composting, run 1")
    page.get_by_label("Slug").fill("composting-1")
    assert page.get_by_label("Participant links").is_checked()  # the default: no account, no money
    page.get_by_label("Amazon Mechanical Turk (closed since 2026-09-30").check()  # rehearsed on the local endpoint
    page.get_by_label("Pair budget (share of all pairs)").fill("0.3")
    page.get_by_label("Pairs per comparison batch").fill("30")
    # Traps off, so the figures below are the propositions' own (trap placement, which adds trap
    # HITs, is tested in tests/annotation/test_batching.py).
    page.get_by_label("Trap rate").fill("0")
    shoot(page, "dashboard-new-campaign")
    page.get_by_role("button", name="Create campaign").click()
    page.get_by_role("heading", name="Home composting, run 1").wait_for()

    # A file with errors: every problem by file and line, nothing imported.
    bad = [row[:] for row in rows[:4]]
    bad[1][4], bad[2][3] = "very", ""
    page.get_by_label("Proposition file").set_input_files(tsv_payload("compost.tsv", header, bad))
    page.get_by_role("button", name="Upload").click()
    problems = page.locator("#import-problems")
    problems.wait_for()
    assert "compost.tsv:3 [confidence]: expected a number between 0 and 1" in problems.text_content()
    assert "compost.tsv:4 [object]: required field is empty" in problems.text_content()
    shoot(page, "dashboard-upload-error")
    assert not Proposition.objects.exists()

    # The good file, with the topic descriptions workers will see.
    page.get_by_label("Proposition file").set_input_files(tsv_payload("compost.tsv", header, rows))
    page.get_by_label("Topic descriptions (optional)").set_input_files(tsv_payload("topics.tsv", *topic_rows()))
    page.get_by_role("button", name="Upload").click()
    page.get_by_text(f"Imported {PROPOSITIONS} propositions from compost.tsv").wait_for()
    assert "composting kitchen and garden waste at home" in page.locator(f"#topic-{TOPIC}").text_content()
    shoot(page, "dashboard-campaign")

    # Publish the Likert round: a preview with the cost, then the confirmation.
    page.get_by_role("link", name="Publish the Likert round…").click()
    assert page.locator("[data-money='cost']").text_content() == "$1.75"  # 5 HITs × 5 × ($0.06 + $0.01)
    shoot(page, "dashboard-publish-preview")
    page.get_by_role("button", name="Publish 5 HITs for $1.75").click()
    page.get_by_text("Likert round of topic home-composting: published 5 HITs to Amazon Mechanical Turk").wait_for()
    assert meter(page, "tasks") == (5, 5) and meter(page, "submitted") == (0, 25)
    assert page.locator("[data-money='balance']").text_content() == "$10,000.00"

    # The crowd works through the HIT pages in the background while the researcher reloads the
    # campaign page: it stops after the first HIT until the page has shown that one.
    latent = latent_importance(rows)
    work = {"localturk_url": f"{base}/localturk/", "latent": latent, **CROWD}
    hit_ids = list(HIT.objects.order_by("task__position").values_list("hit_id", flat=True))
    first_done, first_seen = threading.Event(), threading.Event()

    def crowd():
        try:
            crowd_simulate(hit_ids=hit_ids[:1], **work)
        finally:
            first_done.set()
        first_seen.wait(timeout=60)
        crowd_simulate(hit_ids=hit_ids[1:], **work)

    with ThreadPoolExecutor(max_workers=1) as executor:
        running = executor.submit(crowd)
        assert first_done.wait(timeout=60)
        page.reload()
        # Stored, not yet confirmed by MTurk: shown as pending, counted nowhere.
        assert pending(page) == 5 and meter(page, "submitted") == (0, 25) and meter(page, "labels") == (0, 125)
        shoot(page, "dashboard-progress")
        first_seen.set()
        seen = [5]
        # A reload every half second, not back to back: the crowd's requests are served by
        # this same process, and a page rendered without pause would take turns with them.
        while not wait([running], timeout=0.5).done:
            page.reload()
            seen.append(pending(page))
        running.result()
    page.reload()
    seen.append(pending(page))
    assert seen == sorted(seen) and seen[-1] == 25, seen

    # A pass of the loop confirms the answers at MTurk, runs quality control and advances the
    # topic, publishing each comparison batch; the crowd works through it, until the pair
    # budget is spent.
    loop_run()
    page.reload()
    assert pending(page) == 0 and meter(page, "submitted")[0] == 25 and meter(page, "labels") == (125, 125)
    topic = Topic.objects.get(key=TOPIC)
    for _ in range(6):
        topic.refresh_from_db()
        if topic.state == Topic.State.DONE:
            break
        crowd_simulate(localturk_url=f"{base}/localturk/", latent=latent, **CROWD)
        loop_run()
    topic.refresh_from_db()
    assert topic.state == Topic.State.DONE
    loop_run()  # approvals after the last quality-control run

    page.reload()
    assert page.locator(f"#topic-{TOPIC} [data-state]").text_content() == "Done"
    submitted, needed = meter(page, "submitted")
    assert submitted == needed > 25 and meter(page, "labels") == (125, 125)  # 5 HITs × 5 statements × 5
    votes, expected = meter(page, "votes")
    assert votes == expected > 0 and meter(page, "approved")[0] > 0
    shoot(page, "dashboard-campaign-done")
    zoomed = open_context(storage_state=page.context.storage_state(), **ZOOM_200).new_page()
    zoomed.goto(page.url)
    assert zoomed.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shoot(zoomed, "dashboard-campaign-zoom200")

    # The ranking: both plots drawn, a table sortable by keyboard, and its downloads.
    page.locator(f"#topic-{TOPIC}").get_by_role("link", name="Ranking").click()
    page.get_by_role("heading", name=f"Ranking: {TOPIC}").wait_for()
    page.wait_for_load_state()  # the sortable table's deferred script has run: Enter below sorts
    assert page.locator("#convergence svg circle").count() >= 1  # each refit after the first, against the previous
    assert page.locator("#top-intervals svg:visible .chart-interval").count() == PROPOSITIONS
    assert page.locator("table.ranking tbody tr").count() == PROPOSITIONS
    likert = page.locator("table.ranking th", has_text="Likert mean")
    likert.get_by_role("button").focus()
    page.keyboard.press("Enter")
    expect(likert).to_have_attribute("aria-sort", "ascending")
    page.keyboard.press("Enter")
    expect(likert).to_have_attribute("aria-sort", "descending")
    means = page.locator("table.ranking tbody td:nth-child(3)").evaluate_all(
        "cells => cells.map(c => Number(c.dataset.value))"
    )
    assert means == sorted(means, reverse=True)
    assert page.locator("#sort-status").text_content() == "Sorted by Likert mean, descending."
    shoot(page, "dashboard-ranking")
    zoomed.goto(page.url)
    assert zoomed.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shoot(zoomed, "dashboard-ranking-zoom200")

    with page.expect_download() as download:
        page.get_by_role("link", name="CSV", exact=True).click()
    assert download.value.suggested_filename == f"composting-1-{TOPIC}-ranking.csv"
    exported = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text(encoding="utf-8"))))
    assert [int(row["rank"]) for row in exported] == list(range(1, PROPOSITIONS + 1))
    assert all(row["mu"] and row["sigma"] for row in exported)

    # The campaigns list sums it up.
    page.get_by_role("link", name="Campaigns").first.click()
    row = page.get_by_role("row", name="Home composting, run 1")
    assert "1 done" in row.text_content() and "$100.00" in row.text_content()
    shoot(page, "dashboard-campaigns")
