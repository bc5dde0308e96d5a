"""A simulated crowd for demos, tests and benchmarks, working only through HTTP.

Each worker does what a person does on the local endpoint's worker site: list the HITs
(`/localturk/worker/?format=json`), accept one (`/localturk/worker/accept/<HITId>/`), load
the HIT page at the URL MTurk would frame (with assignmentId, hitId, workerId,
turkSubmitTo), fill in the page's form — its hidden fields, signed token included — post it
to our `/hit/<uuid>/submit/`, then post the form that page returns to the local
`externalSubmit`. Nothing here touches the database.

Answers come from a latent importance per proposition: `latent[proposition id]` when given,
else a standard normal drawn from (seed, proposition id). Worker behaviours:

* diligent — Likert score round(3 + latent + noise), clamped to 1..5, with per-worker noise;
  traps rated 1 (not at all important); orderings by latent + noise (Thurstone's model).
* trap_blind — like diligent, but rates traps like any other statement.
* random_spammer — uniform scores, random orderings.
* constant_spammer — the same score for everything, orderings left as shown.

A worker does each HIT at most once. The run ends when no HIT of interest has an assignment
available (or no worker can take the ones left).

`seed` names the crowd: its workers' ids, behaviours and noise, and the latent importances it
draws; a demo that runs round after round keeps it, so the same 30 people come back, and
changes `round_number`, which only reshuffles who takes which HIT and each answer's noise.
"""

import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin

import requests

DILIGENT = "diligent"
TRAP_BLIND = "trap_blind"
RANDOM_SPAMMER = "random_spammer"
CONSTANT_SPAMMER = "constant_spammer"
RATING_PREFIX = "rating-"  # the HIT form's field names (crowd/hit_page/answers.py)
ORDER_FIELD = "order"
HIT_FORM_ID = "hit-form"
EXTERNAL_SUBMIT_FORM_ID = "external-submit"
TIMEOUT = 30  # seconds per request


class SimulationError(RuntimeError):
    pass


@dataclass(frozen=True)
class SimulatedWorker:
    worker_id: str
    behaviour: str
    noise: float  # standard deviation of the worker's judgement noise
    constant: int = 3  # the constant spammer's one score


@dataclass
class SimulationReport:
    submitted: int = 0
    refused: int = 0  # accepts the marketplace refused (no slot, already worked, blocked)
    turned_away: int = 0  # HIT pages that offered no form (blocked or excluded worker)
    rounds: int = 0
    by_behaviour: Counter = field(default_factory=Counter)


# ---- Judgements --------------------------------------------------------------------------


class Judge:
    """The answers of simulated workers, given latent importances and the traps."""

    def __init__(self, *, seed: int, latent: Mapping[int, float] | None = None, traps: Iterable[int] = ()):
        self.seed = seed
        self.latent = dict(latent or {})
        self.traps = frozenset(traps)

    def latent_of(self, proposition_id: int) -> float:
        if proposition_id not in self.latent:
            self.latent[proposition_id] = random.Random(f"{self.seed}:latent:{proposition_id}").gauss(0.0, 1.0)
        return self.latent[proposition_id]

    def likert(self, worker: SimulatedWorker, proposition_ids: list[int], rng: random.Random) -> dict[int, int]:
        if worker.behaviour == RANDOM_SPAMMER:
            return {pid: rng.randint(1, 5) for pid in proposition_ids}
        if worker.behaviour == CONSTANT_SPAMMER:
            return dict.fromkeys(proposition_ids, worker.constant)
        scores = {}
        for pid in proposition_ids:
            if pid in self.traps and worker.behaviour == DILIGENT:
                scores[pid] = 1
            else:
                scores[pid] = min(5, max(1, round(3 + self.latent_of(pid) + rng.gauss(0.0, worker.noise))))
        return scores

    def ordering(self, worker: SimulatedWorker, shown: list[int], rng: random.Random) -> list[int]:
        if worker.behaviour == RANDOM_SPAMMER:
            return rng.sample(shown, len(shown))
        if worker.behaviour == CONSTANT_SPAMMER:
            return list(shown)
        utility = {pid: self.latent_of(pid) + rng.gauss(0.0, worker.noise) for pid in shown}
        return sorted(shown, key=utility.__getitem__, reverse=True)


def crowd_make(*, workers: int, spammers: float, trap_blind: float, seed: int) -> list[SimulatedWorker]:
    """`workers` simulated workers; shares of spammers (half random, half constant) and trap-blind ones."""
    rng = random.Random(f"{seed}:crowd")
    n_spammers = round(workers * spammers)
    n_blind = min(workers - n_spammers, round(workers * trap_blind))
    behaviours = (
        [RANDOM_SPAMMER] * ((n_spammers + 1) // 2)
        + [CONSTANT_SPAMMER] * (n_spammers // 2)
        + [TRAP_BLIND] * n_blind
        + [DILIGENT] * (workers - n_spammers - n_blind)
    )
    rng.shuffle(behaviours)
    return [
        SimulatedWorker(
            worker_id=f"ASIM{abs(seed) % 10**6:06d}W{index:04d}",
            behaviour=behaviour,
            noise=rng.uniform(0.3, 0.9),
            constant=rng.randint(1, 5),
        )
        for index, behaviour in enumerate(behaviours)
    ]


# ---- HTML forms --------------------------------------------------------------------------


@dataclass
class Form:
    action: str
    hidden: list[tuple[str, str]] = field(default_factory=list)
    radios: dict[str, list[str]] = field(default_factory=dict)


class _FormParser(HTMLParser):
    """The forms of a page by id: action, hidden fields and radio groups."""

    def __init__(self):
        super().__init__()
        self.forms: dict[str, Form] = {}
        self._current: Form | None = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "form":
            self._current = Form(action=attributes.get("action") or "")
            self.forms[attributes.get("id") or f"form-{len(self.forms)}"] = self._current
        elif tag == "input" and self._current is not None and attributes.get("name"):
            kind = (attributes.get("type") or "text").lower()
            if kind == "radio":
                self._current.radios.setdefault(attributes["name"], []).append(attributes.get("value") or "")
            elif kind in ("hidden", "text"):
                self._current.hidden.append((attributes["name"], attributes.get("value") or ""))

    def handle_endtag(self, tag):
        if tag == "form":
            self._current = None


def forms_parse(html: str) -> dict[str, Form]:
    parser = _FormParser()
    parser.feed(html)
    parser.close()
    return parser.forms


def form_answer(judge: Judge, worker: SimulatedWorker, form: Form, rng: random.Random) -> list[tuple[str, str]]:
    """The worker's answer to a HIT form: a rating per statement, or an ordering."""
    rated = [int(name.removeprefix(RATING_PREFIX)) for name in form.radios if name.startswith(RATING_PREFIX)]
    if rated:
        scores = judge.likert(worker, rated, rng)
        return [(f"{RATING_PREFIX}{pid}", str(score)) for pid, score in scores.items()]
    shown = [int(pid) for pid in dict(form.hidden)[ORDER_FIELD].split(",")]
    return [(ORDER_FIELD, ",".join(str(pid) for pid in judge.ordering(worker, shown, rng)))]


def hit_form_fill(judge: Judge, worker: SimulatedWorker, form: Form, rng: random.Random) -> list[tuple[str, str]]:
    """The whole form to post: its hidden fields (signed token included) and the answer."""
    answer = form_answer(judge, worker, form, rng)
    answered = {name for name, _ in answer}
    return [(name, value) for name, value in form.hidden if name not in answered] + answer


# ---- Work over HTTP ----------------------------------------------------------------------


class CrowdSession:
    """The HTTP side: the local endpoint's worker site and our HIT pages."""

    def __init__(self, *, localturk_url: str, judge: Judge):
        self.localturk = localturk_url.rstrip("/")
        self.judge = judge
        self.http = requests.Session()

    def hits_available(self, worker_id: str) -> dict[str, int]:
        """The HITs the worker site lists for `worker_id` (those it has not worked on), with their free slots."""
        response = self.http.get(
            f"{self.localturk}/worker/", params={"workerId": worker_id, "format": "json"}, timeout=TIMEOUT
        )
        response.raise_for_status()
        return {hit["hitId"]: hit["available"] for hit in response.json()["hits"] if hit["available"] > 0}

    def work(self, worker: SimulatedWorker, hit_id: str, rng: random.Random) -> str:
        """Do one HIT: 'submitted', 'refused' (no slot for this worker) or 'turned_away'."""
        accepted = self.http.post(
            f"{self.localturk}/worker/accept/{hit_id}/",
            params={"format": "json"},
            data={"workerId": worker.worker_id},
            timeout=TIMEOUT,
        )
        if accepted.status_code in (403, 404, 409):
            return "refused"
        accepted.raise_for_status()
        assignment = accepted.json()
        page = self.http.get(assignment["url"], timeout=TIMEOUT)
        page.raise_for_status()
        form = forms_parse(page.text).get(HIT_FORM_ID)
        if form is None:
            self._return(worker, assignment["assignmentId"])
            return "turned_away"
        data = hit_form_fill(self.judge, worker, form, rng)
        stored = self.http.post(urljoin(page.url, form.action), data=data, timeout=TIMEOUT)
        if stored.status_code != 200:
            raise SimulationError(
                f"HIT {hit_id}: our page refused the answer ({stored.status_code}): {stored.text[:500]}"
            )
        external = forms_parse(stored.text).get(EXTERNAL_SUBMIT_FORM_ID)
        if external is None:
            raise SimulationError(f"HIT {hit_id}: the stored-answer page has no externalSubmit form")
        sent = self.http.post(
            urljoin(stored.url, external.action), params={"format": "json"}, data=external.hidden, timeout=TIMEOUT
        )
        if sent.status_code != 200:
            raise SimulationError(
                f"HIT {hit_id}: externalSubmit refused the answer ({sent.status_code}): {sent.text[:500]}"
            )
        return "submitted"

    def _return(self, worker: SimulatedWorker, assignment_id: str) -> None:
        self.http.post(
            f"{self.localturk}/worker/return/{assignment_id}/",
            params={"format": "json"},
            data={"workerId": worker.worker_id},
            timeout=TIMEOUT,
        ).raise_for_status()


def crowd_simulate(
    *,
    localturk_url: str,
    workers: int = 30,
    spammers: float = 0.1,
    trap_blind: float = 0.1,
    seed: int = 0,
    latent: Mapping[int, float] | None = None,
    traps: Iterable[int] = (),
    hit_ids: Iterable[str] | None = None,
    round_number: int = 0,
    on_submit: Callable[[SimulationReport], None] | None = None,
) -> SimulationReport:
    """Let a simulated crowd work until no HIT (of `hit_ids`, if given) has a free assignment;
    `on_submit` is told of every submitted answer."""
    if workers < 1:
        raise ValueError("A simulated crowd needs at least one worker.")
    crowd = crowd_make(workers=workers, spammers=spammers, trap_blind=trap_blind, seed=seed)
    session = CrowdSession(localturk_url=localturk_url, judge=Judge(seed=seed, latent=latent, traps=traps))
    wanted = set(hit_ids) if hit_ids is not None else None
    salt = round_salt(seed, round_number)
    rngs = {worker.worker_id: random.Random(f"{salt}:{worker.worker_id}") for worker in crowd}
    scheduler = random.Random(f"{salt}:schedule")
    # Nobody of the crowd: the site hides the HITs a worker did, and any HIT with a slot counts here.
    onlooker = f"ASIM{abs(seed) % 10**6:06d}ONLOOKER"
    tried: set[tuple[str, str]] = set()
    report = SimulationReport()
    while True:
        available = {
            hit_id: slots
            for hit_id, slots in session.hits_available(onlooker).items()
            if wanted is None or hit_id in wanted
        }
        if not available:
            break
        report.rounds += 1
        progress = False
        for hit_id in sorted(available):
            for _ in range(available[hit_id]):
                candidates = [worker for worker in crowd if (worker.worker_id, hit_id) not in tried]
                if not candidates:
                    break
                worker = scheduler.choice(candidates)
                tried.add((worker.worker_id, hit_id))
                outcome = session.work(worker, hit_id, rngs[worker.worker_id])
                if outcome == "submitted":
                    report.submitted += 1
                    report.by_behaviour[worker.behaviour] += 1
                    progress = True
                    if on_submit:
                        on_submit(report)
                elif outcome == "refused":
                    report.refused += 1
                else:
                    report.turned_away += 1
        if not progress:
            break
    return report


def round_salt(seed: int, round_number: int) -> str:
    """What seeds a round's schedule and answer noise; round 0 keeps the seed alone (as before rounds)."""
    return f"{seed}" if round_number == 0 else f"{seed}/{round_number}"
