"""Money as quoted, in a Prolific rehearsal on the local endpoint (issue 25, "Show"): the
researcher sets the seconds per task on the Channel page and reads the quote on the publish
page, in the workspace's currency with two decimals; a simulated crowd takes the study over
HTTP (crowd.simulation.sessions) and the loop runs (ranking.workflow.loop_run). One session
finds no task free after its first (the packing failure concurrent sessions can cause, forced
here): the loop asks for one more place, and until the researcher says yes on the campaign
page neither what the round committed nor what the endpoint charged for its study is above
the quote; afterwards both are the quote plus what they approved
(crowd.channels.prolific.raises).

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
from crowd.models import LedgerEntry, PlacesRaise, Study, WorkSession
from crowd.sessions import holds
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


def test_a_prolific_round_costs_no_more_than_its_quote(site, open_context, screenshot, django_user_model, monkeypatch):
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
    study = Study.objects.of_batch(likert).get()
    assert study.places == 3  # 2 tasks × 3 answers in sessions of 2

    def round_committed() -> D:
        """What the ledger ever committed for the round's study (before anything was released)."""
        places = LedgerEntry.objects.filter(campaign=campaign, reference__startswith=f"batch:{likert.pk}:places:")
        return sum(places.filter(kind="committed").values_list("amount", flat=True), D("0"))

    def charged_for(study: Study) -> dict:
        """What the endpoint took for the study (funded, charged), in pounds."""
        [charges] = requests.get(
            f"{base}/localprolific/_control/charges", params={"study": study.study_id}, timeout=10
        ).json()["studies"]
        return {**charges, "funded": D(charges["funded"]) / 100, "charged": D(charges["charged"]) / 100}

    assert round_committed() == quote == charged_for(study)["funded"]

    # The crowd takes the study over HTTP.
    def crowd_round(round_number: int) -> int:
        return prolific_simulate(
            start_participant=local_prolific_starter(base),
            study_ids=[study.study_id],
            return_study=local_prolific_returner(base),
            workers=6,
            spammers=0.0,
            trap_blind=0.0,
            seed=25,
            round_number=round_number,
        ).submitted

    # The third session finds no task free after its first (as when concurrent sessions hold the
    # last free slots): one answer is still to collect once every place is used. The loop asks
    # the researcher; nothing beyond the quote is committed.
    real = holds._task_free_for

    def task_free_for(session, *, now):
        finished = WorkSession.objects.filter(study_id=session.study_id, status="finished").exclude(pk=session.pk)
        if finished.count() == 2 and holds._done(session) >= 1:
            return None
        return real(session, now=now)

    monkeypatch.setattr(holds, "_task_free_for", task_free_for)
    assert crowd_round(0) == 5
    monkeypatch.setattr(holds, "_task_free_for", real)
    assert list(WorkSession.objects.filter(study=study).order_by("pk").values_list("tasks_target", flat=True)) == [
        2,
        2,
        2,
    ]
    loop_run()
    loop_run()
    [asked] = PlacesRaise.objects.filter(study=study)
    assert asked.approved_at is None and (asked.places_from, asked.places_to) == (3, 4)
    assert round_committed() == quote == charged_for(study)["funded"]

    # The campaign page explains it, with the cost; the researcher says yes.
    page.reload()
    raise_card = page.locator(f"[data-raise='{asked.pk}']")
    assert (
        "1 of 6 answers" in raise_card.text_content()
        and "fewer tasks than it was sized for" in raise_card.text_content()
    )
    cost = amount(raise_card.locator("[data-raise-cost]").text_content().strip())
    assert cost == asked.cost
    screenshot(page, "prolific-raise-1280")
    phone.goto(page.url)
    screenshot(phone, "prolific-raise-390")
    raise_card.get_by_role("button", name=f"Approve £{cost} more").click()
    page.get_by_text(f"Approved: study {study.study_id} goes to 4 places").wait_for()
    asked.refresh_from_db()
    assert asked.approved_by == owner and asked.approved_at is not None

    # The loop raises the places; a new participant gives the missing answer; the loop goes on.
    loop_run()
    likert.refresh_from_db()
    print(
        "DEBUG",
        likert.status,
        Study.objects.get(pk=study.pk).status,
        list(WorkSession.objects.filter(study=study).values_list("status", "submission_status")),
        list(PlacesRaise.objects.values_list("places_to", "approved_at", "done_at")),
        Topic.objects.get(key=TOPIC).state,
    )
    assert Study.objects.get(pk=study.pk).places == 4
    assert crowd_round(1) == 1
    for _ in range(3):
        loop_run()
    assert Topic.objects.get(key=TOPIC).state == Topic.State.COMPARISONS

    # What the round committed and what the endpoint charged for its study: the quote, plus
    # only what the researcher said yes to.
    charges = charged_for(study)
    approved = sum(
        PlacesRaise.objects.filter(study=study, approved_at__isnull=False).values_list("cost", flat=True), D("0")
    )
    assert approved == cost
    assert round_committed() == charges["funded"] == quote + approved
    assert charges["charged"] <= charges["funded"]
    assert charges["approved"] == 4

    # The campaign page: the money in pounds, two decimals, and the raise with who approved it.
    page.reload()
    for name in ("committed", "spent", "cap"):
        amount(page.locator(f"[data-money='{name}']").text_content().strip())
    assert amount(page.locator("[data-money='spent']").text_content().strip()) >= charges["charged"]
    assert "Approved by researcher" in page.locator(f"[data-raise='{asked.pk}']").text_content()
    screenshot(page, "prolific-campaign-1280")
    phone.goto(page.url)
    screenshot(phone, "prolific-campaign-390")
    phone.goto(f"{base}/campaigns/{campaign.slug}/channel/")
    screenshot(phone, "prolific-channel-390")
