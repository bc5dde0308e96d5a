"""A simulated crowd on the session channels (participant links, Prolific), over HTTP only.

Each participant does what a person does: open the link (and type their code) or take the
Prolific study on the local Prolific endpoint, agree to the study's consent page if it has
one (again when the researcher changed its text), then, on the session page, load the framed
HIT page, fill in its form, post it, post the copy the page returns to the session, and
follow the session on to the next task, until the session ends with the channel's
completion step. Answers come from crowd.simulation.hits's Judge and worker behaviours, so the
same crowd gives the same labels on every channel. Nothing here touches the database.
"""

import random
import re
from collections.abc import Callable, Iterable, Mapping
from html import unescape
from typing import TypedDict, Unpack
from urllib.parse import urljoin

import requests

from crowd.simulation.hits import (
    EXTERNAL_SUBMIT_FORM_ID,
    HIT_FORM_ID,
    TIMEOUT,
    Judge,
    SimulatedWorker,
    SimulationError,
    SimulationReport,
    crowd_make,
    forms_parse,
    hit_form_fill,
    round_salt,
)

TASK_FRAME = re.compile(r'<iframe class="session-task" src="([^"]+)"')
NEXT_TASK = re.compile(r'id="session-next" data-next="([^"]+)"')
CONSENT_ACTION = "/consent/"  # the consent form posts to the session's consent address (crowd.channels.urls)
ASKED_TO_RETURN = "return the study"  # what our pages ask of a Prolific participant they have no task for


class Participant:
    """One simulated person with their own browser (cookies and all)."""

    def __init__(self, worker: SimulatedWorker, judge: Judge, rng: random.Random):
        self.worker = worker
        self.judge = judge
        self.rng = rng
        self.http = requests.Session()

    def link_start(self, link_url: str) -> requests.Response:
        """Open a participant link; on an open link, type the worker id as participant code."""
        page = self.http.get(link_url, timeout=TIMEOUT)
        page.raise_for_status()
        form = forms_parse(page.text).get("form-0")
        if form is None:
            raise SimulationError(f"{link_url}: the link page offers no start form ({page.status_code})")
        data = dict(form.hidden)
        if "code" in data:
            data["code"] = self.worker.worker_id
        return self.http.post(urljoin(page.url, form.action or page.url), data=data, timeout=TIMEOUT)

    def consent_give(self, response: requests.Response) -> requests.Response:
        """Agree on the consent page `response` shows (the page it leads to), or `response` itself."""
        for form in forms_parse(response.text).values() if response.status_code == 200 else ():
            if form.action.endswith(CONSENT_ACTION):
                data = [*form.hidden, ("agree", "yes")]
                return self.http.post(urljoin(response.url, form.action), data=data, timeout=TIMEOUT)
        return response

    def session_work(self, response: requests.Response) -> tuple[int, requests.Response]:
        """Work through the session whose page `response` is; the tasks submitted, and the
        last page (a thank-you page, the completion page, or a refusal)."""
        submitted = 0
        while True:
            response = self.consent_give(response)
            frame = TASK_FRAME.search(response.text) if response.status_code == 200 else None
            if frame is None:
                return submitted, response
            task_url = urljoin(response.url, unescape(frame.group(1)))
            page = self.http.get(task_url, timeout=TIMEOUT)
            form = forms_parse(page.text).get(HIT_FORM_ID)
            if form is None:
                return submitted, page  # turned away: blocked or excluded
            data = hit_form_fill(self.judge, self.worker, form, self.rng)
            stored = self.http.post(urljoin(page.url, form.action), data=data, timeout=TIMEOUT)
            external = forms_parse(stored.text).get(EXTERNAL_SUBMIT_FORM_ID) if stored.status_code == 200 else None
            if external is None:
                raise SimulationError(f"{task_url}: the answer was refused ({stored.status_code}): {stored.text[:300]}")
            copied = self.http.post(urljoin(stored.url, external.action), data=external.hidden, timeout=TIMEOUT)
            following = NEXT_TASK.search(copied.text) if copied.status_code == 200 else None
            if following is None:
                raise SimulationError(
                    f"the session refused the answer's copy ({copied.status_code}): {copied.text[:300]}"
                )
            submitted += 1
            response = self.http.get(urljoin(copied.url, unescape(following.group(1))), timeout=TIMEOUT)


class CrowdOptions(TypedDict, total=False):
    """Who the simulated crowd is (crowd.simulation.hits): `seed` names the people (the same
    every round), `round_number` reshuffles their order and answer noise, `latent` is the
    hidden truth they rate by (drawn from the seed where missing), `traps` the trap ids."""

    workers: int
    spammers: float
    trap_blind: float
    seed: int
    latent: Mapping[int, float] | None
    traps: Iterable[int]
    round_number: int


def _crowd(
    *,
    workers: int = 30,
    spammers: float = 0.1,
    trap_blind: float = 0.1,
    seed: int = 0,
    latent: Mapping[int, float] | None = None,
    traps: Iterable[int] = (),
    round_number: int = 0,
) -> tuple[list[Participant], random.Random]:
    """The crowd's participants, and the order in which they arrive."""
    crowd = crowd_make(workers=workers, spammers=spammers, trap_blind=trap_blind, seed=seed)
    judge = Judge(seed=seed, latent=latent, traps=traps)
    salt = round_salt(seed, round_number)
    participants = [Participant(worker, judge, random.Random(f"{salt}:{worker.worker_id}")) for worker in crowd]
    return participants, random.Random(f"{salt}:schedule")


def links_simulate(
    *,
    link_url: str,
    on_submit: Callable[[SimulationReport], None] | None = None,
    **options: Unpack[CrowdOptions],
) -> SimulationReport:
    """Everyone opens the same open link with their own code, session after session, until
    a whole round of sessions finds nothing left to do; `on_submit` is told after each session
    that submitted something."""
    crowd, scheduler = _crowd(**options)
    report = SimulationReport()
    while True:
        report.rounds += 1
        progress = 0
        for participant in scheduler.sample(crowd, len(crowd)):
            done, last = participant.session_work(participant.link_start(link_url))
            _tally(report, participant, done, last, on_submit)
            progress += done
        if not progress:
            return report


def prolific_simulate(
    *,
    start_participant: Callable[[requests.Session, str, str], str | None],
    study_ids: Iterable[str],
    on_submit: Callable[[SimulationReport], None] | None = None,
    return_study: Callable[[requests.Session, str], None] | None = None,
    **options: Unpack[CrowdOptions],
) -> SimulationReport:
    """Each participant takes each study once, while it has places: `start_participant(
    http, study_id, participant_id)` is the local Prolific endpoint's doing (it answers with
    the study URL, Prolific's ids filled in, or None when the study is full or closed). A
    participant whose last page asks them to return the study (turned away, or nothing left for
    them) does so with `return_study(http, study URL)`, which frees their place, as on Prolific.
    `on_submit` as in links_simulate."""
    crowd, scheduler = _crowd(**options)
    report = SimulationReport()
    for study_id in study_ids:
        report.rounds += 1
        for participant in scheduler.sample(crowd, len(crowd)):
            url = start_participant(participant.http, study_id, participant.worker.worker_id)
            if url is None:
                report.refused += 1
                continue
            done, last = participant.session_work(participant.http.get(url, timeout=TIMEOUT))
            _tally(report, participant, done, last, on_submit)
            if return_study is not None and ASKED_TO_RETURN in last.text:
                return_study(participant.http, url)
    return report


def _tally(
    report: SimulationReport,
    participant: Participant,
    done: int,
    last: requests.Response,
    on_submit: Callable[[SimulationReport], None] | None,
) -> None:
    report.submitted += done
    report.by_behaviour[participant.worker.behaviour] += done
    if last.status_code == 403:
        report.turned_away += 1
    if done and on_submit:
        on_submit(report)
