"""The demo on a session channel: the `make demo CHANNEL=prolific|links` job.

The same campaign as `make demo` (ranking/demo.py: the shipped sample, the simulated
crowd's hidden truth), but recruited through Prolific (the local Prolific-compatible
endpoint) or participant links. Each round the simulated participants work through
sessions over HTTP; then one pass of the loop (ranking.workflow) counts the answers, runs
quality control, approves Prolific submissions, advances every topic and publishes its next
batch — until every topic is done.
"""

from collections.abc import Callable
from typing import TypedDict
from urllib.parse import parse_qs, urlsplit

import requests

from annotation.campaigns import campaign_update
from annotation.models import Campaign, Proposition, Topic
from crowd.channels.links import links
from crowd.channels.prolific import raises
from crowd.channels.settings import channel_set
from crowd.models import Study
from crowd.simulation.hits import SimulationReport
from crowd.simulation.sessions import links_simulate, prolific_simulate
from ranking.demo import DemoReport, RoundProgress, answers_reporter, topic_statuses
from ranking.workflow import loop_run, topic_round_publish

MAX_IDLE_ROUNDS = 3


class _Crowd(TypedDict):
    """The simulated crowd of one round, as links_simulate and prolific_simulate take it."""

    workers: int
    spammers: float
    seed: int  # the crowd: the same people every round
    round_number: int  # what reshuffles their order and noise
    latent: dict[int, float]
    traps: list[int]
    on_submit: Callable[[SimulationReport], None] | None


def local_prolific_starter(base_url: str):
    """Start a participant on a study of the local Prolific endpoint; the study URL or None."""

    def start(http: requests.Session, study_id: str, participant_id: str) -> str | None:
        response = http.post(
            f"{base_url}/localprolific/_control/studies/{study_id}/participants",
            json={"participant_id": participant_id},
            timeout=30,
        )
        if response.status_code in (400, 404, 409):
            return None  # full, closed, or taken before
        response.raise_for_status()
        return response.json()["url"]

    return start


def local_prolific_returner(base_url: str):
    """Return a participant's submission on the local Prolific endpoint, as the participant
    would on Prolific when our page asks them to; the study URL names it (its SESSION_ID)."""

    def give_back(http: requests.Session, study_url: str) -> None:
        [submission_id] = parse_qs(urlsplit(study_url).query)["SESSION_ID"]
        http.post(f"{base_url}/localprolific/_control/submissions/{submission_id}/return", timeout=30)

    return give_back


def channel_demo_run(
    *,
    campaign: Campaign,
    channel: str,
    latent: dict[int, float],
    base_url: str,
    workers: int = 30,
    spammers: float = 0.1,
    seed: int = 2017,
    on_round: Callable[[DemoReport], None] | None = None,
    on_answers: Callable[[RoundProgress], None] | None = None,
) -> DemoReport:
    """As ranking.demo.demo_run, on a session channel."""
    channel_set(campaign=campaign, channel=channel, environment=Campaign.Environment.LOCAL)
    if channel == "prolific":
        # Prolific pays at least its hourly minimum: 10 tasks of ~45 s for $1.20 is $9.60 an hour.
        campaign_update(
            campaign_id=campaign.pk,
            changes={"likert_reward": "0.12", "comparison_reward": "0.12", "budget_cap": "400.00"},
        )
        campaign.refresh_from_db()
    link = links.link_create(campaign=campaign, kind="open", label="demo crowd") if channel == "links" else None
    for topic in campaign.topics.order_by("key"):
        topic_round_publish(topic=topic, kind="likert")
    traps = list(
        Proposition.objects.filter(topic__campaign=campaign).exclude(trap_kind="none").values_list("pk", flat=True)
    )
    report, idle = DemoReport(), 0
    while idle < MAX_IDLE_ROUNDS and campaign.topics.exclude(state=Topic.State.DONE).exists():
        crowd: _Crowd = {
            "workers": workers,
            "spammers": spammers,
            "seed": seed,
            "round_number": report.rounds,
            "latent": latent,
            "traps": traps,
            "on_submit": answers_reporter(campaign, on_answers),
        }
        if link is not None:
            work = links_simulate(link_url=links.link_url(link), **crowd)
        else:
            # Every study still open: Prolific turns away whoever took it before, and a full one.
            studies = Study.objects.of_campaign(campaign).filter(batch_links__batch__status="published").distinct()
            open_ids = list(studies.exclude(study_id="").values_list("study_id", flat=True))
            work = prolific_simulate(
                start_participant=local_prolific_starter(base_url),
                return_study=local_prolific_returner(base_url),
                study_ids=open_ids,
                **crowd,
            )
        loop_run()
        if channel == "prolific":
            # The demo's researcher says yes to every raise of places the loop asks for (a real
            # one reads its reason on the campaign page first); the next pass raises them.
            for raise_id in raises.raises_pending(campaign=campaign):
                raises.raise_approve(campaign=campaign, raise_id=raise_id, by=campaign.owner)
        report.rounds += 1
        report.submitted += work.submitted
        report.statuses = topic_statuses(campaign)
        idle = idle + 1 if work.submitted == 0 else 0
        if on_round:
            on_round(report)
    loop_run()  # the last round's answers were reviewed after its sync: approve them now
    return report
