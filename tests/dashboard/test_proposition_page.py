"""The page of one proposition (dashboard.proposition_views, ranking.proposition_report): its
scores and place, every Likert label and ordering with its worker and whether it counts."""

import re
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Batch, Proposition
from crowd.models import Assignment, Comparison, LikertLabel, WorkerQuality
from ranking.models import PropositionScore
from tests.factories import (
    AssignmentFactory,
    BatchFactory,
    CampaignFactory,
    PropositionFactory,
    TopicFactory,
    WorkerFactory,
)

pytestmark = pytest.mark.django_db

VERIFIED = Assignment.Verification.VERIFIED
HOSTILE = '<script>alert("x")</script>&<b>bold</b>'


@pytest.fixture
def topic(owner):
    topic = TopicFactory(campaign=CampaignFactory(owner=owner, slug="loans-run"), key="loans")
    subjects = ["Federal aid", "Private lenders", "Cosigners", "Credit unions"]
    propositions = [PropositionFactory(topic=topic, subject=subject) for subject in subjects]
    # Federal aid first; private lenders and cosigners tied (the same μ and σ); credit unions
    # outside the comparison rounds.
    for proposition, mu in zip(propositions, [30.0, 25.0, 25.0, None], strict=True):
        PropositionScore.objects.create(
            proposition=proposition,
            likert_mean=4.2 if mu else 2.0,
            likert_n=5,
            in_comparisons=mu is not None,
            mu=mu,
            sigma=2.0 if mu else None,
            comparisons=8 if mu else 0,
        )
    return topic


def propositions(topic) -> dict[str, Proposition]:
    return {p.subject: p for p in topic.propositions.all()}


def page_url(topic, proposition) -> str:
    return reverse("ranking:proposition", args=[topic.campaign.slug, topic.key, proposition.pk])


def answer(topic, worker, kind=Batch.Kind.LIKERT, **fields) -> Assignment:
    fields.setdefault("verification", VERIFIED)
    return AssignmentFactory(task__batch=BatchFactory(topic=topic, kind=kind), worker=worker, **fields)


def likert(topic, proposition, worker, score, **fields) -> LikertLabel:
    assignment = answer(topic, worker, **fields)
    return LikertLabel.objects.create(assignment=assignment, worker=worker, proposition=proposition, score=score)


def ordering(topic, worker, order, **fields) -> Assignment:
    """One worker's ordering of `order` (best first): a vote for every pair."""
    assignment = answer(topic, worker, kind=Batch.Kind.COMPARISON, answer={"order": [p.pk for p in order]}, **fields)
    Comparison.objects.bulk_create(
        Comparison(assignment=assignment, worker=worker, winner=above, loser=below)
        for index, above in enumerate(order)
        for below in order[index + 1 :]
    )
    return assignment


def plain(html: str) -> str:
    """Text as a user reads it: tags stripped, entities decoded, white space folded."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def text_of(response) -> str:
    return plain(response.content.decode())


def rows_by_worker(response) -> dict[str, list[str]]:
    """The cells of each table row, by the worker id the row's first cell links."""
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", response.content.decode(), re.S):
        cells = [plain(cell) for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)]
        worker = re.search(r">([^<>]+)</a><br>", row)
        if worker:
            rows[unescape(worker.group(1))] = cells
    return rows


def test_every_label_says_whether_it_counts_and_why_not(owner_client, topic):
    federal = propositions(topic)["Federal aid"]
    campaign = topic.campaign
    good, spammer = WorkerFactory(external_id="AGOOD"), WorkerFactory(external_id="ASPAM")
    WorkerQuality.objects.create(campaign=campaign, worker=good)
    WorkerQuality.objects.create(
        campaign=campaign, worker=spammer, computed_status="excluded", computed_reason="failed 3 of 3 traps"
    )
    likert(topic, federal, good, 5)
    likert(topic, federal, spammer, 1)
    likert(topic, federal, WorkerFactory(external_id="APENDING"), 2, verification=Assignment.Verification.PENDING)
    likert(topic, federal, WorkerFactory(external_id="AFORGED"), 1, verification=Assignment.Verification.UNVERIFIED)
    likert(
        topic,
        federal,
        WorkerFactory(external_id="AREJECTED"),
        3,
        status=Assignment.Status.REJECTED,
        reject_reason="every attention check failed",
    )

    response = owner_client.get(page_url(topic, federal))

    assert response.status_code == 200
    text = text_of(response)
    assert "Proposition" in text and "rank 1 of 4" in text
    assert "Subject Federal aid" in text and "Relation offers" in text
    assert "μ ± σ 30.00 ± 2.00" in text and "Likert mean 4.20 (n=5)" in text
    assert "5 labels, 1 counted" in text
    standing = {worker: cells[-1] for worker, cells in rows_by_worker(response).items()}
    assert rows_by_worker(response)["AGOOD"][1] == "5"
    assert standing["AGOOD"] == "counted"
    assert "excluded worker" in standing["ASPAM"] and "“failed 3 of 3 traps”" in standing["ASPAM"]
    assert "pending" in standing["APENDING"] and "not yet confirmed by its channel" in standing["APENDING"]
    assert "unverified" in standing["AFORGED"] and "never confirmed" in standing["AFORGED"]
    assert "rejected" in standing["AREJECTED"] and "“every attention check failed”" in standing["AREJECTED"]
    # Each worker links to their line of the quality report.
    quality = reverse("crowd:campaign-quality", args=[campaign.slug])
    assert f'href="{quality}?worker=ASPAM#workers"' in response.content.decode()


def test_orderings_list_who_was_placed_above_and_below_per_worker(owner_client, topic):
    named = propositions(topic)
    federal, private, cosigners = named["Federal aid"], named["Private lenders"], named["Cosigners"]
    ordering(topic, WorkerFactory(external_id="AFIRST"), [federal, private, cosigners])
    ordering(topic, WorkerFactory(external_id="ASECOND"), [cosigners, private, federal], untouched=True)
    ordering(topic, WorkerFactory(external_id="ALATE"), [private, cosigners], verification="pending")

    response = owner_client.get(page_url(topic, private))

    page = response.content.decode()
    rows = rows_by_worker(response)
    _worker, _submitted, place, above, below, standing = rows["AFIRST"]
    assert place == "2 of 3" and standing == "counted"
    assert above.startswith("Federal aid – offers") and above.endswith("(μ 30.00)")
    assert below.startswith("Cosigners – offers") and "Federal aid" not in below
    _worker, submitted, place, above, below, _standing = rows["ASECOND"]
    assert place == "2 of 3" and "untouched" in submitted
    assert above.startswith("Cosigners") and below.startswith("Federal aid")
    _worker, _submitted, place, above, below, standing = rows["ALATE"]
    assert place == "1 of 2" and above == "none: placed first" and standing.startswith("pending")
    text = text_of(response)
    assert "3 orderings held this proposition; the counted ones give it 4 pairwise votes, 2 won" in text
    # Tied with Cosigners: the same μ and σ.
    assert "rank =2 of 4" in text and "Tied: ranks 2–3 share μ = 25.0 and σ = 2.0" in text
    # The other propositions link to their own pages.
    assert f'href="{page_url(topic, federal)}"' in page and f'href="{page_url(topic, cosigners)}"' in page


def test_the_page_costs_the_same_queries_however_many_labels_and_votes(owner_client, topic, django_user_model):
    named = propositions(topic)
    federal, private, cosigners = named["Federal aid"], named["Private lenders"], named["Cosigners"]
    likert(topic, federal, WorkerFactory(), 4)
    ordering(topic, WorkerFactory(), [federal, private])

    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert owner_client.get(page_url(topic, federal)).status_code == 200
        return len(captured.captured_queries)

    few = count()
    for n in range(12):
        worker = WorkerFactory()
        WorkerQuality.objects.create(
            campaign=topic.campaign, worker=worker, computed_status="excluded" if n % 3 else "ok"
        )
        likert(topic, federal, worker, 1 + n % 5, verification="pending" if n % 4 == 0 else VERIFIED)
        ordering(topic, worker, [cosigners, federal, private] if n % 2 else [federal, private, cosigners])

    assert count() == few


def test_hostile_text_in_every_field_is_escaped(owner_client, owner):
    topic = TopicFactory(campaign=CampaignFactory(owner=owner, slug="hostile"), key="k", description=HOSTILE)
    target = PropositionFactory(
        topic=topic, subject=HOSTILE, relation=HOSTILE, object=HOSTILE, source=HOSTILE, external_id=HOSTILE
    )
    other = PropositionFactory(topic=topic, subject=HOSTILE + " other")
    worker = WorkerFactory(external_id='<img src=x onerror="alert(1)">')
    WorkerQuality.objects.create(
        campaign=topic.campaign,
        worker=worker,
        computed_status="excluded",
        override_status="excluded",
        override_reason=HOSTILE,
    )
    likert(topic, target, worker, 4, assignment_id='<svg onload="alert(2)">')
    likert(topic, target, WorkerFactory(), 2, status=Assignment.Status.REJECTED, reject_reason=HOSTILE)
    ordering(topic, worker, [other, target])

    page = owner_client.get(page_url(topic, target)).content.decode()

    assert "<script>" not in page.split("</header>", 1)[-1].replace('<script src="', "")
    assert "<b>bold</b>" not in page and "<img src=x" not in page and "<svg onload" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&lt;b&gt;bold&lt;/b&gt;" in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
    # The worker's id also goes into a link, encoded.
    assert "?worker=%3Cimg%20src%3Dx%20onerror%3D%22alert%281%29%22%3E#workers" in page


def test_a_trap_is_shown_but_not_ranked(owner_client, topic):
    trap = PropositionFactory(topic=topic, subject="This sentence is not important", trap_kind="obvious")

    text = text_of(owner_client.get(page_url(topic, trap)))

    assert "Obvious trap: not ranked" in text and "In the ranking Obvious trap" in text


def test_the_page_needs_a_login_and_stays_with_its_researcher(client, topic, django_user_model):
    federal = propositions(topic)["Federal aid"]
    response = client.get(page_url(topic, federal))
    assert response.status_code == 302 and response.url.startswith("/accounts/login/")

    client.force_login(django_user_model.objects.create_user("someone-else"))
    assert client.get(page_url(topic, federal)).status_code == 404


def test_a_proposition_of_another_topic_is_not_found(owner_client, topic):
    elsewhere = PropositionFactory(topic=TopicFactory(campaign=topic.campaign, key="other"))

    assert owner_client.get(page_url(topic, elsewhere)).status_code == 404


def test_the_ranking_page_links_each_proposition_to_its_page(owner_client, topic):
    page = owner_client.get(reverse("ranking:topic-ranking", args=[topic.campaign.slug, topic.key])).content.decode()

    for proposition in propositions(topic).values():
        assert f'href="{page_url(topic, proposition)}"' in page
