"""End to end: import → Likert round → QC → comparison batches → exported ranking, with the
local MTurk endpoint, the simulated crowd over HTTP, a real Celery worker (and beat) on
Redis, and PostgreSQL. The only manual step is the researcher publishing the Likert round."""

import io
import random
import time

import pytest

from annotation.campaigns import campaign_create
from annotation.importing.importers import propositions_import
from annotation.models import Campaign, Proposition, Topic
from crowd.models import HIT
from crowd.simulation.hits import crowd_simulate
from crowd.work.rounds import topic_publish
from ranking.export import ranking_rows
from ranking.stats import spearman

TIME_LIMIT = 300  # seconds; the run takes well under a minute on a 2-core machine


def _import_topic(campaign: Campaign, n: int, rng: random.Random) -> dict[int, float]:
    lines = ["topic\tsubject\trelation\tobject\tconfidence\tid"]
    truth = {}
    for index in range(n):
        truth[f"p{index}"] = rng.gauss(0, 1)
        lines.append(f"e2e\tstatement {index}\tis about\taspect {index} of the topic\t0.9\tp{index}")
    topics = io.BytesIO(b"key\tdescription\ne2e\tan end-to-end test topic\n")
    propositions_import(
        campaign=campaign,
        source=io.BytesIO(("\n".join(lines) + "\n").encode()),
        filename="e2e.tsv",
        topics_source=topics,
        topics_filename="topics.tsv",
    )
    ids = dict(Proposition.objects.filter(topic__campaign=campaign).values_list("external_id", "pk"))
    return {ids[key]: value for key, value in truth.items()}


@pytest.mark.e2e
@pytest.mark.mturk
def test_a_topic_goes_from_import_to_an_exported_ranking_without_manual_steps(celery_worker_process, live_server):
    campaign = campaign_create(
        slug="e2e",
        name="End to end",
        channel=Campaign.Channel.MTURK,
        environment=Campaign.Environment.LOCAL,
        status=Campaign.Status.ACTIVE,
        assignments_per_hit=3,
        top_k=15,
        batch_pairs=30,
        pair_budget_fraction=0.6,
        trap_rate=0.1,
    )
    latent = _import_topic(campaign, 60, random.Random(11))
    topic = campaign.topics.get()
    topic_publish(topic=topic, kind="likert")
    traps = list(Proposition.objects.filter(topic=topic).exclude(trap_kind="none").values_list("pk", flat=True))

    deadline = time.monotonic() + TIME_LIMIT
    rounds = 0
    while time.monotonic() < deadline:
        topic.refresh_from_db()
        if topic.state == Topic.State.DONE:
            break
        open_hits = list(HIT.objects.filter(task__batch__topic=topic, complete=False).values_list("hit_id", flat=True))
        crowd_simulate(
            localturk_url=f"{live_server.url}/localturk/",
            workers=12,
            spammers=0.0,
            trap_blind=0.0,
            seed=rounds,
            latent=latent,
            traps=traps,
            hit_ids=open_hits,
        )
        rounds += 1
        time.sleep(1)  # beat syncs every 2 s; the worker runs QC, advances and publishes
    assert topic.state == Topic.State.DONE, f"topic still {topic.state} after {rounds} rounds"
    assert topic.batches.filter(kind="comparison").count() >= 2
    assert topic.snapshots.count() >= 2

    rows = ranking_rows(topic=topic)
    compared = [row for row in rows if row["in_comparisons"]]
    assert len(rows) == 60 and len(compared) >= 15
    assert all(row["mu"] is not None for row in compared)
    whole = spearman({row["id"]: -row["rank"] for row in rows}, {row["id"]: latent[row["id"]] for row in rows})
    assert whole >= 0.8
    top = spearman({row["id"]: -row["rank"] for row in compared}, {row["id"]: latent[row["id"]] for row in compared})
    assert top > 0.3  # the shortlist spans a narrow band of the truth; its order must still follow it
