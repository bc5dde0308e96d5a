"""The endpoint's meter (rehearsal/localturk/meter.py): calls per operation, calls in flight
and CPU per call, read and reset over HTTP; nothing else is accepted."""

import pytest
import requests
from django.utils import timezone

from rehearsal.localturk import faults, state
from rehearsal.localturk.models import HIT

from .conftest import HIT_TYPE, hit_create

pytestmark = pytest.mark.mturk


def test_the_meter_counts_each_call_and_its_cpu_and_resets(live_server, mturk_factory):
    url = f"{live_server.url}/localturk/_control/calls"
    client = mturk_factory(attempts=1)
    assert requests.delete(url, timeout=10).status_code == 204

    client.get_account_balance()
    client.get_account_balance()
    figures = requests.get(url, timeout=10).json()
    forged = requests.post(url, json={"calls": 0, "peak_in_flight": 0}, timeout=10)
    requests.delete(url, timeout=10)
    after = requests.get(url, timeout=10).json()

    assert figures["calls"] == 2 and figures["in_flight"] == 0 and figures["peak_in_flight"] == 1
    assert figures["operations"]["GetAccountBalance"]["calls"] == 2
    assert figures["cpu_ms_per_call"] > 0
    assert forged.status_code == 405  # read and reset only
    assert (after["calls"], after["peak_in_flight"], after["operations"]) == (0, 0, {})


def test_the_meter_counts_each_calls_queries_and_a_create_with_a_new_token_runs_six(
    live_server, mturk_factory, monkeypatch
):
    url = f"{live_server.url}/localturk/_control/calls"
    client = mturk_factory(attempts=1)
    hit_type_id = client.create_hit_type(**HIT_TYPE)["HITTypeId"]  # this process's clock swept, or had
    monkeypatch.setattr(state, "SWEEP_SECONDS", 3600)  # and sweeps no more: each call costs its own queries only
    assert requests.delete(url, timeout=10).status_code == 204

    created = hit_create(client, hit_type_id, UniqueRequestToken="task-1")
    first = requests.get(url, timeout=10).json()["operations"]["CreateHITWithHITType"]
    requests.delete(url, timeout=10)
    faults.inject(latency_ms=1, operations=["GetHIT"])  # a switch that applies to other calls
    with pytest.raises(client.exceptions.RequestError):
        hit_create(client, hit_type_id, UniqueRequestToken="task-1")  # a retry: refused, nothing written
    retry = requests.get(url, timeout=10).json()["operations"]["CreateHITWithHITType"]

    # Whether any fault switch is set (none is) and the requester, in one statement (1), the HIT
    # type (1), the HIT (1), the token in a savepoint (3: no statement for expired tokens first).
    assert (first["calls"], first["queries_per_call"]) == (1, 6)
    # A retry, with a switch set: the live switches are read (+1; none used up, so no second
    # look); the token's insert fails, its savepoint is rolled back and let go (+1), the earlier
    # record is read (+1); the call's transaction takes its HIT back.
    assert (retry["calls"], retry["queries_per_call"]) == (1, 9)
    assert [hit["HITId"] for hit in client.list_hits()["HITs"]] == [created["HITId"]]


def test_an_approval_runs_three_statements_and_keeps_its_hits_counters_as_a_refresh_derives_them(
    live_server, mturk_factory, worker_factory, monkeypatch
):
    url = f"{live_server.url}/localturk/_control/calls"
    client = mturk_factory(attempts=1)
    hit_id = hit_create(client, client.create_hit_type(**HIT_TYPE)["HITTypeId"])["HITId"]
    approved, rejected, overridden = (
        worker_factory(f"AWORKER{n:07d}").complete(hit_id) for n in range(3)
    )  # every slot of the 3 submitted
    monkeypatch.setattr(state, "SWEEP_SECONDS", 3600)  # no sweep from here: each call costs its own queries
    assert requests.delete(url, timeout=10).status_code == 204

    client.approve_assignment(AssignmentId=approved)
    approval = requests.get(url, timeout=10).json()["operations"]["ApproveAssignment"]
    client.reject_assignment(AssignmentId=rejected, RequesterFeedback="Not done.")
    client.reject_assignment(AssignmentId=overridden, RequesterFeedback="Not done.")
    client.approve_assignment(AssignmentId=overridden, OverrideRejection=True)

    # Whether any fault switch is set with the requester, the assignment with its HIT and HIT
    # type, then the writes in one statement (the assignment's, the balance's, the HIT's count).
    assert (approval["calls"], approval["queries_per_call"]) == (1, 3)
    hit = client.get_hit(HITId=hit_id)["HIT"]
    assert (hit["NumberOfAssignmentsCompleted"], hit["NumberOfAssignmentsAvailable"]) == (3, 0)
    assert (hit["NumberOfAssignmentsPending"], hit["HITStatus"]) == (0, "Reviewable")
    stored = HIT.objects.get(hit_id=hit_id)
    counters = (stored.status, stored.pending, stored.available, stored.completed)
    state.hit_refresh(hit=stored, now=timezone.now())  # derived from the assignments afresh
    assert (stored.status, stored.pending, stored.available, stored.completed) == counters
