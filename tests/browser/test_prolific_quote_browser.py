"""Money as quoted, in a Prolific rehearsal on the local endpoint (issue 25, "Show"): the
researcher sets the seconds per task on the Channel page and reads the quote on the publish
page, in the workspace's currency with two decimals; a simulated crowd takes the study over
HTTP (crowd.simulation.sessions) and the loop runs (ranking.workflow.loop_run); then neither
what the round committed nor what the endpoint charged for its study is above the quote, and
no study was raised without the researcher's recorded yes (crowd.channels.prolific.raises).

Screenshots of the changed pages at 1280 and 390 px go to artifacts/screenshots/.
"""

import io
from decimal import Decimal as D
from pathlib import Path

import pytest
import requests
from django.conf import settings as django_settings

from annotation.campaigns import campaign_create
from annotation.importing.importers import propositions_import
from annotation.models import Batch, Topic
from config.celery import app as celery_app
from crowd.channels.settings import campaign_rewards_fit
from crowd.models import LedgerEntry, PlacesRaise, Study
from crowd.simulation.sessions import prolific_simulate
from ranking.channel_demo import local_prolific_returner, local_prolific_starter
from ranking.workflow import loop_run
from tests.browser.conftest import PHONE

pytestmark = pytest.mark.browser

PASSWORD = "a long enough password"
SAMPLE = Path(django_settings.BASE_DIR) / "samples" / "demo"
TOPIC = "home-composting"
PROPOSITIONS = 10


def sample_files() -> tuple[bytes, bytes]:
    """Ten propositions of one topic from the demo sample, and the topic's description."""
    header, *lines = (SAMPLE / "propositions.tsv").read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if line.split("\t")[0] == TOPIC and float(line.split("\t")[4]) >= 0.5]
    topics_header, *topics = (SAMPLE / "topics.tsv").read_text(encoding="utf-8").splitlines()
    described = [line for line in topics if line.split("\t")[0] == TOPIC]
    return (
        "\n".join([header, *kept[:PROPOSITIONS]]).encode() + b"\n",
        "\n".join([topics_header, *described]).encode() + b"\n",
    )


def amount(text: str) -> D:
    assert text.startswith("£") and len(text.split(".")[-1]) == 2, text  # currency, two decimals
    return D(text[1:].replace(",", ""))


@pytest.fixture
def site(live_server, settings):
    settings.SITE_URL = live_server.url
    settings.PROLIFIC_ENVIRONMENT = "local"
    settings.PROLIFIC_API_URL = f"{live_server.url}/localprolific/api/v1/"  # as `make serve` sets it
    settings.PROLIFIC_COMPLETION_URL = f"{live_server.url}/localprolific/submissions/complete?cc={{code}}"
    settings.PROLIFIC_CURRENCY = "GBP"
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield live_server
    celery_app.conf.task_always_eager = previous


def test_a_prolific_round_costs_no_more_than_its_quote(site, open_context, screenshot, django_user_model):
    base = site.url
    owner = django_user_model.objects.create_user("researcher", password=PASSWORD)
    campaign = campaign_create(
        slug="compost-prolific",
        name="Composting on Prolific",
        owner=owner,
        channel="prolific",
        environment="local",
        assignments_per_hit=3,
        tasks_per_session=2,
        pair_budget_fraction=0.3,
        batch_pairs=20,
        trap_rate=0,
    )
    campaign_rewards_fit(campaign=campaign)  # as the create form does: the defaults pass Prolific's floor
    propositions, topics = sample_files()
    propositions_import(
        campaign=campaign,
        source=io.BytesIO(propositions),
        filename="compost.tsv",
        topics_source=io.BytesIO(topics),
        topics_filename="topics.tsv",
    )

    researcher = open_context()
    page = researcher.new_page()
    page.goto(f"{base}/")
    page.get_by_label("Username").fill("researcher")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Campaigns").wait_for()

    # The Channel page: the estimate the pay check uses, where its refusal says it is.
    page.goto(f"{base}/campaigns/{campaign.slug}/channel/")
    seconds = page.get_by_label("Seconds per task (Prolific)")
    assert seconds.input_value() == "45"
    seconds.fill("40")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Channel settings saved.").wait_for()
    screenshot(page, "prolific-channel-1280")

    # The publish page: the quote, in pounds with two decimals, and what it binds.
    page.goto(f"{base}/campaigns/{campaign.slug}/topics/{TOPIC}/publish/")
    quote = amount(page.locator("[data-money='cost']").text_content().strip())
    assert "the most the round commits" in page.locator("[data-quote]").text_content()
    button = page.get_by_role("button", name="Publish")
    assert button.text_content().strip().endswith(f"£{quote}")
    screenshot(page, "prolific-publish-1280")
    phone = open_context(storage_state=researcher.storage_state(), **PHONE).new_page()
    phone.goto(page.url)
    screenshot(phone, "prolific-publish-390")
    button.click()
    page.get_by_role("heading", name="Composting on Prolific").wait_for()

    likert = Batch.objects.get(topic__key=TOPIC, kind=Batch.Kind.LIKERT)
    study = Study.objects.get(batch=likert)
    assert study.places == 3  # 2 tasks × 3 answers in sessions of 2

    # The crowd takes the study over HTTP; the loop approves, stops the study and moves on.
    crowd = prolific_simulate(
        start_participant=local_prolific_starter(base),
        study_ids=[study.study_id],
        return_study=local_prolific_returner(base),
        workers=6,
        spammers=0.0,
        trap_blind=0.0,
        seed=25,
    )
    assert crowd.submitted == 6
    for _ in range(3):
        loop_run()
    assert Topic.objects.get(key=TOPIC).state != Topic.State.IMPORTING

    # What the round committed, and what the endpoint charged for its study: within the quote.
    rows = LedgerEntry.objects.filter(campaign=campaign)
    places = rows.filter(reference__startswith=f"batch:{likert.pk}:places:")
    committed = sum(places.filter(kind="committed").values_list("amount", flat=True), D("0"))
    released = sum(places.filter(kind="released").values_list("amount", flat=True), D("0"))
    charges = requests.get(
        f"{base}/localprolific/_control/charges", params={"study": study.study_id}, timeout=10
    ).json()["studies"][0]
    funded, charged = D(charges["funded"]) / 100, D(charges["charged"]) / 100
    approved_raises = PlacesRaise.objects.filter(study=study, approved_at__isnull=False)
    beyond = sum(approved_raises.values_list("cost", flat=True), D("0"))
    assert committed - released <= committed <= quote + beyond
    assert charged <= funded <= quote + beyond
    assert not PlacesRaise.objects.filter(study=study, approved_at__isnull=True, done_at__isnull=False).exists()
    assert funded == committed  # the ledger books what the endpoint took
    assert charges["approved"] == 3

    # The campaign page: the money in pounds, two decimals.
    page.reload()
    for name in ("committed", "spent", "cap"):
        amount(page.locator(f"[data-money='{name}']").text_content().strip())
    assert amount(page.locator("[data-money='spent']").text_content().strip()) >= charged
    screenshot(page, "prolific-campaign-1280")
    phone.goto(page.url)
    screenshot(phone, "prolific-campaign-390")
    phone.goto(f"{base}/campaigns/{campaign.slug}/channel/")
    screenshot(phone, "prolific-channel-390")
