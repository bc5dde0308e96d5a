"""F3 (issue 15): formulas in exports. Hostile text in every field that reaches a download —
worker ids, assignment ids, proposition texts and ids, topic keys, override reasons, link
labels — is neutralised in every CSV meant for spreadsheets (a leading `'`), while the
machine formats (TSV, JSON Lines, the top-propositions file) keep the exact text and the numbers
(μ, σ, ranks, r) stay plain numbers everywhere."""

import csv
import io
import json
import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from annotation.models import Campaign
from crowd.channels.links import links
from crowd.models import Assignment, Comparison, LikertLabel, ParticipantLink, TaskHold, WorkSession
from ranking.models import PropositionScore
from tests.factories import (
    AssignmentFactory,
    CampaignFactory,
    PropositionFactory,
    TopicFactory,
    WorkerFactory,
    WorkerQualityFactory,
)

pytestmark = [pytest.mark.attacks, pytest.mark.django_db]

HOSTILE = [
    '=HYPERLINK("http://x","y")',
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1)",
    "\t=1+1",
    "\r=1+1",
]
# What makes Excel, LibreOffice Calc or Google Sheets read a cell as a formula.
TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
# URL-safe, and still a formula (= -5) once a spreadsheet opens the file.
TOPIC_KEY = "-2-3"
MUS = [-1.5, -2.0, 3.25, -0.5, 1.0, 0.0]


def neutralised(text: str) -> str:
    return "'" + text


@pytest.fixture
def campaign(owner):
    return CampaignFactory(owner=owner, slug="hostile")


@pytest.fixture
def topic(campaign):
    """Six compared propositions whose texts and ids are all hostile, with negative μ."""
    topic = TopicFactory(campaign=campaign, key=TOPIC_KEY)
    for i, mu in enumerate(MUS):
        proposition = PropositionFactory(
            topic=topic,
            subject=HOSTILE[i],
            relation=HOSTILE[(i + 1) % 6],
            object=HOSTILE[(i + 2) % 6],
            external_id=HOSTILE[(i + 3) % 6],
        )
        PropositionScore.objects.create(
            proposition=proposition,
            likert_mean=-0.3 * (i + 1),
            likert_n=5,
            in_comparisons=True,
            mu=mu,
            sigma=0.5,
            comparisons=12,
            rank=i + 1,
        )
    return topic


def texts_of(topic):
    """The hostile text of each proposition, by id."""
    return {p.pk: p for p in topic.propositions.all()}


def csv_rows(response, delimiter=","):
    return list(csv.DictReader(io.StringIO(response.content.decode(), newline=""), delimiter=delimiter))


def assert_no_formula(rows, numeric):
    """Every text cell is safe to open; every numeric column holds plain numbers."""
    assert rows
    for row in rows:
        for column, cell in row.items():
            if column in numeric:
                if cell != "":
                    float(cell)  # a number, not '-1.5
            else:
                assert not cell.startswith(TRIGGERS), (column, cell)


RANKING_NUMBERS = {"rank", "id", "likert_mean", "likert_n", "mu", "sigma", "conservative", "comparisons"}


def assert_ranking_csv(rows, topic):
    propositions = texts_of(topic)
    assert_no_formula(rows, RANKING_NUMBERS)
    assert len(rows) == len(MUS)
    for row in rows:
        proposition = propositions[int(row["id"])]
        assert row["topic"] == neutralised(TOPIC_KEY)
        assert row["subject"] == neutralised(proposition.subject)
        assert row["relation"] == neutralised(proposition.relation)
        assert row["object"] == neutralised(proposition.object)
        assert row["external_id"] == neutralised(proposition.external_id)
    assert [float(row["mu"]) for row in rows] == sorted(MUS, reverse=True)
    assert [int(row["rank"]) for row in rows] == list(range(1, len(MUS) + 1))
    assert float(rows[0]["conservative"]) == 3.25 - 1.5 and float(rows[-1]["mu"]) == -2.0


def assert_ranking_exact(rows, topic):
    propositions = texts_of(topic)
    assert len(rows) == len(MUS)
    for row in rows:
        proposition = propositions[int(row["id"])]
        assert row["topic"] == TOPIC_KEY
        assert (row["subject"], row["relation"], row["object"], row["external_id"]) == (
            proposition.subject,
            proposition.relation,
            proposition.object,
            proposition.external_id,
        )
    assert [float(row["mu"]) for row in rows] == sorted(MUS, reverse=True)


def ranking_url(topic, fmt):
    return reverse("ranking:ranking-download", args=[topic.campaign.slug, topic.key, fmt])


def api_export_url(topic):
    return reverse("api-topic-export", kwargs={"campaign_slug": topic.campaign.slug, "topic_key": topic.key})


def test_the_ranking_csv_page_download_is_neutralised(owner_client, topic):
    response = owner_client.get(ranking_url(topic, "csv"))

    assert response.status_code == 200
    assert_ranking_csv(csv_rows(response), topic)


def test_the_ranking_csv_api_export_is_neutralised(owner_client, topic):
    response = owner_client.get(api_export_url(topic), {"format": "csv"})

    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert_ranking_csv(csv_rows(response), topic)


def test_the_export_ranking_command_csv_is_neutralised_and_its_tsv_exact(topic, tmp_path):
    for fmt in ("csv", "tsv"):
        call_command("export_ranking", campaign="hostile", format=fmt, output=str(tmp_path / f"ranking.{fmt}"))
    with open(tmp_path / "ranking.csv", encoding="utf-8", newline="") as handle:
        assert_ranking_csv(list(csv.DictReader(handle)), topic)
    with open(tmp_path / "ranking.tsv", encoding="utf-8", newline="") as handle:
        assert_ranking_exact(list(csv.DictReader(handle, delimiter="\t")), topic)


@pytest.mark.parametrize("where", ["page", "api"])
def test_the_ranking_tsv_and_jsonl_keep_the_exact_text(owner_client, topic, where):
    def get(fmt):
        if where == "page":
            return owner_client.get(ranking_url(topic, fmt))
        return owner_client.get(api_export_url(topic), {"format": fmt})

    tsv, jsonl = get("tsv"), get("jsonl")

    assert tsv.status_code == jsonl.status_code == 200
    assert_ranking_exact(csv_rows(tsv, delimiter="\t"), topic)
    lines = jsonl.content.decode().split("\n")
    assert lines[-1] == "" and len(lines) == len(MUS) + 1  # no CR or LF leaks out of a record
    records = [json.loads(line) for line in lines[:-1]]
    assert_ranking_exact(records, topic)
    assert all(isinstance(record["mu"], float) and isinstance(record["rank"], int) for record in records)


def test_the_top_propositions_keep_the_text_with_whitespace_folded(owner_client, topic):
    response = owner_client.get(reverse("ranking:top-propositions-download", args=[topic.campaign.slug, topic.key]))

    lines = response.content.decode().split("\n")
    assert lines[-1] == "" and len(lines) == len(MUS) + 1
    triples = {tuple(line.split("\t")) for line in lines[:-1]}
    # Tabs and line breaks separate fields and lines here, so they are folded into spaces;
    # nothing else changes and nothing is prefixed.
    expected = {
        tuple(" ".join(text.split()) for text in (p.subject, p.relation, p.object)) for p in topic.propositions.all()
    }
    assert triples == expected
    assert ('=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "-2+3") in triples


@pytest.fixture
def labels(topic):
    """A confirmed Likert label and a comparison from each hostile worker and assignment id."""
    first, second = topic.propositions.order_by("pk")[:2]
    for i, hostile in enumerate(HOSTILE):
        worker = WorkerFactory(external_id=hostile)
        assignment = AssignmentFactory(
            task__batch__topic=topic,
            worker=worker,
            assignment_id=HOSTILE[(i + 1) % 6],
            verification=Assignment.Verification.VERIFIED,
        )
        LikertLabel.objects.create(assignment=assignment, worker=worker, proposition=first, score=1 + i % 5)
        Comparison.objects.create(assignment=assignment, worker=worker, winner=first, loser=second)
    return topic


def test_the_raw_labels_csv_is_neutralised(owner_client, labels):
    response = owner_client.get(reverse("ranking:labels-download", args=[labels.campaign.slug, labels.key]))

    rows = csv_rows(response)
    assert len(rows) == 2 * len(HOSTILE)
    assert_no_formula(rows, {"proposition_id", "score", "winner_id", "loser_id"})
    assert {row["worker"] for row in rows} == {neutralised(text) for text in HOSTILE}
    assert {row["assignment"] for row in rows} == {neutralised(text) for text in HOSTILE}
    assert {row["topic"] for row in rows} == {neutralised(TOPIC_KEY)}


def test_the_labels_command_tsv_and_jsonl_keep_the_exact_ids(labels, tmp_path):
    for fmt in ("tsv", "jsonl"):
        call_command(
            "export_ranking", campaign="hostile", what="labels", format=fmt, output=str(tmp_path / f"labels.{fmt}")
        )
    with open(tmp_path / "labels.tsv", encoding="utf-8", newline="") as handle:
        tsv = list(csv.DictReader(handle, delimiter="\t"))
    with open(tmp_path / "labels.jsonl", encoding="utf-8", newline="") as handle:
        jsonl = [json.loads(line) for line in handle.read().split("\n")[:-1]]

    for rows in (tsv, jsonl):
        assert len(rows) == 2 * len(HOSTILE)
        assert {row["worker"] for row in rows} == set(HOSTILE)
        assert {row["assignment"] for row in rows} == set(HOSTILE)
        assert {row["topic"] for row in rows} == {TOPIC_KEY}


def test_the_worker_quality_csv_is_neutralised_and_keeps_its_numbers(owner_client, campaign):
    for i, hostile in enumerate(HOSTILE):
        WorkerQualityFactory(
            campaign=campaign,
            worker=WorkerFactory(external_id=hostile),
            labels=10 + i,
            loo_r=-0.3,
            comparison_agreement=-0.25 if i % 2 else None,
            override_status="ok",
            override_reason=HOSTILE[(i + 2) % 6],
        )

    response = owner_client.get(reverse("crowd:campaign-quality-csv", args=[campaign.slug]))

    assert response.status_code == 200
    rows = csv_rows(response)
    numbers = {"labels", "items", "loo_r", "traps_seen", "traps_failed", "votes", "comparison_agreement"}
    assert_no_formula(rows, numbers | {"untouched_orderings"})
    assert {row["worker"] for row in rows} == {neutralised(text) for text in HOSTILE}
    assert {row["override_reason"] for row in rows} == {neutralised(text) for text in HOSTILE}
    assert {float(row["loo_r"]) for row in rows} == {-0.3}
    assert sorted(row["comparison_agreement"] for row in rows) == ["", "", "", "-0.25", "-0.25", "-0.25"]
    assert sorted(int(row["labels"]) for row in rows) == list(range(10, 16))


def test_the_links_csv_is_neutralised(owner_client, campaign):
    Campaign.objects.filter(pk=campaign.pk).update(channel=Campaign.Channel.LINKS)
    typed = [text for text in HOSTILE if not text[0].isspace()]  # the form strips each line
    created = owner_client.post(
        f"/campaigns/{campaign.slug}/links/new/", {"kind": "personal", "labels": "\n".join(typed)}
    )
    campaign.refresh_from_db()
    for text in HOSTILE[len(typed) :]:  # stored as given, as if by another path
        link = links.link_create(campaign=campaign, kind="open")
        ParticipantLink.objects.filter(pk=link.pk).update(label=text)

    response = owner_client.get(reverse("crowd:links-csv", args=[campaign.slug]))

    assert created.status_code == 302
    rows = csv_rows(response)
    assert_no_formula(rows, set())
    assert {row["label"] for row in rows} == {neutralised(text) for text in HOSTILE}
    assert all(row["url"].startswith("http") for row in rows)


def test_a_hostile_consent_version_is_neutralised_in_the_links_and_labels_csv(owner_client, labels):
    """The version is the start of a digest the server computes; stored as if by another path, it
    still reaches no spreadsheet as a formula."""
    campaign = labels.campaign
    Campaign.objects.filter(pk=campaign.pk).update(channel=Campaign.Channel.LINKS)
    campaign.refresh_from_db()
    link = links.link_create(campaign=campaign, label="Ada")
    answer = Assignment.objects.order_by("pk").first()
    now = timezone.now()
    session = WorkSession.objects.create(
        campaign=campaign,
        worker=answer.worker,
        key=uuid.uuid4(),
        link=link,
        tasks_target=1,
        consented_at=now - timedelta(minutes=1),
        consent_digest=HOSTILE[0],
    )
    TaskHold.objects.create(
        session=session,
        task=answer.task,
        assignment_id=answer.assignment_id,
        position=1,
        held_at=now,
        expires_at=now + timedelta(hours=1),
        submitted_at=now,
    )

    listing = csv_rows(owner_client.get(reverse("crowd:links-csv", args=[campaign.slug])))
    rows = csv_rows(owner_client.get(reverse("ranking:labels-download", args=[campaign.slug, labels.key])))

    version = neutralised(HOSTILE[0][:12])
    assert_no_formula(listing, set())
    assert [(row["label"], row["consent_version"]) for row in listing] == [("Ada", version)]
    assert_no_formula(rows, {"proposition_id", "score", "winner_id", "loser_id"})
    assert {row["consent_version"] for row in rows if row["assignment"] == neutralised(answer.assignment_id)} == {
        version
    }
    assert {row["consent_version"] for row in rows if row["assignment"] != neutralised(answer.assignment_id)} == {""}
