"""Injected throttling, service faults and latency, against boto3's standard retries."""

import pytest
import requests

from rehearsal.localturk import faults
from rehearsal.localturk.models import HIT, Fault

from .conftest import hit_create

pytestmark = pytest.mark.mturk


def test_throttling_is_retried_until_it_succeeds(mturk, hit_type_id):
    faults.inject(throttle=2)

    hit = hit_create(mturk, hit_type_id)

    assert HIT.objects.get().hit_id == hit["HITId"]
    assert faults.active() == []


def test_service_fault_is_retried(mturk):
    faults.inject(service_fault=1)

    response = mturk.get_account_balance()

    assert response["AvailableBalance"] == "10000.00"
    assert response["ResponseMetadata"]["RetryAttempts"] == 1


def test_faults_beyond_the_retries_reach_the_caller(mturk_factory):
    client = mturk_factory(attempts=2)
    faults.inject(service_fault=3)

    with pytest.raises(client.exceptions.ServiceFault):
        client.get_account_balance()
    assert faults.active()[0]["remaining"] == 1


def test_throttling_beyond_the_retries_reaches_the_caller(mturk_factory, hit_type_id):
    client = mturk_factory(attempts=1)
    faults.inject(throttle=1)

    with pytest.raises(client.exceptions.ClientError) as error:
        hit_create(client, hit_type_id)

    assert error.value.response["Error"] == {"Code": "ThrottlingException", "Message": "Rate exceeded"}
    assert HIT.objects.count() == 0


def test_faults_can_target_operations(mturk_factory, hit_type_id):
    client = mturk_factory(attempts=1)
    faults.inject(service_fault=1, operations=["CreateHITWithHITType"])

    client.get_account_balance()
    with pytest.raises(client.exceptions.ServiceFault):
        hit_create(client, hit_type_id)
    hit_create(client, hit_type_id)

    assert HIT.objects.count() == 1


def test_latency_is_added_to_matching_calls(mturk, monkeypatch):
    waits = []
    monkeypatch.setattr(faults, "sleep", waits.append)
    faults.inject(latency_ms=250, latency_calls=2)

    for _ in range(3):
        mturk.get_account_balance()

    assert waits == [250, 250]


def test_control_api(live_server, mturk_factory):
    url = f"{live_server.url}/localturk/_control/faults"
    client = mturk_factory(attempts=1)

    created = requests.post(url, json={"throttle": 1, "operations": ["GetAccountBalance"]})
    listed = requests.get(url).json()
    refused = requests.post(url, json={"throttle": -1})
    with pytest.raises(client.exceptions.ClientError):
        client.get_account_balance()
    requests.post(url, json={"latency_ms": 10})
    cleared = requests.delete(url)

    assert created.status_code == 201
    assert listed == {
        "faults": [{"kind": "throttle", "remaining": 1, "latency_ms": 0, "operations": ["GetAccountBalance"]}]
    }
    assert refused.status_code == 400
    assert cleared.status_code == 204 and Fault.objects.count() == 0
