"""A whole campaign on the embedded default, in one process: the `make demo` job.

The shipped sample (samples/demo: two topics of ~150 propositions, subtle traps, and a
latent importance per proposition that only the simulated crowd knows) is imported into a
fresh campaign on the local MTurk endpoint. A web server thread serves the HIT pages and
the endpoint; the simulated crowd works through them over HTTP exactly as people would;
each round ends with one pass of the loop (ranking.workflow: sync, quality control, every
topic advanced, its next comparison batch published) — until every topic
is done.
"""

import csv
import errno
import io
import math
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from django.conf import settings
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler, get_internal_wsgi_application
from django.db import transaction
from django.db.models import Sum

from annotation.campaigns import campaign_create
from annotation.importing.importers import propositions_import
from annotation.models import Batch, Campaign, Proposition, Task, Topic
from config.errors import ApplicationError
from crowd.channels.links import links
from crowd.models import HIT, Assignment
from crowd.simulation.hits import SimulationReport, crowd_simulate
from ranking import stats
from ranking.export import ranking_rows
from ranking.models import RankingSnapshot
from ranking.workflow import loop_run, topic_round_publish

SAMPLES = Path(settings.BASE_DIR) / "samples" / "demo"
MAX_IDLE_ROUNDS = 3


@dataclass
class TopicStatus:
    key: str
    state: str
    batches_done: int
    batches_expected: int
    last_spearman: float | None


@dataclass
class DemoReport:
    rounds: int = 0
    submitted: int = 0
    statuses: list[TopicStatus] = field(default_factory=list)


@dataclass(frozen=True)
class RoundProgress:
    """How far the crowd is through one round: `answers` of the `expected` it still lacked."""

    what: str  # "Likert round", "comparison batch 3"
    answers: int
    expected: int


def round_work(campaign: Campaign) -> tuple[str, int]:
    """What the campaign's published batches are, and how many answers they still lack."""
    batches = Batch.objects.filter(topic__campaign=campaign, status=Batch.Status.PUBLISHED)
    numbers = sorted(set(batches.filter(kind=Batch.Kind.COMPARISON).values_list("number", flat=True)))
    if batches.filter(kind=Batch.Kind.LIKERT).exists():
        what = "Likert round"
    else:
        what = "comparison batch " + "/".join(str(number) for number in numbers) if numbers else "no batch"
    tasks = Task.objects.filter(batch__in=batches, hit__isnull=False)
    needed = tasks.aggregate(n=Sum("assignments_needed"))["n"] or 0
    return what, max(0, needed - Assignment.objects.filter(task__in=tasks).count())


def answers_reporter(
    campaign: Campaign, on_answers: Callable[[RoundProgress], None] | None
) -> Callable[[SimulationReport], None] | None:
    """The simulated crowd's `on_submit` for one round: `on_answers` with the round's figures."""
    if on_answers is None:
        return None
    what, expected = round_work(campaign)
    return lambda work: on_answers(RoundProgress(what, work.submitted, expected))


class _QuietHandler(WSGIRequestHandler):
    def setup(self):
        super().setup()
        # The server writes headers and body separately; without this, Nagle's algorithm
        # holds the body until the client's delayed ACK, ~40 ms on every response.
        cast(socket.socket, self.connection).setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format, *args):
        pass


class PortBusy(ApplicationError):
    code = "port_busy"


def server_start(port: int, *, name: str = "demo-server", host: str = "127.0.0.1") -> ThreadedWSGIServer:
    """Serve the project on `host`:`port` (loopback unless told) from a daemon thread;
    PortBusy when something else listens there already."""
    try:
        server = ThreadedWSGIServer((host, port), _QuietHandler, ipv6=":" in host)
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            raise
        raise PortBusy(
            f"Port {port} is in use: another `make serve` or `make demo`, or another program, listens on "
            f"{host}:{port}. Stop it, or choose another port: PORT={port + 1} (make serve PORT={port + 1}, "
            f"make demo PORT={port + 1})."
        ) from None
    server.set_app(get_internal_wsgi_application())
    threading.Thread(target=server.serve_forever, name=name, daemon=True).start()
    return server


@transaction.atomic
def demo_campaign_create(
    *, owner, channel: str, slug: str = "demo", per_topic: int | None = None
) -> tuple[Campaign, dict[int, float]]:
    """A fresh demo campaign on `channel` from the shipped sample; returns it with the crowd's
    latent truth.

    `per_topic` keeps only the first N propositions of each topic (the quick variant).
    """
    Campaign.objects.filter(slug=slug).delete()
    options: dict[str, Any] = {
        "channel": channel,
        "environment": Campaign.Environment.LOCAL,
        "budget_cap": "200.00",
    }
    if per_topic:
        options.update(top_k=max(10, per_topic // 3), batch_pairs=20, pair_budget_fraction=0.5)
    campaign = campaign_create(
        slug=slug,
        name="Demo: composting and teenage sleep",
        owner=owner,
        description="The shipped sample, worked by a simulated crowd.",
        **options,
    )
    rows = _sample_rows(per_topic)
    with (SAMPLES / "topics.tsv").open("rb") as topics:
        propositions_import(
            campaign=campaign,
            source=_tsv_bytes(rows),
            filename="propositions.tsv",
            topics_source=topics,
            topics_filename="topics.tsv",
            user=owner,
        )
    with (SAMPLES / "subtle_traps.tsv").open("rb") as traps:
        propositions_import(
            campaign=campaign, source=traps, filename="subtle_traps.tsv", trap_kind="subtle", user=owner
        )
    importance = {row["id"]: float(row["importance"]) for row in rows}
    latent = {
        pid: (importance[external_id] - 0.5) * 4  # the crowd's scale: Likert ≈ 3 + latent
        for pid, external_id in Proposition.objects.filter(
            topic__campaign=campaign, external_id__in=importance
        ).values_list("pk", "external_id")
    }
    return campaign, latent


TRYOUT_CONSENT = """This is a rehearsal of a study, run on your own machine by `make demo`.

You will read a few short statements about a topic and rate how important each one is for learning about it. Nothing you enter leaves this computer; your answers are stored in the demo's database (var/demo.sqlite3) together with the time you agreed to this page.

A real study would say here who runs it, what it is for, what is recorded and for how long, that taking part is voluntary and can be stopped at any time, and whom to contact."""


@transaction.atomic
def tryout_link_create(*, owner, slug: str = "demo-try", tasks: int = 3) -> str:
    """A small campaign on participant links for a newcomer to try in a browser: `tasks` Likert
    HITs of the sample's first topic, a consent page, one personal link. Its URL."""
    Campaign.objects.filter(slug=slug).delete()
    campaign = campaign_create(
        slug=slug,
        name="Try it yourself: a participant session",
        owner=owner,
        description="A few Likert HITs of the shipped sample, for a person to try; not part of the demo's ranking.",
        channel=Campaign.Channel.LINKS,
        tasks_per_session=tasks,
        assignments_per_hit=1,
        trap_rate=0,
        consent_text=TRYOUT_CONSENT,
    )
    first_topic = _sample_rows(None)[0]["topic"]
    rows = [row for row in _sample_rows(None) if row["topic"] == first_topic][: tasks * campaign.likert_group_size]
    with (SAMPLES / "topics.tsv").open(encoding="utf-8") as handle:
        topics = [row for row in csv.DictReader(handle, delimiter="\t") if row["key"] == first_topic]
    propositions_import(
        campaign=campaign,
        source=_tsv_bytes(rows),
        filename="propositions.tsv",
        topics_source=_tsv_bytes(topics),
        topics_filename="topics.tsv",
        user=owner,
    )
    topic_round_publish(topic=campaign.topics.get(key=first_topic), kind="likert")
    return links.link_url(links.link_create(campaign=campaign, label="you (make demo)"))


def _sample_rows(per_topic: int | None) -> list[dict]:
    with (SAMPLES / "propositions.tsv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    if not per_topic:
        return rows
    kept: list[dict[str, str]] = []
    seen: dict[str, int] = {}
    for row in rows:
        seen[row["topic"]] = seen.get(row["topic"], 0) + 1
        if seen[row["topic"]] <= per_topic:
            kept.append(row)
    return kept


def _tsv_bytes(rows: list[dict]) -> io.BytesIO:
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(rows[0]), delimiter="\t", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return io.BytesIO(text.getvalue().encode("utf-8"))


def demo_run(
    *,
    campaign: Campaign,
    latent: dict[int, float],
    localturk_url: str,
    workers: int = 30,
    spammers: float = 0.1,
    seed: int = 2017,
    on_round: Callable[[DemoReport], None] | None = None,
    on_answers: Callable[[RoundProgress], None] | None = None,
) -> DemoReport:
    """Publish the Likert rounds, then let the crowd work and sync until every topic is done.
    The same `workers` (the crowd of `seed`) come back every round; `on_answers` hears how
    far a round is, `on_round` how it ended."""
    for topic in campaign.topics.order_by("key"):
        topic_round_publish(topic=topic, kind="likert")
    traps = list(
        Proposition.objects.filter(topic__campaign=campaign).exclude(trap_kind="none").values_list("pk", flat=True)
    )
    report, idle = DemoReport(), 0
    while idle < MAX_IDLE_ROUNDS and not _all_done(campaign):
        open_hits = list(
            HIT.objects.filter(task__batch__topic__campaign=campaign, complete=False, deleted=False).values_list(
                "hit_id", flat=True
            )
        )
        work = crowd_simulate(
            localturk_url=localturk_url,
            workers=workers,
            spammers=spammers,
            seed=seed,
            round_number=report.rounds,
            latent=latent,
            traps=traps,
            hit_ids=open_hits,
            on_submit=answers_reporter(campaign, on_answers),
        )
        loop_run()
        report.rounds += 1
        report.submitted += work.submitted
        report.statuses = topic_statuses(campaign)
        idle = idle + 1 if work.submitted == 0 else 0
        if on_round:
            on_round(report)
    loop_run()  # the last round's answers were reviewed after its sync: approve them now
    return report


def _all_done(campaign: Campaign) -> bool:
    return not campaign.topics.exclude(state=Topic.State.DONE).exists()


def topic_statuses(campaign: Campaign) -> list[TopicStatus]:
    statuses = []
    for topic in campaign.topics.order_by("key"):
        done = topic.batches.filter(status="complete").count()
        items = topic.propositions.filter(score__in_comparisons=True).count() or campaign.top_k
        expected = 1 + math.ceil(campaign.pair_budget_fraction * items * (items - 1) / 2 / campaign.batch_pairs)
        snapshot = RankingSnapshot.objects.filter(topic=topic).order_by("-number").first()
        statuses.append(
            TopicStatus(
                topic.key, topic.state, done, max(expected, done), snapshot.spearman_previous if snapshot else None
            )
        )
    return statuses


def top_lines(campaign: Campaign, top: int = 10) -> list[str]:
    """The best propositions per topic, for the terminal."""
    lines = []
    for topic in campaign.topics.order_by("key"):
        lines.append(f"{topic.key}: {topic.description}")
        for row in ranking_rows(topic=topic, top=top):
            mu = (
                f"μ {row['mu']:5.1f} ± {row['sigma']:4.1f}" if row["mu"] is not None else f"Likert {row['likert_mean']}"
            )
            text = " – ".join(part for part in (row["subject"], row["relation"], row["object"]) if part)
            lines.append(f"  {row['rank']:2d}. {text}  ({mu})")
    return lines


def result_lines(campaign: Campaign, latent: dict[int, float]) -> list[str]:
    """The top 10 per topic, then each ranking's agreement with the crowd's hidden truth."""
    lines = top_lines(campaign)
    for key, rho in truth_agreement(campaign, latent).items():
        shown = "n/a" if rho is None else f"{rho:.3f}"
        lines.append(f"{key}: Spearman of the final ranking with the simulated crowd's hidden truth = {shown}")
    return lines


def demo_user():
    """The demo's superuser, demo / demo."""
    from django.contrib.auth import get_user_model

    user, _ = get_user_model().objects.get_or_create(username="demo", defaults={"is_staff": True, "is_superuser": True})
    user.set_password("demo")
    user.save()
    return user


def serve_until_interrupted(server: ThreadedWSGIServer, write: Callable[[str], None]) -> None:
    write("Serving; press Ctrl-C to stop.")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.shutdown()


def truth_agreement(campaign: Campaign, latent: dict[int, float]) -> dict[str, float | None]:
    """Per topic, Spearman between the exported ranking and the latent truth, over the
    propositions that went through the comparison rounds (what the ranking is for)."""
    result = {}
    for topic in campaign.topics.order_by("key"):
        rows = [row for row in ranking_rows(topic=topic) if row["in_comparisons"] and row["id"] in latent]
        result[topic.key] = stats.spearman(
            {row["id"]: -row["rank"] for row in rows}, {row["id"]: latent[row["id"]] for row in rows}
        )
    return result
