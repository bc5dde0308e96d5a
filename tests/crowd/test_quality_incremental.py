"""The incremental QC job (crowd.qc.likert_part, crowd.qc.worker_quality): a refresh that
keeps the Likert part stores what a recomputation from every label stores, as votes and
labels arrive, a label stops counting and an admin overrides; and a pass with no new Likert
label reads none."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from crowd.models import Assignment, LikertLabel, QualityStatistics, TopicVotes, WorkerDecision, WorkerQuality
from crowd.qc import likert_part, vote_part
from crowd.qc.worker_quality import (
    COMPUTED_FIELDS,
    LIKERT_READS,
    campaign_quality_recompute,
    campaign_quality_refresh,
    worker_quality_override,
)
from tests.concurrently import at_once
from tests.crowd.quality_data import TRUTH, three_topic_campaign
from tests.factories import (
    AssignmentFactory,
    BatchFactory,
    CampaignFactory,
    PropositionFactory,
    TaskFactory,
    TopicFactory,
)

pytestmark = pytest.mark.django_db

BEST_FIRST = sorted(TRUTH, key=TRUTH.get, reverse=True)[:5]  # five items, most important first


@pytest.fixture
def campaign():
    return three_topic_campaign()


def stored(campaign) -> tuple[list, dict]:
    """Every computed figure the job stores, but the time it ran; floats to 12 decimals: sums
    over labels in the order the database returns them may differ in the last bit."""
    fields = [name for name in COMPUTED_FIELDS if name != "computed_at"]
    workers = list(
        WorkerQuality.objects.filter(campaign=campaign).order_by("worker_id").values_list("worker_id", *fields)
    )
    statistics = {
        row.topic_id: (row.figures, row.workers, row.inputs_digest)
        for row in QualityStatistics.objects.filter(campaign=campaign)
    }
    return _rounded(workers), _rounded(statistics)


def _rounded(value):
    if isinstance(value, float):
        return round(value, 12)
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_rounded(item) for item in value)
    return value


def refresh_equals_recompute(campaign) -> set[int]:
    """Refresh, then recompute from every label: same excluded workers, same rows, same
    statistics, and no decision recorded by the recomputation."""
    excluded = campaign_quality_refresh(campaign_id=campaign.pk)
    incremental, decisions = stored(campaign), WorkerDecision.objects.filter(campaign=campaign).count()
    assert campaign_quality_recompute(campaign_id=campaign.pk) == excluded
    assert stored(campaign) == incremental
    assert WorkerDecision.objects.filter(campaign=campaign).count() == decisions
    return excluded


def label_reads(queries: CaptureQueriesContext) -> list[str]:
    """The statements that read Likert labels row by row (the watermark only sums them up)."""
    return [
        query["sql"]
        for query in queries.captured_queries
        if 'FROM "crowd_likertlabel"' in query["sql"] and not query["sql"].startswith("SELECT COUNT(")
    ]


def ids(campaign, *names) -> set[int]:
    workers = campaign.builders["loans"].workers | campaign.builders["bees"].workers
    return {workers[name].pk for name in names}


def test_the_incremental_refresh_stores_what_a_recomputation_stores(campaign):
    loans, bees = campaign.builders["loans"], campaign.builders["bees"]
    assert refresh_equals_recompute(campaign) == ids(campaign, "rev", "careless")

    # Votes arrive: g5, who rated Likert items, orders them against everyone else and is
    # excluded by agreement, so the costly statistics of its topics are recomputed.
    for worker in ("g1", "g2", "g3", "g4"):
        for _ in range(3):
            loans.ordering(worker, BEST_FIRST)
    for _ in range(3):
        loans.ordering("g5", BEST_FIRST[::-1])
    assert refresh_equals_recompute(campaign) == ids(campaign, "rev", "careless", "g5")

    # More votes that move no exclusion; then new Likert labels in another topic.
    for _ in range(3):
        loans.ordering("v1", BEST_FIRST)
    assert refresh_equals_recompute(campaign) == ids(campaign, "rev", "careless", "g5")
    bees.likert([("b9", f"bee-{item}", 6 - t) for item, t in TRUTH.items()])
    refresh_equals_recompute(campaign)
    assert WorkerQuality.objects.get(worker=bees.workers["b9"]).labels == 10

    # A label stops counting: rev's assignments are rejected, so rev no longer counts.
    Assignment.objects.filter(worker=loans.workers["rev"]).update(status=Assignment.Status.REJECTED)
    excluded = refresh_equals_recompute(campaign)
    assert loans.workers["rev"].pk not in excluded
    assert WorkerQuality.objects.get(worker=loans.workers["rev"]).labels == 0

    # An admin's override takes effect on the next refresh, whichever way it goes.
    for name, status in (("g1", "excluded"), ("careless", "ok")):
        worker_quality_override(
            campaign_id=campaign.pk, worker_id=ids(campaign, name).pop(), status=status, reason="By hand.", user=None
        )
    excluded = refresh_equals_recompute(campaign)
    assert ids(campaign, "g1") <= excluded and not ids(campaign, "careless") & excluded
    loans_figures = QualityStatistics.objects.get(campaign=campaign, topic=loans.topic).figures
    assert loans_figures["excluded_labels"] == 24  # g1's 12 and g5's 12; rev's count no longer


def test_a_pass_without_new_likert_labels_reads_none(campaign):
    loans = campaign.builders["loans"]
    with CaptureQueriesContext(connection) as first:
        campaign_quality_refresh(campaign_id=campaign.pk)
    assert len(label_reads(first)) == 1
    for worker in ("g1", "g2", "g3", "v1"):
        for _ in range(3):
            loans.ordering(worker, BEST_FIRST)

    with CaptureQueriesContext(connection) as comparison_pass:
        excluded = campaign_quality_refresh(campaign_id=campaign.pk)

    assert label_reads(comparison_pass) == []
    assert len(comparison_pass) < len(first)
    assert excluded == ids(campaign, "rev", "careless")
    v1 = WorkerQuality.objects.get(worker=loans.workers["v1"])
    assert (v1.votes, v1.comparison_agreement, v1.labels) == (30, 1.0, 0)
    g1 = WorkerQuality.objects.get(worker=loans.workers["g1"])
    assert (g1.labels, g1.loo_r, g1.votes) == (12, pytest.approx(1.0), 30)

    # A new label is seen at once, by the watermark, without a label read to find it.
    loans.likert([("g1", "i0", 1)])
    with CaptureQueriesContext(connection) as likert_pass:
        campaign_quality_refresh(campaign_id=campaign.pk)
    assert len(label_reads(likert_pass)) == 1
    assert WorkerQuality.objects.get(worker=loans.workers["g1"]).labels == 13


def test_an_events_qc_reads_the_stored_likert_part_without_its_scopes(campaign):
    """The event path's QC (no report statistics) reads of the stored Likert part what the
    workers' figures need, not the scopes the statistics take (most of it at 30 topics), and
    stores the same worker rows as a refresh that reads it whole."""
    loans = campaign.builders["loans"]
    campaign_quality_refresh(campaign_id=campaign.pk)  # the part stored, scopes and all
    for worker in ("g1", "g2", "g3", "v1"):
        for _ in range(3):
            loans.ordering(worker, BEST_FIRST)

    with CaptureQueriesContext(connection) as event:
        excluded = campaign_quality_refresh(campaign_id=campaign.pk, statistics=False)

    part_reads = [query["sql"] for query in event.captured_queries if '"likert_part"' in query["sql"]]
    assert part_reads and all("'scopes'" not in sql and "'workers'" in sql for sql in part_reads), part_reads
    assert not [sql for sql in part_reads if re.search(r'"likert_part"\s*(,|FROM)', sql)]  # never the whole part
    workers = stored(campaign)[0]
    assert campaign_quality_refresh(campaign_id=campaign.pk) == excluded == ids(campaign, "rev", "careless")
    assert stored(campaign)[0] == workers
    with pytest.raises(ValueError):  # a part read without its scopes is never stored
        likert_part._stored(campaign.pk, scopes=False).as_json()


def event_equals_recompute(campaign) -> set[int]:
    """An event's refresh (no report statistics: the topics' vote sums kept), then a
    recomputation from every label and vote: the same excluded workers and worker rows."""
    excluded = campaign_quality_refresh(campaign_id=campaign.pk, likert_current=False, statistics=False)
    workers = stored(campaign)[0]
    assert campaign_quality_recompute(campaign_id=campaign.pk) == excluded
    assert stored(campaign)[0] == workers
    return excluded


def test_an_events_qc_reads_the_votes_of_the_topics_whose_votes_changed(campaign, monkeypatch):
    """A worker's vote figures are sums over pairs, and a pair is in one topic: an event reads
    the votes of the topics that changed since their sums were stored, not the campaign's, and
    stores what the full computation stores, as votes arrive, stop counting, and exclusions
    change what rule 4 weighs."""
    loans, bees = campaign.builders["loans"], campaign.builders["bees"]
    bee_items = [f"bee-{item}" for item in BEST_FIRST]
    read: list[list[int]] = []  # the topics whose votes each read asked for
    by_topic = vote_part.counted_votes_by_topic

    def recorded(*, campaign_id, topic_ids):
        if topic_ids:
            read.append(sorted(topic_ids))
        return by_topic(campaign_id=campaign_id, topic_ids=topic_ids)

    monkeypatch.setattr(vote_part, "counted_votes_by_topic", recorded)
    for worker in ("g1", "g2", "g3"):
        for _ in range(3):
            loans.ordering(worker, BEST_FIRST)
    for worker in ("b0", "b1", "b2"):
        bees.ordering(worker, bee_items)
    assert event_equals_recompute(campaign) == ids(campaign, "rev", "careless")
    assert read == [sorted([loans.topic.pk, bees.topic.pk])]  # the first run sums every topic

    read.clear()
    bees.ordering("b0", bee_items)
    bees.ordering("b3", bee_items[::-1])
    event_equals_recompute(campaign)
    assert read == [[bees.topic.pk]]  # loans' votes did not change: its sums are kept

    read.clear()
    event_equals_recompute(campaign)
    assert read == []  # nothing changed: no vote read

    # g5 orders against everyone in loans, three times: excluded by agreement (rule 4).
    for _ in range(3):
        loans.ordering("g5", BEST_FIRST[::-1])
    read.clear()
    assert event_equals_recompute(campaign) == ids(campaign, "rev", "careless", "g5")
    assert read == [[loans.topic.pk]]

    # A vote stops counting: g5's orderings are rejected, in one topic only.
    Assignment.objects.filter(worker=loans.workers["g5"], task__kind="comparison").update(
        status=Assignment.Status.REJECTED
    )
    read.clear()
    assert event_equals_recompute(campaign) == ids(campaign, "rev", "careless")
    assert read == [[loans.topic.pk]]

    # Rule 1 now excludes b3 (failed traps, bees' own Likert labels): rule 4 weighs bees' votes
    # without b3's, so bees' kept sums are summed again from its votes, unchanged as they are.
    bees.likert([("b3", "trap-a", 5), ("b3", "trap-b", 5)], {"trap-a": "obvious", "trap-b": "obvious"})
    read.clear()
    excluded = campaign_quality_refresh(campaign_id=campaign.pk, statistics=False)
    assert bees.workers["b3"].pk in excluded
    assert read == [[bees.topic.pk]]
    event_equals_recompute(campaign)

    # Every vote of bees stops counting: its sums are forgotten, nothing of it is read.
    Assignment.objects.filter(task__batch__topic=bees.topic, task__kind="comparison").update(
        status=Assignment.Status.REJECTED
    )
    read.clear()
    event_equals_recompute(campaign)
    assert read == [] and list(TopicVotes.objects.values_list("topic_id", flat=True)) == [loans.topic.pk]


def test_a_run_writes_the_rows_whose_figures_changed_and_stamps_every_row(campaign, monkeypatch):
    """Approvals wait for a QC run newer than the answer (WorkerQuality.computed_at), so every
    row carries the run's time; only the rows whose figures changed are written again."""
    loans = campaign.builders["loans"]
    campaign_quality_refresh(campaign_id=campaign.pk)
    before = timezone.now()
    for _ in range(3):
        loans.ordering("g1", BEST_FIRST)
    written: list[int] = []
    bulk_create = WorkerQuality.objects.bulk_create
    monkeypatch.setattr(
        WorkerQuality.objects,
        "bulk_create",
        lambda rows, **kw: written.extend(r.worker_id for r in rows) or bulk_create(rows, **kw),
    )

    campaign_quality_refresh(campaign_id=campaign.pk, statistics=False)

    assert written == [loans.workers["g1"].pk]  # nobody else's figures moved
    rows = WorkerQuality.objects.filter(campaign=campaign)
    assert rows.count() > 1 and not rows.filter(computed_at__lt=before).exists()
    assert rows.get(worker=loans.workers["g1"]).votes == 30
    workers = stored(campaign)[0]
    campaign_quality_recompute(campaign_id=campaign.pk)
    assert stored(campaign)[0] == workers


def test_qc_over_a_streaming_likert_round_reads_labels_linear_in_them(monkeypatch, client, django_user_model):
    """While labels stream in, a refresh keeps the Likert part until the labels double: the
    labels QC reads over the round stay under twice the round's (a refresh that read every
    label each pass would read 5 · (1 + 2 + … + 40) = 4,100 here); a refresh that must be
    current equals a recomputation, and the quality page says when the figures were computed."""
    monkeypatch.setattr(likert_part, "KEPT_MIN_LABELS", 10)
    owner = django_user_model.objects.create_user("qc-owner", password="pw")
    campaign = CampaignFactory(owner=owner, trap_rate=0)
    topic = TopicFactory(campaign=campaign)
    propositions = PropositionFactory.create_batch(5, topic=topic)
    task = TaskFactory(batch=BatchFactory(topic=topic), propositions=propositions)
    before, labels = LIKERT_READS.labels, 0
    for answer in range(40):
        assignment = AssignmentFactory(task=task, verification=Assignment.Verification.VERIFIED)
        LikertLabel.objects.bulk_create(
            LikertLabel(assignment=assignment, worker=assignment.worker, proposition=item, score=1 + (answer + i) % 5)
            for i, item in enumerate(propositions)
        )
        labels += 5
        campaign_quality_refresh(campaign_id=campaign.pk, likert_current=False)

    assert labels <= LIKERT_READS.labels - before <= 2 * labels
    part = likert_part._stored(campaign.pk)
    assert part is not None and part.labels < labels  # kept: as of an earlier pass
    kept_at = WorkerQuality.objects.filter(campaign=campaign).latest("computed_at").computed_at
    assert kept_at == part.computed_at  # approvals wait for a run that saw the new labels
    client.force_login(owner)
    with CaptureQueriesContext(connection) as served:
        page = client.get(reverse("crowd:campaign-quality", args=[campaign.slug])).content.decode()
    assert f"from {part.labels} of the {labels} counted Likert labels" in page, page
    # The page says so from what the job stored: it counts no label (180 ms at 275,000 labels).
    assert not [query for query in served.captured_queries if '"crowd_likertlabel"' in query["sql"]]

    refresh_equals_recompute_current(campaign)


def refresh_equals_recompute_current(campaign) -> None:
    excluded = campaign_quality_refresh(campaign_id=campaign.pk, likert_current=True)
    assert (
        likert_part._stored(campaign.pk).labels
        == LikertLabel.objects.filter(proposition__topic__campaign=campaign).count()
    )
    incremental = stored(campaign)
    assert campaign_quality_recompute(campaign_id=campaign.pk) == excluded
    assert stored(campaign) == incremental


@pytest.mark.django_db(transaction=True)
def test_refreshes_queued_on_the_campaign_read_new_likert_labels_once():
    """Three topics' Likert rounds that end together queue three current refreshes on the
    campaign's lock: the first reads the new labels and stores the Likert part before it lets
    go, so the two behind it keep that part and read none (before, the part was stored after
    the lock went, and each read every label again)."""
    campaign = three_topic_campaign()
    campaign_quality_refresh(campaign_id=campaign.pk)  # the campaign's statistics row exists
    campaign.builders["bees"].likert([("b9", f"bee-{item}", 6 - t) for item, t in TRUTH.items()])
    counted = LikertLabel.objects.filter(proposition__topic__campaign=campaign).count()
    before = LIKERT_READS.labels

    results, errors = at_once([lambda: campaign_quality_refresh(campaign_id=campaign.pk)] * 3)

    assert errors == [] and len(results) == 3
    assert results[0] == results[1] == results[2]
    assert counted <= LIKERT_READS.labels - before < 2 * counted
    assert likert_part._stored(campaign.pk).labels == counted
