"""The worker's HIT pages in real Chromium: rate, order by mouse and keyboard, preview,
double submit, inside a cross-origin iframe, and screenshots for a human to look at."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode
from uuid import UUID

import pytest
from django.core.cache import cache

from annotation.models import Batch, Task
from crowd.hit_page.content import ProcessCache, start_order
from crowd.hit_page.params import PREVIEW_ASSIGNMENT_ID
from crowd.models import Assignment, Comparison, LikertLabel
from ranking.export import raw_label_rows
from tests.browser.conftest import PHONE
from tests.factories import (
    BatchFactory,
    PropositionFactory,
    TaskFactory,
    TopicFactory,
    WorkerFactory,
    ordered_propositions,
)

pytestmark = pytest.mark.browser

STATEMENTS = [
    ("Federal student loans", "do not require", "a credit check or a credit history"),
    ("A cosigner with good credit", "can help", "a student qualify for a private loan"),
    ("Private lenders", "usually look at", "the borrower's credit score, income and employment history"),
    ("Students", "must fill out", "the FAFSA to receive federal student aid"),
    ("Some credit unions", "offer", "small credit-builder loans to students"),
]


def _task(kind=Batch.Kind.LIKERT):
    topic = TopicFactory(description="student loans without credit history")
    propositions = [PropositionFactory(topic=topic, subject=s, relation=r, object=o) for s, r, o in STATEMENTS]
    return TaskFactory(batch=BatchFactory(topic=topic, kind=kind), propositions=propositions)


def _url(live_server, task, *, assignment="ASG1", worker="WORKER1", submit_to=None):
    query = {"assignmentId": assignment, "hitId": "HIT1", "workerId": worker}
    if submit_to:
        query["turkSubmitTo"] = submit_to
    return f"{live_server.url}/hit/{task.uuid}/?{urlencode(query)}"


def _shown_order(page_or_frame) -> list[int]:
    return [
        int(pid)
        for pid in page_or_frame.locator("#ranking .rank-item").evaluate_all("els => els.map(e => e.dataset.id)")
    ]


def _rate_all(page_or_frame, labels=("Very important",) * 5):
    for index, label in enumerate(labels):
        page_or_frame.locator("fieldset.rating").nth(index).get_by_text(label, exact=True).click()


# --- Likert -------------------------------------------------------------------------------


def test_likert_hit_submits_labels_and_waits_for_every_rating(live_server, page):
    task = _task()
    page.goto(_url(live_server, task))
    shown = _likert_shown(page)
    submit = page.locator("#submitButton")
    labels = [
        "Extremely important",
        "Very important",
        "Moderately important",
        "Slightly important",
        "Not at all important",
    ]

    assert submit.is_disabled()
    _rate_all(page, labels[:4])
    assert submit.is_disabled()
    assert page.locator("#progress").text_content() == "4 of 5 statements rated."
    page.locator("fieldset.rating").nth(4).get_by_text(labels[4], exact=True).click()
    assert submit.is_enabled()
    submit.click()

    page.get_by_role("heading", name="Thank you!").wait_for()
    assignment = Assignment.objects.get()
    assert assignment.assignment_id == "ASG1" and assignment.worker.external_id == "WORKER1"
    assert assignment.time_on_task_ms is not None and assignment.time_on_task_ms > 0
    assert dict(LikertLabel.objects.values_list("proposition_id", "score")) == dict(zip(shown, [5, 4, 3, 2, 1]))
    assert assignment.shown_order == shown


def _likert_shown(page_or_frame) -> list[int]:
    """The proposition ids of a rating page, top first (each statement's radio group is named rating-<id>)."""
    names = page_or_frame.locator("fieldset.rating").evaluate_all(
        "els => els.map(e => e.querySelector('input[type=radio]').name)"
    )
    return [int(name.removeprefix("rating-")) for name in names]


def test_each_worker_sees_the_statements_in_their_own_order_and_it_is_stored(live_server, page):
    task = _task()
    ids = [p.pk for p in ordered_propositions(task)]
    shown = {}
    for worker in ("WORKER1", "WORKER2", "WORKER3"):
        page.goto(_url(live_server, task, assignment=f"ASG{worker}", worker=worker))
        shown[worker] = _likert_shown(page)
        assert shown[worker] == list(start_order(task_uuid=task.uuid, worker_id=worker, item_ids=ids))
        numbers = page.locator(".statement-number").all_text_contents()
        assert numbers == [f"Statement {n} of 5" for n in range(1, 6)]
        _rate_all(page)
        page.locator("#submitButton").click()
        page.get_by_role("heading", name="Thank you!").wait_for()

    assert len({tuple(order) for order in shown.values()}) > 1  # not one order for all
    stored = dict(Assignment.objects.values_list("worker__external_id", "shown_order"))
    assert stored == shown
    Assignment.objects.update(verification=Assignment.Verification.VERIFIED)  # the export holds confirmed answers
    rows = [row for row in raw_label_rows(topic=task.batch.topic) if row["worker"] == "WORKER2"]
    assert {row["shown_order"] for row in rows} == {" ".join(map(str, shown["WORKER2"]))}


def test_a_reload_mid_task_keeps_the_ratings_given(live_server, page):
    task = _task()
    page.goto(_url(live_server, task))
    _rate_all(page, ("Extremely important", "Slightly important"))

    page.reload()

    checked = page.locator("fieldset.rating input:checked").evaluate_all("els => els.map(e => [e.name, e.value])")
    shown = _likert_shown(page)
    assert checked == [[f"rating-{shown[0]}", "5"], [f"rating-{shown[1]}", "2"]]
    assert page.locator("#progress").text_content() == "2 of 5 statements rated."
    _rate_all(page, ("Extremely important", "Slightly important", *("Very important",) * 3))
    page.locator("#submitButton").click()
    page.get_by_role("heading", name="Thank you!").wait_for()
    page.goto(_url(live_server, task, assignment="ASG2", worker="WORKER2"))  # stored: nothing kept for the next
    assert page.locator("fieldset.rating input:checked").count() == 0


def test_a_stale_second_tab_gets_a_way_forward(live_server, open_context):
    task = _task()
    url = _url(live_server, task)
    context = open_context()
    first, second = context.new_page(), context.new_page()
    first.goto(url)
    second.goto(url)
    _rate_all(first)
    first.locator("#submitButton").click()
    first.get_by_role("heading", name="Thank you!").wait_for()

    _rate_all(second, ("Not at all important",) * 5)  # another answer for the same assignment
    second.locator("#submitButton").click()

    status = second.locator("#submit-status")
    status.get_by_text("Not saved:").wait_for()
    assert "This page is out of date" in status.text_content()
    assert second.locator("#submitButton").is_hidden()
    second.locator("#reload-current").click()
    second.get_by_role("heading", name="You have already submitted this task").wait_for()
    assert Assignment.objects.count() == 1 and set(LikertLabel.objects.values_list("score", flat=True)) == {4}
    context.problems.console.clear()  # the refused store is logged by Chromium, on purpose here


def test_likert_can_be_answered_with_the_keyboard_alone(live_server, page):
    task = _task()
    page.goto(_url(live_server, task))
    page.keyboard.press("Tab")  # the instructions' summary
    for _ in range(5):
        page.keyboard.press("Tab")  # the first option of the next group
        page.keyboard.press("ArrowDown")  # radio groups move with the arrows: Very important
    assert page.locator("#submitButton").is_enabled()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "submitButton"
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Thank you!").wait_for()
    assert set(LikertLabel.objects.values_list("score", flat=True)) == {4}


def test_preview_cannot_submit(live_server, page):
    task = _task()
    page.goto(_url(live_server, task, assignment=PREVIEW_ASSIGNMENT_ID, worker=""))
    assert page.get_by_role("status").first.text_content().strip().startswith("Preview. Accept the HIT to start")
    assert page.locator("input[type=radio]:enabled").count() == 0
    assert page.locator("#submitButton").is_disabled()
    page.locator("#submitButton").click(force=True)  # a disabled button does nothing
    page.locator("form").evaluate("form => form.requestSubmit()")  # nor does a forced submit
    page.wait_for_load_state()
    assert "Accept the HIT to start" in page.content()
    assert not Assignment.objects.exists()


def test_double_submit_stores_one_assignment(live_server, page):
    task = _task()
    url = _url(live_server, task)
    page.goto(url)
    _rate_all(page)
    posts = []
    page.on("request", lambda request: request.method == "POST" and posts.append(request.resource_type))
    page.locator("#submitButton").dblclick()
    page.get_by_role("heading", name="Thank you!").wait_for()
    # One background store, then one form post once it is stored: the second click found
    # the answer already on its way.
    assert sorted(posts) == ["document", "fetch"]
    assert Assignment.objects.count() == 1 and LikertLabel.objects.count() == 5

    page.goto(url)  # the worker reloads the HIT
    page.get_by_role("heading", name="You have already submitted this task").wait_for()
    assert page.locator("#hit-form").count() == 0
    assert Assignment.objects.count() == 1


def test_blocked_worker_sees_no_task(live_server, page):
    task = _task()
    WorkerFactory(external_id="WORKER1", blocked=True)
    response = page.goto(_url(live_server, task))
    assert response.status == 200
    page.get_by_role("heading", name="This task is not available to you").wait_for()
    assert page.locator("form, fieldset, input").count() == 0


# --- comparison ---------------------------------------------------------------------------


def _submit_order(page):
    page.locator("#submitButton").click()
    page.get_by_role("heading", name="Thank you!").wait_for()
    return Assignment.objects.get()


def _stored_order(assignment) -> list[int]:
    wins = {}
    for winner, _ in Comparison.objects.filter(assignment=assignment).values_list("winner_id", "loser_id"):
        wins[winner] = wins.get(winner, 0) + 1
    ranked = sorted(wins, key=wins.get, reverse=True)
    everything = set(assignment.task.items.values_list("proposition_id", flat=True))
    return ranked + sorted(everything - set(ranked))  # the last item wins nothing


def test_mouse_drag_and_drop_stores_the_order_on_screen(live_server, page):
    task = _task(Batch.Kind.COMPARISON)
    page.goto(_url(live_server, task))
    initial = _shown_order(page)
    items = page.locator("#ranking .rank-item .rank-text")

    # Drag the last statement to the top, with real mouse events.
    source = items.nth(4).bounding_box()
    target = items.nth(0).bounding_box()
    page.mouse.move(source["x"] + 20, source["y"] + source["height"] / 2)
    page.mouse.down()
    page.mouse.move(source["x"] + 25, source["y"] + 5, steps=5)
    page.mouse.move(target["x"] + 20, target["y"] + 2, steps=20)
    page.mouse.up()
    # SortableJS animates for 150 ms; the hidden field changes when the drop is done.
    page.wait_for_function(f"document.querySelector('input[name=order]').value.startsWith('{initial[4]},')")

    shown = _shown_order(page)
    assert shown == [initial[4], *initial[:4]]
    assert page.locator("input[name=order]").input_value() == ",".join(map(str, shown))
    assignment = _submit_order(page)
    assert assignment.answer["order"] == shown and not assignment.untouched
    assert _stored_order(assignment) == shown and Comparison.objects.count() == 10


def test_touch_drag_reorders_on_a_phone(live_server, open_context):
    task = _task(Batch.Kind.COMPARISON)
    page = open_context(**PHONE).new_page()
    page.goto(_url(live_server, task))
    initial = _shown_order(page)
    source = page.locator("#ranking .rank-item .rank-text").nth(0).bounding_box()
    target = page.locator("#ranking .rank-item .rank-text").nth(2).bounding_box()
    cdp = page.context.new_cdp_session(page)

    def touch(kind, x, y):
        points = [] if kind == "touchEnd" else [{"x": x, "y": y}]
        cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": points})

    x, y = source["x"] + 20, source["y"] + source["height"] / 2
    touch("touchStart", x, y)
    page.wait_for_timeout(400)  # press and hold: SortableJS's touch delay
    end = target["y"] + target["height"] - 4
    for step in range(1, 21):
        touch("touchMove", x, y + (end - y) * step / 20)
        page.wait_for_timeout(16)
    touch("touchEnd", x, end)
    page.wait_for_timeout(300)

    shown = _shown_order(page)
    assert shown != initial and sorted(shown) == sorted(initial)
    assert shown.index(initial[0]) == 2
    assert _submit_order(page).answer["order"] == shown


def test_keyboard_only_reorder_stores_the_order_on_screen(live_server, page):
    task = _task(Batch.Kind.COMPARISON)
    page.goto(_url(live_server, task))
    initial = _shown_order(page)

    page.keyboard.press("Tab")  # the instructions' summary
    page.keyboard.press("Tab")  # the first statement
    assert page.evaluate("document.activeElement.dataset.id") == str(initial[0])
    page.keyboard.press("Alt+ArrowDown")
    page.keyboard.press("Alt+ArrowDown")
    assert page.evaluate("document.activeElement.dataset.id") == str(initial[0])  # focus follows the item
    assert page.locator("#announcer").text_content().startswith("Position 3 of 5:")
    page.keyboard.press("Alt+ArrowUp")

    # Then with a button: Tab to the Down button of the focused item and press Space.
    page.keyboard.press("Tab")  # its Up button
    page.keyboard.press("Tab")  # its Down button
    assert page.evaluate("document.activeElement.dataset.move") == "down"
    page.keyboard.press("Space")
    page.keyboard.press("Space")
    assert page.locator("#announcer").text_content().startswith("Position 4 of 5:")

    shown = _shown_order(page)
    assert shown == [initial[1], initial[2], initial[3], initial[0], initial[4]]
    while page.evaluate("document.activeElement.id") != "submitButton":
        page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Thank you!").wait_for()
    assert Assignment.objects.get().answer["order"] == shown


def test_untouched_order_is_submitted_and_flagged(live_server, page):
    task = _task(Batch.Kind.COMPARISON)
    page.goto(_url(live_server, task))
    assert _submit_order(page).untouched


def test_each_worker_starts_from_their_own_order_and_it_is_stored(live_server, page):
    cache.clear()
    ProcessCache.clear_all()  # pages cached under this fixed uuid by other tests
    task = _task(Batch.Kind.COMPARISON)
    # A fixed uuid pins each worker's order (crowd.hit_page.content.start_order): these two differ.
    Task.objects.filter(pk=task.pk).update(uuid=UUID("5a1e0ce0-0000-4000-8000-000000000001"))
    task.refresh_from_db()
    ids = [p.pk for p in ordered_propositions(task)]
    page.goto(_url(live_server, task, assignment="ASG2", worker="WORKER2"))
    assert _shown_order(page) == [ids[i] for i in (1, 0, 4, 3, 2)]
    page.goto(_url(live_server, task))
    shown = _shown_order(page)
    assert shown == [ids[i] for i in (4, 2, 1, 0, 3)]
    page.reload()
    assert _shown_order(page) == shown  # the same worker, the same order
    assert page.locator("input[name=order]").input_value() == ",".join(map(str, shown))

    assignment = _submit_order(page)

    assert assignment.shown_order == shown and assignment.untouched


def test_comparison_preview_cannot_move_or_submit(live_server, page):
    task = _task(Batch.Kind.COMPARISON)
    page.goto(_url(live_server, task, assignment=PREVIEW_ASSIGNMENT_ID))
    initial = _shown_order(page)
    assert page.locator("button.move:enabled").count() == 0
    first = page.locator("#ranking .rank-item").nth(0).bounding_box()
    page.mouse.move(first["x"] + 20, first["y"] + 10)
    page.mouse.down()
    page.mouse.move(first["x"] + 20, first["y"] + 300, steps=10)
    page.mouse.up()
    assert _shown_order(page) == initial and page.locator("#submitButton").is_disabled()


# --- inside MTurk's iframe ------------------------------------------------------------------


class _FakeMTurk:
    """A second origin: serves the parent page that frames the HIT, and records externalSubmit."""

    def __init__(self):
        self.frame_url = ""
        self.submissions: list[dict] = []
        self.received = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = f'<!doctype html><title>MTurk</title><iframe src="{owner.frame_url}" width="1000" height="800"></iframe>'
                self._send(body)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                owner.submissions.append({"path": self.path, **parse_qs(self.rfile.read(length).decode())})
                owner.received.set()
                self._send('<!doctype html><p id="done">HIT submitted</p>')

            def _send(self, body):
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_hit_loads_and_submits_inside_a_cross_origin_iframe(live_server, page, settings):
    task = _task()
    with _FakeMTurk() as mturk:
        assert mturk.origin.split(":")[:2] != live_server.url.split(":")[:2]  # another origin
        settings.HIT_FRAME_ANCESTORS = ["'self'", mturk.origin]
        mturk.frame_url = _url(live_server, task, submit_to=mturk.origin)
        page.goto(mturk.origin + "/")
        frame = page.frame_locator("iframe")
        _rate_all(frame)
        frame.locator("#submitButton").click()
        frame.locator("#done").wait_for()  # externalSubmit's answer, loaded in the frame itself

    assert Assignment.objects.count() == 1 and LikertLabel.objects.count() == 5
    [posted] = mturk.submissions
    assert posted["path"] == "/mturk/externalSubmit"
    assert posted["assignmentId"] == ["ASG1"] and posted["task"] == [str(task.uuid)]
    ratings = {name: value for name, value in posted.items() if name.startswith("rating-")}
    assert ratings == {f"rating-{p.pk}": ["4"] for p in ordered_propositions(task)}


def test_hit_refuses_to_be_framed_by_an_unknown_site(live_server, page, settings):
    task = _task()
    with _FakeMTurk() as stranger:
        settings.HIT_FRAME_ANCESTORS = ["'self'", "https://worker.mturk.com"]
        stranger.frame_url = _url(live_server, task)
        page.goto(stranger.origin + "/")
        page.wait_for_timeout(500)
        assert page.frame_locator("iframe").locator("#hit-form").count() == 0
    assert any("frame-ancestors" in message for message in page.context.problems.console)
    page.context.problems.console.clear()  # the refusal is what this test wants


# --- screenshots --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [Batch.Kind.LIKERT, Batch.Kind.COMPARISON])
def test_screenshots_desktop_and_phone(live_server, open_context, screenshot, kind):
    task = _task(kind)
    # 200 % zoom of a 1280 px wide window: 640 CSS pixels drawn at twice the density.
    zoom200 = {"viewport": {"width": 640, "height": 900}, "device_scale_factor": 2}
    for name, options in (("desktop", {}), ("phone", PHONE), ("zoom200", zoom200)):
        page = open_context(**options).new_page()
        page.goto(_url(live_server, task))
        if kind == Batch.Kind.LIKERT:
            _rate_all(page, ["Extremely important", "Very important", "Moderately important"])
        page.locator("details.instructions summary").click()
        path = screenshot(page, f"{kind}-{name}")
        assert path.stat().st_size > 10_000
        # Nothing overflows sideways: no horizontal scrolling at any width.
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    preview = open_context().new_page()
    preview.goto(_url(live_server, task, assignment=PREVIEW_ASSIGNMENT_ID))
    screenshot(preview, f"{kind}-preview")
