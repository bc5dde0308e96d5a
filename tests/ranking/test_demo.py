"""`make demo`'s job, in its quick variant: both topics reach a non-empty ranking; and the HIT
it leaves for a newcomer to try."""

import re
import subprocess
from io import StringIO
from urllib.parse import urlsplit

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.core.management.base import OutputWrapper

from annotation.models import Campaign, Topic
from crowd.models import Assignment, WorkSession
from crowd.simulation.hits import forms_parse
from dashboard.management.commands import demo
from ranking.demo import RoundProgress, demo_user, tryout_link_create
from ranking.export import ranking_rows
from tests.services import free_port


def test_make_demo_recruits_on_participant_links_by_default_and_make_serve_serves():
    demo = subprocess.run(["make", "-n", "demo"], cwd=django_settings.BASE_DIR, capture_output=True, text=True)
    serve = subprocess.run(["make", "-n", "serve"], cwd=django_settings.BASE_DIR, capture_output=True, text=True)
    beyond = subprocess.run(
        ["make", "-n", "serve", "SERVE_HOST=0.0.0.0"], cwd=django_settings.BASE_DIR, capture_output=True, text=True
    )

    assert "manage.py demo --channel links --port 8000" in demo.stdout
    assert "manage.py serve --host 127.0.0.1 --port 8000" in serve.stdout and "sqlite:///" in serve.stdout
    assert "manage.py serve --host 0.0.0.0 --port 8000" in beyond.stdout


@pytest.mark.django_db
def test_the_tryout_link_gives_a_newcomer_a_consent_page_then_three_tasks(client, settings):
    settings.SUBMIT_RATE_PER_WORKER = settings.SUBMIT_RATE_PER_ADDRESS = 0
    url = tryout_link_create(owner=demo_user())

    page = client.get(urlsplit(url).path)
    token = dict(forms_parse(page.content.decode())["form-0"].hidden)["csrfmiddlewaretoken"]
    session_url = client.post(urlsplit(url).path, {"csrfmiddlewaretoken": token})["Location"]
    consent = client.get(session_url)
    assert b"This is a rehearsal of a study" in consent.content
    shown = re.search(r'name="consent" value="([0-9a-f]+)"', consent.content.decode()).group(1)  # the text's version
    client.post(f"{session_url}consent/", {"agree": "yes", "consent": shown})
    for number in (1, 2, 3):
        frame = client.get(session_url).content.decode()
        assert f"Task <strong>{number}</strong> of 3" in frame
        task = client.get(
            re.search(r'<iframe class="session-task" src="([^"]+)"', frame).group(1).replace("&amp;", "&")
        )
        form = forms_parse(task.content.decode())["hit-form"]
        stored = client.post(form.action, dict(form.hidden + [(name, "4") for name in form.radios]))
        copy = forms_parse(stored.content.decode())["external-submit"]
        assert client.post(urlsplit(copy.action).path, dict(copy.hidden)).status_code == 200
    assert b"You finished this session: 3 tasks done" in client.get(session_url).content
    assert WorkSession.objects.get().consented_at is not None
    assert (
        Assignment.objects.filter(task__batch__topic__campaign__slug="demo-try", verification="verified").count() == 3
    )


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.mturk
def test_quick_demo_ends_with_a_ranking_for_both_topics(transactional_db, settings, capsys):
    call_command("demo", "--channel", "mturk", "--quick", "--no-serve", "--port", str(free_port()))
    output = capsys.readouterr().out
    campaign = Campaign.objects.get(slug="demo")
    assert campaign.topics.count() == 2
    for topic in campaign.topics.all():
        assert topic.state == Topic.State.DONE
        rows = ranking_rows(topic=topic, top=10)
        assert len(rows) == 10 and rows[0]["mu"] is not None
        assert f"{topic.key}: Spearman of the final ranking" in output
        assert re.search(rf"  {topic.key}: Automatic draft: .*, passes the checker\)", output)
    assert "Dashboard: http://127.0.0.1:" in output
    assert re.search(r"Try a HIT yourself: http://127\.0\.0\.1:\d+/s/l/[\w-]+/", output)
    assert "The demo's server has stopped; `make serve" in output  # SERVE_DB= on the SQLite default
    assert Campaign.objects.get(slug="demo").channel == "mturk"
    # The 30 simulated workers it announces are the same 30 people in every round, and the
    # loop's last pass approved the last round's answers too.
    assert "30 simulated workers (10% spammers), the same 30 in every round." in output
    answers = Assignment.objects.filter(task__batch__topic__campaign=campaign)
    assert answers.values("worker").distinct().count() == 30
    assert not answers.exclude(status=Assignment.Status.APPROVED).exists()


def test_the_demo_tells_how_far_a_round_is():
    """A line at most every PROGRESS_SECONDS while a round runs, with the answers it still lacked."""
    command, out = demo.Command(), StringIO()
    command.stdout, command._answers_shown = OutputWrapper(out), float("-inf")

    for answers in (1, 2, 812, 813):
        if answers == 812:
            command._answers_shown -= demo.PROGRESS_SECONDS  # as if that long had passed
        command._answers(RoundProgress("Likert round", answers, 1470))

    assert out.getvalue().splitlines() == ["  Likert round: 1 / 1,470 answers", "  Likert round: 812 / 1,470 answers"]
