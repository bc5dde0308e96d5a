"""One Prolific study per round (issue 25, "Prolific as documented"): Prolific's Studies API
rate-limits many studies with few participants (api-reference/studies), so a topic's
comparison stage is one study whose places grow with each batch (PATCH of
`total_available_places`, researcher-help "Increase places"), through the real client to the
local endpoint over HTTP. Each batch's quote is still the most it commits; the study stops
when its round ends."""

import random
from decimal import Decimal as D

import pytest
import requests
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from annotation.batching import batch_status_move, comparison_tasks_build
from annotation.models import Batch, Campaign, Topic
from crowd.channels.registry import channels_sync
from crowd.models import LedgerEntry, Study, StudyBatch, TaskHold, WorkSession
from crowd.qc.worker_quality import campaign_quality_refresh
from crowd.simulation.hits import DILIGENT, Judge, SimulatedWorker
from crowd.simulation.sessions import Participant
from crowd.work import ledger
from crowd.work.publishing import batch_publish
from ranking.channel_demo import local_prolific_starter
from rehearsal.localprolific.models import Study as RemoteStudy
from tests.factories import CampaignFactory, PropositionFactory, TopicFactory

pytestmark = [pytest.mark.prolific, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _site(local_prolific, settings, waits):
    cache.clear()
    settings.SITE_URL = local_prolific


def comparison_topic(**campaign_fields) -> Topic:
    """A Prolific topic in its comparison stage: 0.15 a comparison, 2 a session (9.00 an hour at
    the 45 s estimate), 2 answers a task, 15 propositions to group."""
    campaign = CampaignFactory(
        **{
            "channel": Campaign.Channel.PROLIFIC,
            "trap_rate": 0,
            "tasks_per_session": 2,
            "assignments_per_hit": 2,
            "comparison_reward": D("0.15"),
            **campaign_fields,
        }
    )
    topic = TopicFactory(campaign=campaign, state=Topic.State.COMPARISONS)
    PropositionFactory.create_batch(15, topic=topic)
    return topic


def comparison_batch(topic: Topic, number: int, groups: int) -> Batch:
    """Comparison batch `number`: `groups` tasks of 5 propositions, 2 answers each."""
    ids = list(topic.propositions.order_by("pk").values_list("pk", flat=True))
    batch = comparison_tasks_build(
        topic=topic, groups=[ids[(g * 5) % 15 : (g * 5) % 15 + 5] for g in range(groups)], number=number
    )
    batch.tasks.update(assignments_needed=2)
    return batch


def _session(base_url: str, study: Study, name: str) -> int:
    participant = Participant(
        SimulatedWorker(worker_id=name, behaviour=DILIGENT, noise=0.5), Judge(seed=1), random.Random(name)
    )
    url = local_prolific_starter(base_url)(participant.http, study.study_id, name)
    done = 0 if url is None else participant.session_work(participant.http.get(url, timeout=30))[0]
    participant.http.close()
    return done  # 0 when Prolific turned them away (the study full)


def _charges(base_url: str, study: Study) -> dict:
    answer = requests.get(f"{base_url}/localprolific/_control/charges", params={"study": study.study_id}, timeout=10)
    [charges] = answer.json()["studies"]
    money = ("reward", "fee", "funded", "charged", "refunded", "reserved")
    return {key: D(value) / 100 if key in money else value for key, value in charges.items()}


def _totals(campaign) -> dict[str, D]:
    totals = {kind: D("0.00") for kind in LedgerEntry.Kind.values}
    for kind, amount in LedgerEntry.objects.filter(campaign=campaign).values_list("kind", "amount"):
        totals[kind] += amount
    return totals


def test_comparison_batches_grow_one_study_each_committing_its_quote(local_prolific):
    topic = comparison_topic()
    campaign = topic.campaign
    first, second, third = (comparison_batch(topic, n, groups) for n, groups in ((1, 3), (2, 2), (3, 1)))
    quotes = []
    for batch in (first, second, third):
        quotes.append(ledger.batch_cost(batch=batch))
        batch_publish(batch_id=batch.pk)

    study = Study.objects.get()  # one study for the comparison stage
    assert RemoteStudy.objects.count() == 1  # one study created at Prolific, not one per batch
    # One task of 2 answers needs 2 participants (nobody does a task twice): 2 places.
    assert [link.places for link in StudyBatch.objects.filter(study=study)] == [3, 2, 2]
    assert study.places == 7 and _charges(local_prolific, study)["places"] == 7  # grown 3 → 5 → 7 through PATCH
    assert Study.objects.of_batch(third).get() == study
    # Each batch commits its own quote, booked to it, at the study's session reward plus the fee.
    committed = dict(LedgerEntry.objects.filter(campaign=campaign, kind="committed").values_list("reference", "amount"))
    assert committed == {
        f"batch:{first.pk}:places:3": quotes[0],
        f"batch:{second.pk}:places:2": quotes[1],
        f"batch:{third.pk}:places:2": quotes[2],
    }
    assert quotes[0] == 3 * D("0.43") and sum(quotes) == _charges(local_prolific, study)["funded"] == D("3.01")


def test_sessions_take_tasks_from_every_open_batch_and_the_study_stops_when_the_stage_ends(local_prolific):
    topic = comparison_topic()
    campaign = topic.campaign
    first, second = comparison_batch(topic, 1, 3), comparison_batch(topic, 2, 2)
    batch_publish(batch_id=first.pk)
    study = Study.objects.get()
    batch_publish(batch_id=second.pk)  # joins while the first is still open
    study.refresh_from_db()
    assert study.places == 5

    done = [_session(local_prolific, study, f"P{number:023d}") for number in range(6)]

    assert sum(done) == 10 and done[-1] == 0  # 10 answers over 5 places; the sixth found the study full
    holds = TaskHold.objects.filter(submitted_at__isnull=False)
    assert {hold.task.batch_id for hold in holds} == {first.pk, second.pk}
    assert {hold.session.study_id for hold in holds} == {study.pk}
    assert len({(hold.session.worker_id, hold.task_id) for hold in holds}) == holds.count()  # no task twice
    channels_sync()
    campaign_quality_refresh(campaign_id=campaign.pk)
    channels_sync()  # the submissions approved
    for batch in (first, second):
        batch_status_move(batch_id=batch.pk, to=Batch.Status.COMPLETE)
    channels_sync()

    study.refresh_from_db()
    assert study.ended_at is None and study.status != "AWAITING REVIEW"  # the stage goes on: not stopped
    assert not _charges(local_prolific, study)["refunded"]

    Topic.objects.filter(pk=topic.pk).update(state=Topic.State.DONE)
    channels_sync()  # the stage ended: stopped, completed, unused places given back

    study.refresh_from_db()
    charges, totals = _charges(local_prolific, study), _totals(campaign)
    assert study.ended_at is not None and study.status == charges["status"] == "COMPLETED"
    assert totals["spent"] == charges["charged"] == 5 * D("0.43")
    assert totals["committed"] - totals["released"] - totals["spent"] == charges["reserved"] == 0
    assert WorkSession.objects.filter(study=study, submission_status="APPROVED").count() == 5


def test_a_new_batch_reopens_a_study_prolific_completed_between_batches(local_prolific):
    """Every place of the first batch approved: Prolific completes the study; the next batch's
    places make it active again (researcher-help, "Increase places"), and it stays ours."""
    topic = comparison_topic()
    campaign = topic.campaign
    first = comparison_batch(topic, 1, 2)  # 4 answers, 2 places
    batch_publish(batch_id=first.pk)
    study = Study.objects.get()
    assert [_session(local_prolific, study, f"A{n:023d}") for n in range(2)] == [2, 2]
    channels_sync()
    campaign_quality_refresh(campaign_id=campaign.pk)
    channels_sync()
    assert _charges(local_prolific, study)["status"] == "COMPLETED"
    batch_status_move(batch_id=first.pk, to=Batch.Status.COMPLETE)
    channels_sync()
    assert Study.objects.get().ended_at is None  # the stage is not over

    second = comparison_batch(topic, 2, 2)
    batch_publish(batch_id=second.pk)

    study.refresh_from_db()
    assert (study.places, _charges(local_prolific, study)["status"]) == (4, "ACTIVE")
    assert _session(local_prolific, study, f"A{0:023d}") == 0  # one submission per participant per study
    assert [_session(local_prolific, study, f"B{n:023d}") for n in range(2)] == [2, 2]
    assert RemoteStudy.objects.count() == 1


def test_the_channel_page_shows_each_batch_commitment_and_the_round_charge(local_prolific, owner):
    owner_client = Client()  # this package's `client` fixture is Prolific's
    owner_client.force_login(owner)
    topic = comparison_topic(owner=owner, slug="rounds")
    first, second = comparison_batch(topic, 1, 3), comparison_batch(topic, 2, 2)
    for batch in (first, second):
        batch_publish(batch_id=batch.pk)

    page = owner_client.get(reverse("crowd:campaign-channel", args=["rounds"])).content.decode()

    study = Study.objects.get()
    assert page.count(f'data-study="{study.study_id}"') == 1
    assert f'data-study-batch="{first.pk}"' in page and f'data-study-batch="{second.pk}"' in page
    assert "+3" in page and "+2" in page
    assert "$1.29" in page and "$0.86" in page and "$2.15" in page  # per batch, and the round's total


def test_a_raise_made_stale_by_the_next_batchs_places_is_dropped_not_left_pending(local_prolific, owner, monkeypatch):
    """The first batch's last session ends short, so sync asks for a third place. Before the
    owner says yes, the stage's next batch joins the study with places of its own: the ask
    is stale. The next sync drops it; the campaign page says it is not needed any more and
    offers no button; a yes to it is refused, saying so; nothing was committed for it."""
    from crowd.channels.prolific import raises
    from crowd.models import PlacesRaise
    from tests.crowd.channels.prolific.test_quote import starve_after_one_task

    owner_client = Client()  # this package's `client` fixture is Prolific's
    owner_client.force_login(owner)
    topic = comparison_topic(owner=owner, slug="stale")
    campaign = topic.campaign
    first = comparison_batch(topic, 1, 2)  # 4 answers, 2 places
    batch_publish(batch_id=first.pk)
    study = Study.objects.get()
    starve_after_one_task(monkeypatch, f"B{0:023d}")
    assert [_session(local_prolific, study, f"{name}{0:023d}") for name in ("A", "B")] == [2, 1]
    channels_sync()
    [stale] = PlacesRaise.objects.all()
    assert (stale.places_from, stale.places_to, stale.missing) == (2, 3, 1)
    assert raises.raises_pending(campaign=campaign) == [stale.pk]
    committed = ledger.campaign_money(campaign=campaign).committed

    second = comparison_batch(topic, 2, 2)
    batch_publish(batch_id=second.pk)  # 2 more places, the study's own
    channels_sync()

    stale.refresh_from_db()
    assert stale.dropped_at is not None and stale.approved_at is None
    assert raises.raises_pending(campaign=campaign) == []
    page = owner_client.get(reverse("dashboard:campaign", args=["stale"])).content.decode()
    assert f'data-raise="{stale.pk}" data-raise-state="dropped"' in page
    assert "Not needed any more" in page
    assert reverse("dashboard:raise-approve", args=["stale", stale.pk]) not in page
    answer = owner_client.post(reverse("dashboard:raise-approve", args=["stale", stale.pk]), follow=True)
    assert "no longer needs these places: nothing to approve" in answer.content.decode()
    stale.refresh_from_db()
    assert stale.approved_at is None
    assert ledger.campaign_money(campaign=campaign).committed - committed == D("0.86")  # the second batch's quote
