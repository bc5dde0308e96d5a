"""The README's journey ("Your own study, start to finish") in Chromium, from an empty database
to a downloaded ranking: a researcher logs in, creates a campaign on participant links with a
consent text, uploads propositions with subtle traps, previews a task, shortens the sessions
on the Channel page, publishes the Likert round and creates the links; a participant (a second
browser context) opens their link, agrees to the consent page, rates statements and later
orders some; the researcher reads the worker-quality report and the ranking, and downloads it.

The researcher's and the participant's steps are clicks and typing. The rest of the crowd
works over HTTP (crowd.simulation.sessions), and the loop (ranking.workflow.loop_run) runs in
this process with eager Celery, as in `make demo CHANNEL=links`.

With SCREENSHOTS=dir set, every researcher page is also captured at 1280 and 390 px wide
(tests/browser/screenshots.py) once the campaign is done.
"""

import csv
import io
import os
import random
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from annotation.models import Proposition, Topic
from config.celery import app as celery_app
from crowd.models import Assignment, WorkSession
from crowd.simulation.hits import Judge, crowd_make
from crowd.simulation.sessions import Participant
from ranking.workflow import loop_run
from tests.browser import screenshots

pytestmark = pytest.mark.browser

PASSWORD = "a long enough password"
SAMPLE = Path(django_settings.BASE_DIR) / "samples" / "demo"
TOPIC = "home-composting"
PROPOSITIONS = 10
TRAPS = 3
CONSENT = "This study is run by the Salience test lab.\nYour answers are stored without your name."
CROWD = {"workers": 5, "spammers": 0.0, "trap_blind": 0.0, "seed": 16}
MAX_ROUNDS = 8
SCALE = ("Not at all important", "Slightly important", "Moderately important", "Very important", "Extremely important")


def tsv_file(path: Path, header: str, rows: list[list[str]]) -> Path:
    path.write_text("\n".join([header, *("\t".join(row) for row in rows)]) + "\n", encoding="utf-8")
    return path


def sample_files(directory: Path) -> tuple[Path, Path, Path, dict[str, float]]:
    """A small propositions file, its topic description and traps, cut from the demo sample;
    and the sample's hidden importance per external id. The propositions are spread evenly
    over the topic's range of importance, so the crowd's ranking has an order to find (the
    file's first ten are all very important: their order is a coin's)."""
    header, *lines = (SAMPLE / "propositions.tsv").read_text(encoding="utf-8").splitlines()
    rows = [line.split("\t") for line in lines]
    candidates = sorted(
        (row for row in rows if row[0] == TOPIC and float(row[4]) >= 0.5), key=lambda row: float(row[7])
    )
    spacing = (len(candidates) - 1) / (PROPOSITIONS - 1)
    picked = {id(candidates[round(index * spacing)]) for index in range(PROPOSITIONS)}
    kept = [row for row in rows if id(row) in picked]  # in the file's order
    topics_header, *topics = (SAMPLE / "topics.tsv").read_text(encoding="utf-8").splitlines()
    traps_header, *traps = (SAMPLE / "subtle_traps.tsv").read_text(encoding="utf-8").splitlines()
    return (
        tsv_file(directory / "compost.tsv", header, kept),
        tsv_file(directory / "topics.tsv", topics_header, [t.split("\t") for t in topics if t.startswith(TOPIC)]),
        tsv_file(directory / "traps.tsv", traps_header, [t.split("\t") for t in traps if t.startswith(TOPIC)][:TRAPS]),
        {row[6]: float(row[7]) for row in kept},
    )


def crowd_work(link_url: str, *, latent: dict[int, float], traps: list[int], round_number: int) -> int:
    """The simulated crowd takes sessions on the open link, one after the other, until each of
    them has found nothing left to do; the number of tasks they submitted. (Sessions run one at
    a time and hold no task once over, so whoever found nothing finds nothing later either.)"""
    judge = Judge(seed=CROWD["seed"], latent=latent, traps=traps)
    people = crowd_make(**CROWD)
    crowd = [Participant(p, judge, random.Random(f"{round_number}:{p.worker_id}")) for p in people]
    submitted = 0
    while crowd:
        done = {person: person.session_work(person.link_start(link_url))[0] for person in crowd}
        submitted += sum(done.values())
        crowd = [person for person in crowd if done[person]]
    return submitted


def task_frame(page):
    frame = page.frame_locator("iframe.session-task")
    frame.locator("#hit-form").wait_for()
    return frame


def rate(frame, importance: dict[str, float]) -> None:
    """Rate every statement as a careful person would: by the sample's hidden importance of
    the statement, the off-topic ones (not in it) not at all important."""
    statements = frame.locator("fieldset.rating")
    for number in range(statements.count()):
        statement = statements.nth(number)
        text = statement.locator(".statement-text").text_content().strip()
        label = SCALE[min(int(importance.get(text, 0.0) * len(SCALE)), len(SCALE) - 1)]
        statement.get_by_text(label, exact=True).click()
    frame.locator("#submitButton").click()


def order(frame) -> None:
    """Move the last statement up once with its button, and submit."""
    frame.locator(".rank-item").last.get_by_role("button", name="Up").click()
    frame.locator("#submitButton").click()


def session_do(page, importance: dict[str, float]) -> list[str]:
    """Work through the session on the page, agreeing to the consent page when it is shown
    (before the first task of a session); the kinds of task done, up to the thank-you page."""
    consent = page.get_by_role("heading", name="Before you start")
    thanks = page.get_by_role("heading", name="Thank you!")
    consent.or_(page.locator("iframe.session-task")).or_(thanks).first.wait_for()
    if consent.count():
        assert "Salience test lab" in page.locator("section.consent").text_content()
        page.get_by_label("I have read the information above and agree to take part.").check()
        page.get_by_role("button", name="Agree and start").click()
    done: list[str] = []
    while True:
        page.get_by_text(f"Task {len(done) + 1} of 2").or_(thanks).first.wait_for()
        if thanks.count():
            return done
        frame = task_frame(page)
        kind = frame.locator("#hit-form").get_attribute("data-kind")
        if kind == "likert":
            rate(frame, importance)
        else:
            order(frame)
        done.append(kind)


@pytest.fixture
def site(live_server, settings):
    settings.SITE_URL = live_server.url
    settings.PROLIFIC_API_URL = f"{live_server.url}/localprolific/api/v1/"  # as `make serve` sets it
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield live_server
    celery_app.conf.task_always_eager = previous


def test_a_study_from_an_empty_database_to_a_downloaded_ranking(site, open_context, tmp_path, django_user_model):
    base = site.url
    django_user_model.objects.create_user("researcher", password=PASSWORD)
    propositions, topics, traps, importance = sample_files(tmp_path)
    researcher = open_context()
    page = researcher.new_page()

    # 1. Log in.
    page.goto(f"{base}/")
    page.get_by_label("Username").fill("researcher")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Campaigns").wait_for()

    # 2. New campaign: participant links (the default), three answers per task, a consent text,
    # and a pair budget small enough for one comparison batch.
    page.get_by_role("link", name="New campaign").click()
    page.get_by_label("Name").fill("Composting study")
    page.get_by_label("Slug").fill("compost")
    assert page.get_by_label("Participant links").is_checked()
    page.get_by_label("Answers per task").fill("3")
    page.get_by_label("Pair budget (share of all pairs)").fill("0.3")
    page.get_by_label("Pairs per comparison batch").fill("20")
    page.get_by_label("Information and consent page").fill(CONSENT)
    page.get_by_role("button", name="Create campaign").click()
    page.get_by_role("heading", name="Composting study").wait_for()

    # 3. Upload the propositions with their topic description and subtle traps.
    page.get_by_label("Proposition file").set_input_files(propositions)
    page.get_by_label("Topic descriptions (optional)").set_input_files(topics)
    page.get_by_label("Traps (optional)").set_input_files(traps)
    page.get_by_label("Subtle: plausible but off-topic").check()
    page.get_by_role("button", name="Upload").click()
    page.get_by_text(f"Imported {PROPOSITIONS} propositions and {TRAPS} subtle traps from compost.tsv").wait_for()
    card = page.locator(f"#topic-{TOPIC}")
    assert f"{PROPOSITIONS} propositions, {TRAPS} subtle traps imported, 0 obvious traps placed" in card.text_content()

    # 4. Preview a task: a new tab with the worker's page, in preview mode.
    with researcher.expect_page() as opened:
        card.get_by_role("link", name="Preview a task").click()
    preview = opened.value
    preview.get_by_text("Preview.").wait_for()
    assert preview.locator("fieldset.rating").count() == 5
    assert preview.locator("fieldset.rating[disabled]").count() == 5  # nothing can be answered
    preview.close()

    # 5. The Channel page: sessions of two tasks (before the first publish).
    page.get_by_role("link", name="Channel: Participant links").click()
    page.get_by_label("Tasks per session").fill("2")
    page.get_by_role("button", name="Save", exact=True).click()
    page.get_by_role("heading", name="Where workers come from").wait_for()

    # 6. Publish the Likert round: nothing to pay on links.
    page.get_by_role("link", name="Composting study").click()
    page.locator(f"#topic-{TOPIC}").get_by_role("link", name="Publish the Likert round…").click()
    assert page.locator("[data-money='cost']").text_content() == "$0.00"
    page.get_by_role("button", name="Publish").click()
    page.locator(f"#topic-{TOPIC} [data-meter='tasks']").wait_for()

    # 7. Links: a personal one for the participant in the browser, an open one for the crowd.
    page.get_by_role("link", name="Channel: Participant links").click()
    page.get_by_label("Kind").select_option(label="Personal (one person)")
    page.get_by_label("Labels").fill("Browser participant")
    page.get_by_role("button", name="Create").click()
    page.get_by_text("1 link created.").wait_for()
    page.get_by_label("Kind").select_option(label="Open (asks for a participant code)")
    # Labels name personal links only: hidden by the page's deferred script, which may run just after.
    page.get_by_label("Labels").wait_for(state="hidden")
    page.get_by_role("button", name="Create").click()
    links = page.locator("section[aria-labelledby=links-heading] tbody tr")
    links.filter(has_text="Open (asks for a participant code)").wait_for()
    personal_url = links.filter(has_text="Browser participant").locator("code").text_content()
    open_url = links.filter(has_text="Open (asks for a participant code)").locator("code").text_content()

    # What the participant in the browser and the simulated crowd know: the sample's hidden
    # importance of each statement (the crowd's on its latent scale), and which are traps.
    imported = Proposition.objects.filter(topic__key=TOPIC)
    by_text = {p.text: importance[p.external_id] for p in imported if p.external_id in importance}
    latent = {p.pk: 4 * (importance[p.external_id] - 0.5) for p in imported if p.external_id in importance}
    trap_ids = [p.pk for p in imported if p.trap_kind != Proposition.TrapKind.NONE]  # the obvious ones too
    assert len(by_text) == PROPOSITIONS
    assert imported.filter(trap_kind=Proposition.TrapKind.SUBTLE).count() == TRAPS

    # 8. The participant: link, consent, two Likert tasks, thank you.
    participant = open_context().new_page()
    participant.goto(personal_url)
    participant.get_by_role("button", name="Start").click()
    assert session_do(participant, by_text) == ["likert", "likert"]
    assert "2 tasks done" in participant.locator("main").text_content()
    session = WorkSession.objects.get(link__label="Browser participant")
    assert session.consented_at is not None and session.status == WorkSession.Status.FINISHED

    # 9. The rest of the crowd finishes the round; one pass of the loop counts the answers, runs
    # quality control and publishes the first comparison batch.
    assert crowd_work(open_url, latent=latent, traps=trap_ids, round_number=0) > 0
    loop_run()
    topic = Topic.objects.get(key=TOPIC)
    assert topic.state == Topic.State.COMPARISONS, topic.state

    # 10. The participant comes back for a second session (the consent page again, if asked),
    # and orders statements.
    participant.goto(personal_url)
    participant.get_by_role("button", name="Continue").click()
    assert session_do(participant, by_text) == ["comparison", "comparison"]

    # 11. The crowd and the loop until the pair budget is spent.
    for round_number in range(1, MAX_ROUNDS):
        topic.refresh_from_db()
        if topic.state == Topic.State.DONE:
            break
        crowd_work(open_url, latent=latent, traps=trap_ids, round_number=round_number)
        loop_run()
    topic.refresh_from_db()
    assert topic.state == Topic.State.DONE
    loop_run()  # approvals after the last quality-control run

    # 12. The researcher: the campaign page says done; the participants and their consent.
    page.get_by_role("heading", name="Participants").wait_for()
    page.reload()
    row = page.locator("section[aria-labelledby=participants-heading] tbody tr", has_text="Browser participant")
    assert row.locator("time").count() == 1  # when they agreed
    page.get_by_role("link", name="Composting study").click()
    assert page.locator(f"#topic-{TOPIC} [data-state]").first.text_content() == "Done"

    # 13. The worker-quality report: every participant with their figures.
    page.get_by_role("link", name="Worker quality").first.click()
    page.get_by_role("heading", name="Worker quality: Composting study").wait_for()
    assert "Not computed yet" not in page.locator("main").text_content()
    workers = page.locator("table.quality-workers tbody tr")
    assert workers.count() == Assignment.objects.values("worker").distinct().count() > CROWD["workers"] // 2
    assert workers.filter(has_text=session.worker.external_id).count() == 1  # the participant in the browser

    # 14. The ranking page and its CSV download: a header and every proposition, ranked.
    page.go_back()
    page.locator(f"#topic-{TOPIC}").get_by_role("link", name="Ranking").click()
    page.get_by_role("heading", name=f"Ranking: {TOPIC}").wait_for()
    assert page.locator("table.ranking tbody tr").count() == PROPOSITIONS
    with page.expect_download() as download:
        page.get_by_role("link", name="CSV", exact=True).click()
    assert download.value.suggested_filename == f"compost-{TOPIC}-ranking.csv"
    text = Path(download.value.path()).read_text(encoding="utf-8")
    header = text.splitlines()[0].split(",")
    assert header[:7] == ["topic", "rank", "id", "external_id", "subject", "relation", "object"]
    ranked = list(csv.DictReader(io.StringIO(text)))
    assert [int(line["rank"]) for line in ranked] == list(range(1, PROPOSITIONS + 1))
    assert {line["external_id"] for line in ranked} == set(importance)  # every proposition, no trap
    assert all(line["topic"] == TOPIC and line["likert_n"] != "0" for line in ranked)
    assert sum(line["in_comparisons"] == "True" for line in ranked) == PROPOSITIONS
    top, bottom = ranked[: PROPOSITIONS // 2], ranked[PROPOSITIONS // 2 :]
    assert sum(importance[line["external_id"]] for line in top) > sum(
        importance[line["external_id"]] for line in bottom
    )

    if os.environ.get("SCREENSHOTS"):
        screenshots.researcher_pages_shoot(
            open_context,
            base=base,
            storage_state=researcher.storage_state(),
            campaign="compost",
            topic=TOPIC,
            propositions=propositions,
            topics=topics,
            proposition=int(ranked[0]["id"]),
        )
