"""Suitability filtering in Chromium: a researcher draws a sample, labels it with the keyboard,
trains the classifier, verifies the head of the queue, applies the filter and publishes the
Likert round on the local MTurk endpoint. The removed propositions are in no Likert task, and
the saving the campaign page shows equals tasks avoided × assignments × (reward + fee).
Every page it shows is checked at 390 px for sideways scrolling; with SHOTS naming a directory,
screenshots of each at 1280 and 390 px go there as suitability-*.png (for a human to look at)."""

import math
import os
from decimal import Decimal
from pathlib import Path

import pytest

from annotation.models import Batch, Campaign, TaskItem
from annotation.suitability.models import SuitabilityDecision
from config.celery import app as celery_app
from crowd.marketplaces.registry import channel_policy
from tests.annotation.suitability.conftest import import_labelled
from tests.browser.conftest import PHONE
from tests.factories import CampaignFactory

pytestmark = pytest.mark.browser

PASSWORD = "a long enough password"
SHOTS = Path(os.environ["SHOTS"]) if os.environ.get("SHOTS") else None
KEYS = {"pronoun_no_referent": "p", "clause_argument": "c", "wrong_extraction": "w", "other": "o"}


@pytest.fixture
def local_marketplace(live_server, settings):
    settings.MTURK_ENVIRONMENT = "local"
    settings.SITE_URL = live_server.url
    settings.MTURK_LOCAL_ENDPOINT_URL = f"{live_server.url}/localturk/"
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield live_server
    celery_app.conf.task_always_eager = previous


def both_widths(open_context, url: str, name: str, storage) -> None:
    """The phone page must not scroll sideways; with SHOTS set, full-page screenshots at 1280
    and 390 px (a screenshot is no assertion: without SHOTS none is taken)."""
    for label, options in (("1280", {}), ("390", PHONE)):
        if label == "1280" and SHOTS is None:
            continue
        context = open_context(storage_state=storage, **options)
        page = context.new_page()
        page.goto(url, timeout=60_000)
        if SHOTS is not None:
            # A long page on a loaded machine takes a while to capture.
            page.screenshot(path=str(SHOTS / f"suitability-{name}-{label}.png"), full_page=True, timeout=90_000)
        if label == "390":
            wide = page.evaluate("document.documentElement.scrollWidth")
            assert wide <= 390, f"{name} is {wide} px wide on a phone"


def test_label_train_verify_apply_publish(local_marketplace, page, open_context, django_user_model):
    base = local_marketplace.url
    user = django_user_model.objects.create_user("researcher", password=PASSWORD)
    campaign = CampaignFactory(owner=user, slug="carb", name="CaRB filter", trap_rate=0, budget_cap=Decimal("500"))
    gold = import_labelled(campaign)
    campaign.topics.exclude(key="carb-a").delete()
    gold = {pid: row for pid, row in gold.items() if row["topic"] == "carb-a"}

    page.goto(f"{base}/accounts/login/", timeout=60_000)
    page.get_by_label("Username").fill("researcher")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Campaigns").wait_for()

    # From the campaign page to the suitability pages; draw a sample of 40.
    page.goto(f"{base}/campaigns/carb/")
    page.locator("#suitability").get_by_role("link", name="Suitability filtering").click()
    page.get_by_role("heading", name="Suitability filtering").wait_for()
    page.get_by_label("Sample size").fill("40")
    page.get_by_role("button", name="Draw the sample").click()
    page.get_by_text("Sample drawn: 40 propositions").wait_for()

    # Label with the keyboard alone: the guideline is on the page; one key per proposition.
    page.get_by_role("link", name="Label the sample").first.click()
    page.get_by_role("heading", name="Guideline").wait_for()
    assert "proper concepts" in page.locator(".guideline-text").text_content()
    both_widths(open_context, page.url, "label-item", page.context.storage_state())
    for done in range(40):
        page.get_by_text(f"You have labelled {done} of 40.").wait_for()
        page.locator("#label-form[data-keys='ready']").wait_for()
        pid = int(page.locator("[data-proposition]").get_attribute("data-proposition"))
        row = gold[pid]
        page.keyboard.press("s" if row["suitable"] == "1" else KEYS[row["reason"]])
    page.get_by_text("Every sampled proposition has your label").wait_for()

    page.get_by_role("link", name="Overview", exact=True).click()
    page.get_by_role("button", name="Train").click()
    page.get_by_text("Classifier trained").wait_for()

    # Verify the five least certain: confirm or correct each by its gold label.
    page.get_by_role("link", name="Open the queue").click()
    both_widths(open_context, page.url, "queue-start", page.context.storage_state())
    for _ in range(5):
        item = page.locator(".queue-item").first
        pid = int(item.get_attribute("data-proposition"))
        keep = gold[pid]["suitable"] == "1"
        item.get_by_role("button", name="Suitable: keep" if keep else "Unsuitable: remove").click()
        page.get_by_text(f"Recorded: proposition {pid}").wait_for()
    assert SuitabilityDecision.objects.filter(verified_label__isnull=False).count() == 5

    page.get_by_role("link", name="Overview", exact=True).click()
    page.get_by_role("button", name="Apply the filter").click()
    page.get_by_text("Filter applied").wait_for()
    removed = set(SuitabilityDecision.objects.filter(removed=True).values_list("proposition_id", flat=True))
    assert removed

    # The campaign page, before publishing: the share removed and the money saved.
    page.goto(f"{base}/campaigns/carb/")
    card = page.locator("#suitability")
    total = len(gold)
    kept = total - len(removed)
    assert card.locator("[data-figure='removed']").text_content() == f"{len(removed)} of {total}"
    avoided = math.ceil(total / campaign.likert_group_size) - math.ceil(kept / campaign.likert_group_size)
    per_assignment = channel_policy(campaign.channel).assignment_cost(
        reward=campaign.likert_reward, max_assignments=campaign.assignments_per_hit
    )
    assert per_assignment == Decimal("0.07")  # $0.06 + MTurk's $0.01 minimum fee
    saved = avoided * campaign.assignments_per_hit * per_assignment
    assert card.locator("[data-figure='tasks-avoided']").text_content() == str(avoided)
    assert card.locator("[data-figure='money-saved']").text_content() == f"${saved}"
    storage = page.context.storage_state()
    for name, path in (
        ("overview", "suitability/"),
        ("label", "suitability/label/"),
        ("queue", "suitability/queue/"),
        ("campaign", ""),
    ):
        both_widths(open_context, f"{base}/campaigns/carb/{path}", name, storage)

    # Publish: the preview costs only the kept propositions; no removed one is in a Likert task.
    page.get_by_role("link", name="Publish the Likert round…").click()
    tasks = math.ceil(kept / campaign.likert_group_size)
    cost = tasks * campaign.assignments_per_hit * per_assignment
    assert page.locator("[data-money='cost']").text_content() == f"${cost}"
    page.get_by_role("button", name=f"Publish {tasks} HITs for ${cost}").click()
    page.get_by_text(f"published {tasks} HITs").wait_for()
    asked = set(TaskItem.objects.filter(task__batch__kind=Batch.Kind.LIKERT).values_list("proposition_id", flat=True))
    assert len(asked) == kept and asked.isdisjoint(removed)
    assert Campaign.objects.get(pk=campaign.pk).status == Campaign.Status.ACTIVE

    # Filtering is closed for the topic now, and the page says why.
    page.goto(f"{base}/campaigns/carb/suitability/")
    page.get_by_role("button", name="Apply again").click()
    page.get_by_text("is built already").wait_for()
