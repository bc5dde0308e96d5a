"""N1 (issue 24): a researcher's decisions about a worker reach only workers who answered in
her campaign, and a block only her own campaigns, never another owner's.

Over HTTP with Django's test client, against the local MTurk endpoint. Ada and Bob each own a
published campaign on the one MTurk requester account the site has. ASHARED worked for both,
AONLYBOB for Bob only, AONLYADA for Ada only. Ada (a staff researcher with the apps'
permissions) tries every decision on the workers she can name.
"""

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from crowd.models import HIT, Worker, WorkerBlock, WorkerDecision, WorkerQuality
from crowd.work.publishing import batch_publish
from crowd.work.sync import assignments_sync
from tests.attacks.test_admin_scope import researcher, signed_in
from tests.crowd.factories import likert_batch

pytestmark = [pytest.mark.attacks, pytest.mark.mturk, pytest.mark.django_db(transaction=True)]


class Market:
    def __init__(self, local_turk):
        self.turk = local_turk
        self.ada, self.bob = researcher("ada"), researcher("bob")
        self.batch_a = likert_batch(propositions=5, assignments_per_hit=3, owner=self.ada, qc_block_excluded=True)
        self.batch_b = likert_batch(propositions=5, assignments_per_hit=3, owner=self.bob)
        self.a, self.b = self.batch_a.topic.campaign, self.batch_b.topic.campaign
        for batch in (self.batch_a, self.batch_b):
            batch_publish(batch_id=batch.pk)
        hit_a = HIT.objects.get(task__batch=self.batch_a).hit_id
        hit_b = HIT.objects.get(task__batch=self.batch_b).hit_id
        for worker, hits in (("ASHARED", [hit_a, hit_b]), ("AONLYBOB", [hit_b]), ("AONLYADA", [hit_a])):
            for hit in hits:
                local_turk.worker(worker).complete(hit)
        assignments_sync()
        self.as_ada = signed_in(self.ada)

    def worker(self, external_id: str) -> Worker:
        return Worker.objects.get(external_id=external_id)

    def mturk_blocks(self) -> list[str]:
        return [block["WorkerId"] for block in self.turk.client.list_worker_blocks()["WorkerBlocks"]]

    def page(self, batch, worker: str) -> str:
        task = batch.tasks.get()
        url = f"/hit/{task.uuid}/?assignmentId=ANOTHERASSIGNMENT&hitId=H&workerId={worker}"
        return self.as_ada.get(url).content.decode()

    def override(self, campaign, worker: Worker, status: str = "excluded"):
        url = reverse("crowd:worker-override", kwargs={"slug": campaign.slug, "worker_id": worker.pk})
        return self.as_ada.post(url, {"status": status, "reason": "Answers at random."}, follow=True)


@pytest.fixture
def market(local_turk):
    return Market(local_turk)


def _messages(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def test_a_worker_who_never_answered_in_her_campaign_is_refused(market):
    stranger = market.worker("AONLYBOB")

    response = market.override(market.a, stranger)

    assert response.status_code == 200
    assert any("never answered in this campaign" in message for message in _messages(response))
    assert not WorkerQuality.objects.filter(worker=stranger).exists()
    assert not WorkerDecision.objects.filter(worker=stranger).exists()
    assert not WorkerBlock.objects.exists() and market.mturk_blocks() == []
    assert "not available to you" not in market.page(market.batch_b, "AONLYBOB")


def test_a_superuser_s_block_at_a_campaign_the_worker_never_worked_in_is_refused(market):
    from django.contrib.auth import get_user_model

    root = get_user_model().objects.create_superuser("root", password="pw-for-tests-only")
    stranger = market.worker("AONLYBOB")

    response = signed_in(root).post(
        reverse("admin:crowd_worker_changelist"),
        {
            "action": "block_workers",
            "_selected_action": [stranger.pk],
            "apply": "1",
            "campaign": market.a.pk,
            "reason": "Blocked where they never worked.",
        },
        follow=True,
    )

    assert any("never answered in this campaign" in message for message in _messages(response))
    assert not WorkerBlock.objects.exists() and market.mturk_blocks() == []


def test_her_block_of_a_shared_worker_reaches_only_her_campaigns(market):
    shared = market.worker("ASHARED")

    market.override(market.a, shared)  # her campaign's block policy blocks whom she excludes

    block = WorkerBlock.objects.get()
    assert (block.campaign, block.worker, block.at_marketplace) == (market.a, shared, False)
    assert "not available to you" in market.page(market.batch_a, "ASHARED")
    assert "not available to you" not in market.page(market.batch_b, "ASHARED")  # Bob's task still offered
    assert market.mturk_blocks() == []  # MTurk's block is account-wide: Bob's work is at stake
    assert not market.worker("ASHARED").blocked
    decision = WorkerDecision.objects.get(action="block")
    assert decision.campaign == market.a and "on our pages only" in decision.reason

    # Bob's worker list says nothing of Ada's block.
    bob_api = signed_in(market.bob)
    listed = bob_api.get(f"/api/campaigns/{market.b.slug}/workers/").json()["results"]
    assert {row["external_id"]: row["blocked"] for row in listed} == {"AONLYBOB": False, "ASHARED": False}


def test_her_block_of_a_worker_only_she_employed_reaches_the_marketplace(market):
    only_hers = market.worker("AONLYADA")

    response = market.as_ada.post(
        reverse("admin:crowd_worker_changelist"),
        {
            "action": "block_workers",
            "_selected_action": [only_hers.pk],
            "apply": "1",
            "campaign": market.a.pk,
            "reason": "Copies answers.",
        },
        follow=True,
    )

    assert "1 done." in _messages(response)
    assert market.mturk_blocks() == ["AONLYADA"]
    assert WorkerBlock.objects.get().at_marketplace is True
    assert "not available to you" in market.page(market.batch_a, "AONLYADA")
