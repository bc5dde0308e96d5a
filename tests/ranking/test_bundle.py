"""One download with every topic (ranking.bundle): from the campaign page, the API and
`export_ranking --all-topics`, the same files as the per-topic downloads, in a zip with a
README that says which is which."""

import csv
import gc
import io
import tracemalloc
import zipfile

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Campaign, Proposition, Topic
from crowd.models import Assignment, Comparison, LikertLabel
from ranking.bundle import campaign_bundle_write
from ranking.models import PropositionScore
from tests.dashboard.api.conftest import client_for
from tests.factories import AssignmentFactory, CampaignFactory, PropositionFactory, TopicFactory, WorkerFactory

pytestmark = pytest.mark.django_db

FORMULA = '=HYPERLINK("http://x","y")'
FILES = ("ranking.csv", "ranking.tsv", "labels.csv", "top")


@pytest.fixture
def campaign(owner):
    """Two topics of 60 scored propositions (a formula in one text), a label each; a third
    topic, empty."""
    campaign = CampaignFactory(owner=owner, slug="loans-run", name="Loans", channel=Campaign.Channel.LINKS)
    worker = WorkerFactory(external_id="-AWORKER")
    for key in ("beta", "alpha"):
        topic = TopicFactory(campaign=campaign, key=key, state=Topic.State.DONE)
        propositions = PropositionFactory.create_batch(60, topic=topic)
        propositions[0].subject = FORMULA
        propositions[0].save(update_fields=["subject"])
        PropositionScore.objects.bulk_create(
            PropositionScore(proposition=p, likert_mean=5 - i / 20, likert_n=5, in_comparisons=True, mu=40 - i, sigma=1)
            for i, p in enumerate(propositions)
        )
        assignment = AssignmentFactory(
            task__batch__topic=topic, worker=worker, verification=Assignment.Verification.VERIFIED
        )
        LikertLabel.objects.create(assignment=assignment, worker=worker, proposition=propositions[0], score=4)
    TopicFactory(campaign=campaign, key="empty")
    return campaign


def bundle(campaign) -> zipfile.ZipFile:
    target = io.BytesIO()
    campaign_bundle_write(campaign=campaign, target=target)
    return zipfile.ZipFile(target)


def read(archive: zipfile.ZipFile, name: str) -> str:
    return archive.read(name).decode("utf-8")


def test_the_zip_holds_every_topics_files_and_a_readme(campaign):
    archive = bundle(campaign)

    names = archive.namelist()
    expected = {"loans-run/README.txt"} | {
        f"loans-run/{key}/loans-run-{key}{suffix}"
        for key in ("alpha", "beta", "empty")
        for suffix in ("-ranking.csv", "-ranking.tsv", "-labels.csv", "-top-50-propositions.tsv")
    }
    assert set(names) == expected and len(names) == len(expected)
    assert archive.testzip() is None

    ranking = list(csv.DictReader(io.StringIO(read(archive, "loans-run/alpha/loans-run-alpha-ranking.csv"))))
    exact = list(
        csv.DictReader(io.StringIO(read(archive, "loans-run/alpha/loans-run-alpha-ranking.tsv")), delimiter="\t")
    )
    assert len(ranking) == len(exact) == 60
    assert ranking[0]["subject"] == "'" + FORMULA and exact[0]["subject"] == FORMULA  # spreadsheet-safe vs exact
    assert [row["rank"] for row in exact] == [row["tie_rank"] for row in exact] == [str(n) for n in range(1, 61)]
    labels = list(csv.DictReader(io.StringIO(read(archive, "loans-run/alpha/loans-run-alpha-labels.csv"))))
    assert [(row["kind"], row["worker"], row["score"]) for row in labels] == [("likert", "'-AWORKER", "4")]
    top = read(archive, "loans-run/alpha/loans-run-alpha-top-50-propositions.tsv").split("\n")
    assert len(top) == 51 and top[-1] == "" and top[0].split("\t")[0] == FORMULA
    assert read(archive, "loans-run/empty/loans-run-empty-top-50-propositions.tsv") == ""


def test_the_files_are_the_per_topic_downloads(client, owner, campaign):
    archive = bundle(campaign)
    client.force_login(owner)
    topic_urls = {
        "ranking.csv": reverse("ranking:ranking-download", args=["loans-run", "beta", "csv"]),
        "ranking.tsv": reverse("ranking:ranking-download", args=["loans-run", "beta", "tsv"]),
        "labels.csv": reverse("ranking:labels-download", args=["loans-run", "beta"]),
        "top": reverse("ranking:top-propositions-download", args=["loans-run", "beta"]),
    }
    for what, address in topic_urls.items():
        response = client.get(address)
        filename = response["Content-Disposition"].split('filename="')[1].rstrip('"')
        assert archive.read(f"loans-run/beta/{filename}") == response.content, what


def test_the_readme_says_which_file_is_which_and_which_are_spreadsheet_safe(campaign):
    readme = read(bundle(campaign), "loans-run/README.txt")

    assert 'Campaign "Loans" (loans-run)' in readme
    assert "alpha/  Done: 60 propositions ranked, 60 in the comparison rounds." in readme
    assert "empty/  Likert round: 0 propositions ranked" in readme
    for name, kind in (
        ("loans-run-KEY-ranking.csv", "SPREADSHEET-SAFE"),
        ("loans-run-KEY-ranking.tsv", "EXACT"),
        ("loans-run-KEY-labels.csv", "SPREADSHEET-SAFE"),
        ("loans-run-KEY-top-50-propositions.tsv", "EXACT (white space folded)"),
    ):
        assert f"\n  {name}: {kind}\n" in readme, name
    assert "subject<TAB>" in readme and "The input of a concept map, not one" in readme
    assert "tie_rank is the rank they share" in readme


def test_the_readme_warns_when_the_concept_maps_cut_falls_inside_a_tie(campaign):
    alpha = campaign.topics.get(key="alpha")
    PropositionScore.objects.filter(proposition__topic=alpha, mu__lte=40 - 48).update(mu=-10.0)  # ranks 49..60 tied

    readme = read(bundle(campaign), "loans-run/README.txt")

    assert "Ranks 49-60 are tied, so the top propositions' cut at 50 falls inside a tie" in readme


def test_a_topic_key_that_is_no_file_name_gets_a_folder_named_by_id(campaign):
    legacy = TopicFactory(campaign=campaign, key="../up")  # imported before keys were checked

    names = bundle(campaign).namelist()

    assert f"loans-run/topic-{legacy.pk}/loans-run-topic-{legacy.pk}-top-50-propositions.tsv" in names
    assert not any(".." in name for name in names)


def test_the_campaign_page_links_the_zip_and_the_zip_downloads(client, owner, campaign):
    client.force_login(owner)

    page = client.get(reverse("dashboard:campaign", args=["loans-run"])).content.decode()
    assert 'href="/campaigns/loans-run/all-topics.zip" download>Download every topic (zip)</a>' in page

    response = client.get("/campaigns/loans-run/all-topics.zip")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == 'attachment; filename="loans-run-all-topics.zip"'
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert "loans-run/README.txt" in archive.namelist()


def test_the_zip_needs_a_login_and_stays_with_its_researcher(client, campaign, django_user_model):
    response = client.get("/campaigns/loans-run/all-topics.zip")
    assert response.status_code == 302 and response.url.startswith("/accounts/login/")
    client.force_login(django_user_model.objects.create_user("someone-else"))
    assert client.get("/campaigns/loans-run/all-topics.zip").status_code == 404
    other = client_for(django_user_model.objects.get(username="someone-else"))
    assert other.get(reverse("api-campaign-export", kwargs={"campaign_slug": "loans-run"})).status_code == 404


def test_the_api_offers_the_zip_and_the_top_50(owner, campaign):
    api = client_for(owner)

    response = api.get(reverse("api-campaign-export", kwargs={"campaign_slug": "loans-run"}))
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert len(zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))).namelist()) == 13

    top = api.get(
        reverse("api-topic-export", kwargs={"campaign_slug": "loans-run", "topic_key": "alpha"}), {"format": "top50"}
    )
    assert top.status_code == 200 and top["Content-Type"] == "text/tab-separated-values; charset=utf-8"
    assert top["Content-Disposition"] == 'attachment; filename="loans-run-alpha-top-50-propositions.tsv"'
    assert len(top.content.decode().splitlines()) == 50


def test_the_api_schema_documents_the_top_50_and_the_zip(owner):
    schema = client_for(owner).get(reverse("api-schema"), {"format": "json"}).json()

    export = schema["paths"]["/api/campaigns/{campaign_slug}/topics/{topic_key}/export/"]["get"]
    formats = next(p for p in export["parameters"] if p["name"] == "format")
    assert "top50" in formats["schema"]["enum"] and "cmap" not in formats["schema"]["enum"]
    assert "the input of a concept map, not one" in formats["description"]
    zipped = schema["paths"]["/api/campaigns/{campaign_slug}/export/"]["get"]
    assert "application/zip" in zipped["responses"]["200"]["content"]


def test_the_command_writes_the_zip(campaign, tmp_path, capsys):
    target = tmp_path / "x.zip"

    call_command("export_ranking", campaign="loans-run", all_topics=True, output=str(target))

    assert "Wrote 3 topics to" in capsys.readouterr().err
    assert zipfile.ZipFile(target).read("loans-run/README.txt") == bundle(campaign).read("loans-run/README.txt")
    with pytest.raises(CommandError, match="name it with --output"):
        call_command("export_ranking", campaign="loans-run", all_topics=True)
    with pytest.raises(CommandError, match="leave out --topic"):
        call_command("export_ranking", campaign="loans-run", all_topics=True, topic="alpha", output=str(target))


def test_the_command_writes_one_topics_top_50_and_refuses_to_mix_topics(campaign, tmp_path, capsys):
    target = tmp_path / "alpha-top-50-propositions.tsv"

    call_command("export_ranking", campaign="loans-run", what="top-propositions", topic="alpha", output=str(target))

    assert "Wrote 50 top-proposition lines" in capsys.readouterr().err
    assert len(target.read_text(encoding="utf-8").splitlines()) == 50
    with pytest.raises(CommandError, match=r"A top-propositions file holds one topic"):
        call_command("export_ranking", campaign="loans-run", what="top-propositions", output=str(target))


class Discard:
    """A stream that keeps nothing and cannot seek, like a socket (zipfile then writes each
    entry's sizes after it). At each write it frees what is unreachable, so a peak measured
    meanwhile is what the writer holds, not garbage the collector has not reached yet (the
    ranking's propositions and scores refer to each other)."""

    def write(self, data: bytes) -> int:
        gc.collect()  # cheap: everything older than the export is frozen (below)
        return len(data)

    def flush(self) -> None:
        pass


def test_the_memory_it_takes_does_not_grow_with_the_number_of_topics(owner):
    """Peak memory while writing the zip is about one topic's, not the campaign's (tracemalloc,
    over the Python heap): 9 topics peak within a tenth of 3, where holding every file would
    take three times the memory of the files. benchmarks/bundle_bench.py measures it at 30
    topics of 1,750 propositions."""
    worker = WorkerFactory()

    def peak(topics: int) -> int:
        campaign = CampaignFactory(owner=owner, slug=f"size-{topics}", channel=Campaign.Channel.LINKS)
        for n in range(topics):
            topic = TopicFactory(campaign=campaign, key=f"t{n}")
            propositions = Proposition.objects.bulk_create(
                Proposition(topic=topic, subject=f"Lender {i}", relation="offers", object="loans", normalized=str(i))
                for i in range(200)
            )
            PropositionScore.objects.bulk_create(
                PropositionScore(proposition=p, likert_mean=i / 7, likert_n=3) for i, p in enumerate(propositions)
            )
            assignment = AssignmentFactory(
                task__batch__topic=topic, worker=worker, verification=Assignment.Verification.VERIFIED
            )
            LikertLabel.objects.bulk_create(
                LikertLabel(assignment=assignment, worker=worker, proposition=p, score=3) for p in propositions
            )
        gc.collect()
        gc.freeze()
        tracemalloc.start()
        try:
            campaign_bundle_write(campaign=campaign, target=Discard())
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            gc.unfreeze()

    peak(1)  # the first run also fills Django's and the driver's caches
    three, nine = peak(3), peak(9)

    assert nine < 1.1 * three, (three, nine)


def test_the_queries_do_not_grow_with_the_number_of_topics(owner):
    """The rankings, the labels and the votes are each read once for the whole campaign."""
    worker = WorkerFactory()

    def queries(topics: int) -> int:
        campaign = CampaignFactory(owner=owner, slug=f"queries-{topics}", channel=Campaign.Channel.LINKS)
        for n in range(topics):
            topic = TopicFactory(campaign=campaign, key=f"t{n}")
            propositions = PropositionFactory.create_batch(4, topic=topic)
            PropositionScore.objects.bulk_create(
                PropositionScore(proposition=p, likert_mean=i / 3, likert_n=3) for i, p in enumerate(propositions)
            )
            assignment = AssignmentFactory(
                task__batch__topic=topic, worker=worker, verification=Assignment.Verification.VERIFIED
            )
            LikertLabel.objects.create(assignment=assignment, worker=worker, proposition=propositions[0], score=4)
            vote = AssignmentFactory(
                task__batch__topic=topic, worker=worker, verification=Assignment.Verification.VERIFIED
            )
            Comparison.objects.create(assignment=vote, worker=worker, winner=propositions[1], loser=propositions[2])
        with CaptureQueriesContext(connection) as captured:
            assert campaign_bundle_write(campaign=campaign, target=io.BytesIO()) == topics
        return len(captured.captured_queries)

    assert queries(2) == queries(6)


def test_each_topics_labels_land_in_its_own_folder(owner):
    worker = WorkerFactory(external_id="AWORKER")
    campaign = CampaignFactory(owner=owner, slug="labels-by-topic", channel=Campaign.Channel.LINKS)
    for key in ("b", "a", "c"):
        topic = TopicFactory(campaign=campaign, key=key)
        proposition = PropositionFactory(topic=topic)
        if key != "c":  # c has no labels: an empty file, and the next topics are not shifted
            assignment = AssignmentFactory(
                task__batch__topic=topic, worker=worker, verification=Assignment.Verification.VERIFIED
            )
            LikertLabel.objects.create(assignment=assignment, worker=worker, proposition=proposition, score=2)
    archive = bundle(campaign)

    for key in ("a", "b", "c"):
        labels = list(
            csv.DictReader(io.StringIO(read(archive, f"labels-by-topic/{key}/labels-by-topic-{key}-labels.csv")))
        )
        assert [row["topic"] for row in labels] == ([] if key == "c" else [key])
