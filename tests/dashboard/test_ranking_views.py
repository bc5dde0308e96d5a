"""The ranking page of a topic and its downloads (dashboard.ranking_views, ranking.ranking_report)."""

import csv
import io
import json
import re

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

from annotation.models import Proposition
from crowd.models import Assignment, Comparison, LikertLabel
from ranking.models import PropositionScore, RankingSnapshot
from tests.factories import AssignmentFactory, CampaignFactory, PropositionFactory, TopicFactory, WorkerFactory

pytestmark = pytest.mark.django_db

COMPARED = 60  # more than the 50 the μ ± σ chart shows


@pytest.fixture
def topic(owner):
    """80 scored propositions (the best 60 compared), a trap, and three refits."""
    topic = TopicFactory(campaign=CampaignFactory(owner=owner, slug="loans-run"), key="loans")
    propositions = PropositionFactory.create_batch(80, topic=topic)
    PropositionFactory(topic=topic, obvious_trap=True)
    PropositionScore.objects.bulk_create(
        PropositionScore(
            proposition=p,
            likert_mean=5 - i / 20,
            likert_n=5,
            in_comparisons=i < COMPARED,
            mu=40 - i / 2 if i < COMPARED else None,
            sigma=1 + i / 100 if i < COMPARED else None,
            comparisons=12 if i < COMPARED else 0,
            rank=i + 1,
        )
        for i, p in enumerate(propositions)
    )
    for number, (used, spearman) in enumerate([(100, None), (200, 0.91), (300, 0.97)], start=1):
        RankingSnapshot.objects.create(
            topic=topic,
            number=number,
            comparisons_used=used,
            spearman_previous=spearman,
            entered_top=3,
            left_top=3,
            ranking=[],
        )
    return topic


def url(name, topic, *args):
    return reverse(f"ranking:{name}", args=[topic.campaign.slug, topic.key, *args])


def test_pages_and_downloads_need_a_login_and_stay_with_their_researcher(client, topic, django_user_model):
    urls = [
        url("topic-ranking", topic),
        url("ranking-download", topic, "csv"),
        url("labels-download", topic),
        url("top-propositions-download", topic),
    ]
    for address in urls:
        response = client.get(address)
        assert response.status_code == 302 and response.url.startswith("/accounts/login/"), address
    client.force_login(django_user_model.objects.create_user("someone-else"))
    for address in urls:
        assert client.get(address).status_code == 404, address


def test_the_page_draws_both_plots_and_a_sortable_table(owner_client, topic):
    page = owner_client.get(url("topic-ranking", topic)).content.decode()

    convergence = re.search(r'<figure class="card" id="convergence">(.*?)</figure>', page, re.S).group(1)
    intervals = re.search(r'<figure class="card" id="top-intervals">(.*?)</figure>', page, re.S).group(1)
    # Each chart is drawn twice, for a wide and a narrow figure (crowd.qc.svg.chart_sizes).
    assert convergence.count('role="img"') == 2 and convergence.count("<circle") == 2 * 2  # refits 2 and 3
    assert "(200, 0.91)" in convergence and "stop at 0.99" in convergence
    assert intervals.count('class="chart-interval"') == 2 * 50
    assert "<title>#1 Lender" in intervals and "40 ± 1" in intervals
    assert "Refit #3 used 300 comparisons; Spearman 0.970 with the previous refit" in page
    assert page.count("<tbody>") == 1 and page.count("<tr>") == 1 + 80  # the trap is left out
    assert '<table class="ranking" data-sortable' in page
    assert (
        '<th scope="col" class="num" aria-sort="ascending" data-type="number"><button type="button" class="sort">Rank</button>'
        in page
    )
    assert '<script src="/static/js/sortable-table.js" defer></script>' in page
    assert "40.00 ± 1.00" in page and "—" in page  # μ ± σ, and none for the uncompared


def test_the_sorting_script_sets_aria_sort_and_needs_nothing_else():
    script = open(finders.find("js/sortable-table.js"), encoding="utf-8").read()
    assert 'setAttribute("aria-sort"' in script and "button.sort" in script
    assert "fetch(" not in script and "http" not in script


def test_before_any_refit_the_plots_say_there_is_no_data_yet(owner_client, topic):
    RankingSnapshot.objects.all().delete()
    PropositionScore.objects.update(mu=None, sigma=None, in_comparisons=False)

    page = owner_client.get(url("topic-ranking", topic)).content.decode()

    # Drawn in both plots (each twice: wide and narrow); the convergence plot's label and desc say it too.
    assert page.count("no data yet") == 2 * (1 + 3) and "No TrueSkill refit yet" in page


def test_after_one_refit_the_convergence_plot_says_it_needs_two(owner_client, topic):
    RankingSnapshot.objects.filter(number__gt=1).delete()  # the first refit has no previous one

    page = owner_client.get(url("topic-ranking", topic)).content.decode()

    convergence = re.search(r'<figure class="card" id="convergence">(.*?)</figure>', page, re.S).group(1)
    said = " ".join(re.sub(r"<[^>]+>", " ", convergence).split())
    assert said.count("one refit so far: convergence needs two") == 2 * 2  # drawn and described, wide and narrow
    assert "no data yet" not in convergence and "<circle" not in convergence
    assert 'aria-label="Convergence of the ranking. one refit so far: convergence needs two"' in convergence


@pytest.mark.parametrize(
    "fmt, content_type",
    [
        ("csv", "text/csv; charset=utf-8"),
        ("tsv", "text/tab-separated-values; charset=utf-8"),
        ("jsonl", "application/jsonl; charset=utf-8"),
    ],
)
def test_the_ranking_downloads_in_each_format(owner_client, topic, fmt, content_type):
    response = owner_client.get(url("ranking-download", topic, fmt))

    assert response["Content-Type"] == content_type
    assert response["Content-Disposition"] == f'attachment; filename="loans-run-loans-ranking.{fmt}"'
    text = response.content.decode()
    if fmt == "jsonl":
        rows = [json.loads(line) for line in text.splitlines()]
    else:
        rows = list(csv.DictReader(io.StringIO(text), delimiter="\t" if fmt == "tsv" else ","))
    assert len(rows) == 80
    assert str(rows[0]["rank"]) == "1" and float(rows[0]["mu"]) == 40.0 and str(rows[0]["subject"]).startswith("Lender")


def test_an_unknown_format_is_not_found(owner_client, topic):
    assert owner_client.get(url("ranking-download", topic, "xlsx")).status_code == 404


def test_the_raw_labels_download_holds_every_label_and_vote(owner_client, topic):
    first, second = topic.propositions.filter(trap_kind=Proposition.TrapKind.NONE)[:2]
    worker = WorkerFactory(external_id="AWORKER1")
    assignment = AssignmentFactory(
        task__batch__topic=topic, worker=worker, assignment_id="ASG1", verification=Assignment.Verification.VERIFIED
    )
    LikertLabel.objects.create(assignment=assignment, worker=worker, proposition=first, score=4)
    Comparison.objects.create(assignment=assignment, worker=worker, winner=first, loser=second)
    # Awaiting its channel: shown as pending on the dashboard, in no export.
    forged = WorkerFactory(external_id="AFORGED1")
    pending = AssignmentFactory(task__batch__topic=topic, worker=forged, assignment_id="ASG2")
    LikertLabel.objects.create(assignment=pending, worker=forged, proposition=first, score=1)

    response = owner_client.get(url("labels-download", topic))

    assert response["Content-Disposition"] == 'attachment; filename="loans-run-loans-labels.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(row["kind"], row["worker"], row["score"], row["winner_id"]) for row in rows] == [
        ("likert", "AWORKER1", "4", ""),
        ("comparison", "AWORKER1", "", str(first.pk)),
    ]


def test_the_top_50_download_is_named_for_what_it_is_not_a_cmap(owner_client, topic):
    response = owner_client.get(url("top-propositions-download", topic))

    assert response.request["PATH_INFO"] == "/campaigns/loans-run/topics/loans/top-50-propositions.tsv"
    assert response["Content-Disposition"] == 'attachment; filename="loans-run-loans-top-50-propositions.tsv"'
    assert response["Content-Type"] == "text/tab-separated-values; charset=utf-8"
    lines = response.content.decode().splitlines()
    assert len(lines) == 50 and all(len(line.split("\t")) == 3 for line in lines)
    assert lines[0].split("\t")[1] == "offers"


@pytest.mark.parametrize("old", ["concept-map.tsv", "concept-map.cmap"])
def test_the_old_concept_map_addresses_redirect_to_the_top_50(owner_client, topic, old):
    old = f"/campaigns/loans-run/topics/loans/{old}"

    response = owner_client.get(old)

    assert response.status_code == 301 and response.url == url("top-propositions-download", topic)
    assert owner_client.get(old, follow=True).content == owner_client.get(response.url).content


def test_the_downloads_say_which_files_are_spreadsheet_safe_and_that_the_top_50_is_no_map(owner_client, topic):
    page = owner_client.get(url("topic-ranking", topic)).content.decode()

    assert "Top 50 propositions (.tsv)</a>: <code>subject&lt;TAB&gt;relation&lt;TAB&gt;object</code>" in page
    assert "the input of a concept map, not one yet" in page and "Concept map (.cmap)" not in page
    assert "CSV files are spreadsheet-safe" in page and "keep the exact text" in page
    assert 'href="/campaigns/loans-run/all-topics.zip" download' in page
