"""Ties in the ranking (ranking.export.ranked_with_ties, ranking.ties): propositions the order
cannot tell apart share a rank, and the page and every export say so alike."""

import csv
import io
import re

import pytest
from django.urls import reverse

from ranking.export import ranking_rows, write_rows
from ranking.models import PropositionScore
from ranking.ranking_report import PAGE_SIZE
from ranking.ties import TieNote, tie_notes
from tests.dashboard.api.conftest import client_for
from tests.factories import CampaignFactory, PropositionFactory, TopicFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def topic(owner):
    """Seven propositions: μ 30; μ 25 twice with σ 2 (tied) and once with σ 3 (not: σ orders
    it); then outside the comparisons the Likert mean 3.4 twice (tied) and one unrated."""
    topic = TopicFactory(campaign=CampaignFactory(owner=owner, slug="ties"), key="loans")
    scores = [
        {"in_comparisons": True, "mu": 30.0, "sigma": 2.0},
        {"in_comparisons": True, "mu": 25.0, "sigma": 2.0},
        {"in_comparisons": True, "mu": 25.0, "sigma": 2.0},
        {"in_comparisons": True, "mu": 25.0, "sigma": 3.0},
        {"likert_mean": 17 / 5},
        {"likert_mean": 34 / 10},
        None,
    ]
    for subject, score in enumerate(scores):
        proposition = PropositionFactory(topic=topic, subject=f"P{subject}")
        if score is not None:
            PropositionScore.objects.create(proposition=proposition, **score)
    return topic


EXPECTED = [  # (rank, tie_rank, tie_size), best first
    (1, 1, 1),
    (2, 2, 2),
    (3, 2, 2),
    (4, 4, 1),
    (5, 5, 2),
    (6, 5, 2),
    (7, 7, 1),
]


def ties(rows) -> list[tuple[int, int, int]]:
    return [(int(row["rank"]), int(row["tie_rank"]), int(row["tie_size"])) for row in rows]


def test_tied_propositions_share_the_best_of_their_ranks_in_every_export(topic, owner):
    rows = ranking_rows(topic=topic)
    assert ties(rows) == EXPECTED
    assert [row["subject"] for row in rows] == [f"P{n}" for n in range(7)]  # tied ones by id

    for fmt, delimiter in (("csv", ","), ("tsv", "\t")):
        stream = io.StringIO()
        write_rows(rows, fmt, stream)
        assert ties(csv.DictReader(io.StringIO(stream.getvalue()), delimiter=delimiter)) == EXPECTED

    api = client_for(owner)
    body = api.get(reverse("api-topic-ranking", kwargs={"campaign_slug": "ties", "topic_key": "loans"})).json()
    assert ties(body["results"]) == EXPECTED


def test_a_top_cut_inside_a_tie_still_counts_the_whole_tie(topic):
    assert ties(ranking_rows(topic=topic, top=2)) == EXPECTED[:2]  # rank 2 shares its place with rank 3


def test_the_ranking_page_marks_ties_and_says_what_they_share(client, owner, topic):
    client.force_login(owner)

    page = client.get(reverse("ranking:topic-ranking", args=["ties", "loans"])).content.decode()

    ranks = re.findall(r'<tr>\s*<td class="num" data-value="\d+">(.*?)</td>', page)
    marker = '<span aria-hidden="true">=</span><span class="visually-hidden">tied at </span>'
    near = re.compile(r'\s*<abbr class="near".*?</abbr><span class="visually-hidden">[^<]*</span>')
    # Tied rows share μ and σ, so the second of a tie is also near-equal to the first (≈, issue 25).
    assert [near.sub("", rank.replace(marker, "=")) for rank in ranks] == ["1", "=2", "=2", "4", "=5", "=5", "7"]
    assert sum("≈" in rank for rank in ranks) >= 1
    assert "Ranks 2–3 share μ = 25.0 and σ = 2.0." in page
    assert "Ranks 5–6 share the Likert mean 3.4." in page
    assert "Ranks 4–" not in page


def test_a_tie_across_a_page_boundary_names_all_its_ranks_on_both_pages(client, owner):
    topic = TopicFactory(campaign=CampaignFactory(owner=owner, slug="long"), key="loans")
    propositions = PropositionFactory.create_batch(PAGE_SIZE + 2, topic=topic)
    # Ranks 1..98 distinct; the last four (99..102) all at the Likert mean 1.0.
    PropositionScore.objects.bulk_create(
        PropositionScore(proposition=p, likert_mean=1.0 if i >= 98 else 5 - i / 25) for i, p in enumerate(propositions)
    )
    client.force_login(owner)
    url = reverse("ranking:topic-ranking", args=["long", "loans"])

    first, second = (client.get(url, {"page": page}).content.decode() for page in (1, 2))

    assert "Ranks 99–102 share the Likert mean 1.0." in first and "Ranks 99–102 share the Likert mean 1.0." in second
    assert second.count('<span class="visually-hidden">tied at </span>99</td>') == 2


def test_tie_notes_group_rows_by_their_shared_rank():
    rows = [
        {"rank": 3, "tie_rank": 2, "tie_size": 3, "mu": 25.0, "sigma": 2.0, "likert_mean": 4.0},
        {"rank": 4, "tie_rank": 2, "tie_size": 3, "mu": 25.0, "sigma": 2.0, "likert_mean": 3.0},
        {"rank": 5, "tie_rank": 5, "tie_size": 1, "mu": 24.0, "sigma": 2.0, "likert_mean": 3.0},
        {"rank": 6, "tie_rank": 6, "tie_size": 2, "mu": None, "sigma": None, "likert_mean": None},
    ]

    assert tie_notes(rows) == [
        TieNote(first=2, last=4, compared=True, mu=25.0, sigma=2.0, likert_mean=4.0),
        TieNote(first=6, last=7, compared=False, mu=None, sigma=None, likert_mean=None),
    ]
