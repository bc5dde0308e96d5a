"""Simulated workers over HTTP: each loads HIT pages, fills the form as a person would
(crowd/simulation/hits.py's Judge, on the form forms_read finds: forms_parse's result for
less CPU) and posts it, on its own keep-alive connection.

http.client rather than requests: the client shares the machine's cores with gunicorn and
PostgreSQL, and requests spends several times more CPU per request. Nothing here touches
the database.

Keep-alive as browsers do it: a connection the server closed while idle (gthread's
keep-alive timeout) is noticed before reuse, as urllib3 does; one the server closes just as
a request goes out on it (a race no client can avoid) fails before any byte of a response,
and the request is sent once more on a new connection, as browsers do for any method. A
POST sent twice that way is safe only because submissions are idempotent, which the audit
checks; every such resend is counted and reported.
"""

import html
import http.client
import json
import random
import re
import select
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from urllib.parse import urlencode

from crowd.simulation.hits import HIT_FORM_ID, RATING_PREFIX, Form, Judge, SimulatedWorker, hit_form_fill

TURK_SUBMIT_TO = "https://workersandbox.mturk.com"
REQUEST_TIMEOUT = 30  # seconds
STORED_MARK = 'id="external-submit"'  # the page that hands a stored answer on to MTurk
HTML = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
JSON = "application/json"
RETRY, RACE = "retry", "race"  # a duplicate sent after the answer came back, or at the same time
# No response at all on a kept connection: the server closed it as the request went out.
CLOSED_UNDER_REQUEST = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


# The tags forms_read reads, and their attributes as HTMLParser reads them.
FORM_TAG = re.compile(r"<(/?)(form|input)\b((?:[^>\"']|\"[^\"]*\"|'[^']*')*)>", re.IGNORECASE)
ATTRIBUTE = re.compile(r"""([^\s=/>]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?""")


def forms_read(page: str) -> dict[str, Form]:
    """crowd.simulation.hits.forms_parse of a page this benchmark loads, for a twentieth of
    the CPU: only <form> and <input> tags are read (tests/test_load_bench.py compares the two
    on the HIT pages). The client shares two cores with the server it measures, and
    HTMLParser over a whole HIT page had cost the client as much CPU as gunicorn spent
    serving it."""
    forms: dict[str, Form] = {}
    current: Form | None = None
    for match in FORM_TAG.finditer(page):
        closing, tag = match.group(1), match.group(2).lower()
        if tag == "form":
            if closing:
                current = None
                continue
            attributes = _attributes(match.group(3))
            current = Form(action=attributes.get("action") or "")
            forms[attributes.get("id") or f"form-{len(forms)}"] = current
        elif not closing and current is not None:
            attributes = _attributes(match.group(3))
            name = attributes.get("name")
            if not name:
                continue
            kind = (attributes.get("type") or "text").lower()
            if kind == "radio":
                current.radios.setdefault(name, []).append(attributes.get("value") or "")
            elif kind in ("hidden", "text"):
                current.hidden.append((name, attributes.get("value") or ""))
    return forms


def _attributes(text: str) -> dict[str, str | None]:
    """Attribute names lower-cased, values unescaped, None for a bare one, the last of a
    repeated name: HTMLParser's attributes as `dict(attrs)` makes them."""
    found: dict[str, str | None] = {}
    for match in ATTRIBUTE.finditer(text):
        name, *quoted = match.groups()
        value = next((part for part in quoted if part is not None), None)
        found[name.lower()] = None if value is None else html.unescape(value)
    return found


class TransportError(RuntimeError):
    pass


@dataclass(frozen=True)
class Job:
    """One HIT submission: `duplicate` says whether, and how, the same answer is sent twice."""

    task_uuid: str
    hit_id: str
    assignment_id: str
    duplicate: str = ""


@dataclass
class Outcome:
    job: Job
    worker_id: str
    scores: dict[int, int] = field(default_factory=dict)  # the answer sent
    acknowledged: bool = False  # a POST of it came back 200 with the stored-answer page
    duplicate_status: str = ""  # the reply to the duplicate: stored, already_stored, failed (not a 200)


@dataclass(frozen=True)
class Failure:
    kind: str  # trivial | page | submit | duplicate
    status: int  # 0: no response (connection error, timeout)
    detail: str


@dataclass
class Record:
    """What one worker saw in one phase."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))  # kind -> ms
    failures: list[Failure] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    resent: list[str] = field(default_factory=list)  # requests sent again after the server closed a kept connection

    def merge(self, other: "Record") -> None:
        for kind, values in other.latencies.items():
            self.latencies[kind].extend(values)
        self.failures += other.failures
        self.outcomes += other.outcomes
        self.resent += other.resent


class Connection:
    """One keep-alive HTTP/1.1 connection, as a browser or a proxy holds to the server."""

    def __init__(self, host: str, port: int):
        self._http = http.client.HTTPConnection(host, port, timeout=REQUEST_TIMEOUT)
        # What a TLS-terminating proxy adds: production settings redirect plain HTTP.
        self._headers = {"X-Forwarded-Proto": "https", "User-Agent": "salience-load-bench"}

    def request(self, method: str, path: str, *, accept: str, body: str | None = None) -> tuple[int, str, float, str]:
        """(status, body, milliseconds from sending to the last byte read, why it was sent
        again or "")."""
        headers = {**self._headers, "Accept": accept}
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if self._http.sock is not None and select.select([self._http.sock], [], [], 0)[0]:
            self._http.close()  # closed by the server while idle: readable at EOF
        reused, resent = self._http.sock is not None, ""
        start = time.perf_counter()
        while True:
            try:
                self._http.request(method, path, body=body, headers=headers)
                response = self._http.getresponse()
            except CLOSED_UNDER_REQUEST as error:
                self._http.close()
                if not reused or resent:
                    raise TransportError(f"{method} {path}: {type(error).__name__}: {error}") from error
                resent = f"{method} {path.split('?')[0]}: {type(error).__name__}"
                continue
            except (OSError, http.client.HTTPException) as error:
                self._http.close()
                raise TransportError(f"{method} {path}: {type(error).__name__}: {error}") from error
            try:
                text = response.read().decode("utf-8", errors="replace")
            except (OSError, http.client.HTTPException) as error:
                self._http.close()
                raise TransportError(f"{method} {path}: {type(error).__name__} in the response: {error}") from error
            return response.status, text, (time.perf_counter() - start) * 1000, resent

    def close(self) -> None:
        self._http.close()


class SimulatedClient:
    """One simulated worker; its methods run one phase's share of work on the calling thread."""

    def __init__(self, *, worker: SimulatedWorker, judge: Judge, host: str, port: int, seed: int):
        self.worker = worker
        self.judge = judge
        self.rng = random.Random(f"{seed}:{worker.worker_id}")
        self.connection = Connection(host, port)
        self.twin = Connection(host, port)  # a second tab, for answers sent twice at once
        self.prepared: list[tuple[str, str, Outcome]] = []  # filled-in forms waiting to be posted

    def close(self) -> None:
        self.connection.close()
        self.twin.close()

    def trivial(self, count: int, record: Record, stop: threading.Event) -> None:
        for _ in range(count):
            if stop.is_set():
                return
            self._call(record, "trivial", self.connection, "GET", "/trivial/", accept=HTML)

    def warm(self, jobs: list[Job], record: Record, stop: threading.Event) -> None:
        """Load pages without answering: fills each process's caches, writes nothing."""
        for job in jobs:
            if stop.is_set():
                return
            self._call(record, "warm-up", self.connection, "GET", self._page_path(job), accept=HTML)

    def pages(self, jobs: list[Job], record: Record, stop: threading.Event) -> None:
        """Load the pages of `jobs` and fill in their forms; `answers` posts them."""
        for job in jobs:
            if stop.is_set():
                return
            prepared = self._prepare(job, record)
            if prepared is not None:
                self.prepared.append(prepared)

    def answers(self, record: Record, stop: threading.Event) -> None:
        """Post every answer `pages` prepared, with the planned duplicates."""
        while self.prepared and not stop.is_set():
            self._post(self.prepared.pop(0), record)

    def _prepare(self, job: Job, record: Record) -> tuple[str, str, "Outcome"] | None:
        page = self._call(record, "page", self.connection, "GET", self._page_path(job), accept=HTML)
        if page is None:
            return None
        loaded = time.monotonic()
        form = forms_read(page).get(HIT_FORM_ID)
        if form is None or not dict(form.hidden).get("token"):
            record.failures.append(Failure("page", 200, f"{job.assignment_id}: no HIT form with a token"))
            return None
        fields = hit_form_fill(self.judge, self.worker, form, self.rng)
        elapsed = str(int((time.monotonic() - loaded) * 1000))
        fields = [(name, elapsed if name == "elapsed_ms" else value) for name, value in fields]
        rated = [(name[len(RATING_PREFIX) :], value) for name, value in fields if name.startswith(RATING_PREFIX)]
        outcome = Outcome(job, self.worker.worker_id, {int(pid): int(score) for pid, score in rated})
        return f"/hit/{job.task_uuid}/submit/", urlencode(fields), outcome

    def _post(self, prepared: tuple[str, str, "Outcome"], record: Record) -> None:
        path, body, outcome = prepared
        job = outcome.job
        twin, twin_record = None, Record()
        if job.duplicate == RACE:
            twin = threading.Thread(target=self._duplicate, args=(path, body, outcome, twin_record), daemon=True)
            twin.start()
        stored = self._call(record, "submit", self.connection, "POST", path, accept=HTML, body=body)
        if stored is not None:
            if STORED_MARK in stored:
                outcome.acknowledged = True
            else:
                record.failures.append(Failure("submit", 200, f"{job.assignment_id}: no stored-answer page"))
        if twin is not None:
            twin.join()
            record.merge(twin_record)
        elif job.duplicate == RETRY:
            self._duplicate(path, body, outcome, record)
        record.outcomes.append(outcome)

    def _duplicate(self, path: str, body: str, outcome: Outcome, record: Record) -> None:
        """The same answer again, asking for JSON so the reply says whether it was stored anew."""
        connection = self.twin if outcome.job.duplicate == RACE else self.connection
        reply = self._call(record, "duplicate", connection, "POST", path, accept=JSON, body=body)
        if reply is None:
            outcome.duplicate_status = "failed"
            return
        try:
            status = json.loads(reply).get("status", "?")
        except ValueError:
            status = "not JSON"
        outcome.duplicate_status = status
        if status in ("stored", "already_stored"):
            outcome.acknowledged = True

    def _page_path(self, job: Job) -> str:
        query = {
            "assignmentId": job.assignment_id,
            "hitId": job.hit_id,
            "workerId": self.worker.worker_id,
            "turkSubmitTo": TURK_SUBMIT_TO,
        }
        return f"/hit/{job.task_uuid}/?{urlencode(query)}"

    @staticmethod
    def _call(record: Record, kind: str, connection: Connection, method: str, path: str, **kwargs) -> str | None:
        """The body of a 200 response, its latency recorded; else None, the failure recorded."""
        try:
            status, text, ms, resent = connection.request(method, path, **kwargs)
        except TransportError as error:
            record.failures.append(Failure(kind, 0, str(error)))
            return None
        record.latencies[kind].append(ms)
        if resent:
            record.resent.append(resent)
        if status != 200:
            record.failures.append(Failure(kind, status, f"{method} {path}: {text[:300]!r}"))
            return None
        return text
