"""Fixtures for the local MTurk endpoint: a real boto3 client on the live server, and a
worker that drives the simulator over HTTP the way the simulated crowd will."""

import boto3
import botocore.config
import pytest
import requests

EXTERNAL_QUESTION = (
    '<ExternalQuestion xmlns="http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/'
    'ExternalQuestion.xsd"><ExternalURL>https://tasks.example.org/hit/42?x=1&amp;y=2</ExternalURL>'
    "<FrameHeight>0</FrameHeight></ExternalQuestion>"
)
HIT_TYPE = {
    "Title": "Rate five statements",
    "Description": "How important is each statement for the topic?",
    "Reward": "0.06",
    "AssignmentDurationInSeconds": 600,
    "AutoApprovalDelayInSeconds": 86400,
    "Keywords": "rating,importance",
}


def client_for(live_server, *, attempts: int = 3, access_key: str = "AKIDLOCAL"):
    client = boto3.client(
        "mturk",
        region_name="us-east-1",
        endpoint_url=live_server.url + "/localturk/",
        aws_access_key_id=access_key,
        aws_secret_access_key="x",
        config=botocore.config.Config(retries={"mode": "standard", "total_max_attempts": attempts}),
    )
    return client


@pytest.fixture(autouse=True)
def _server_threads_finished(server_threads_joined):
    """Every test here waits for the live server's threads it started (tests/conftest.py)."""


@pytest.fixture
def mturk_factory(live_server):
    """Clients on the live server, closed at teardown so no kept-alive connection (and no
    server thread waiting on it) outlives the test."""
    clients = []

    def make(**kwargs):
        clients.append(client_for(live_server, **kwargs))
        return clients[-1]

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def mturk(mturk_factory):
    return mturk_factory()


@pytest.fixture
def hit_type_id(mturk):
    return mturk.create_hit_type(**HIT_TYPE)["HITTypeId"]


def hit_create(mturk, hit_type_id, **overrides) -> dict:
    params = {"HITTypeId": hit_type_id, "LifetimeInSeconds": 3600, "MaxAssignments": 3, "Question": EXTERNAL_QUESTION}
    return mturk.create_hit_with_hit_type(**{**params, **overrides})["HIT"]


class SimulatedWorker:
    """One worker on the simulator's JSON endpoints."""

    def __init__(self, base_url: str, worker_id: str):
        self.base = base_url + "/localturk"
        self.worker_id = worker_id

    def accept(self, hit_id: str) -> requests.Response:
        return requests.post(f"{self.base}/worker/accept/{hit_id}/?format=json", data={"workerId": self.worker_id})

    def submit(self, assignment_id: str, **fields) -> requests.Response:
        data = {"assignmentId": assignment_id, **fields}
        return requests.post(f"{self.base}/mturk/externalSubmit?format=json", data=data)

    def release(self, assignment_id: str, action: str = "return") -> requests.Response:
        url = f"{self.base}/worker/{action}/{assignment_id}/?format=json"
        return requests.post(url, data={"workerId": self.worker_id})

    def complete(self, hit_id: str, **fields) -> str:
        """Accept and submit; the assignment id."""
        accepted = self.accept(hit_id)
        assert accepted.status_code == 200, accepted.text
        assignment_id = accepted.json()["assignmentId"]
        submitted = self.submit(assignment_id, **(fields or {"answer": "3"}))
        assert submitted.status_code == 200, submitted.text
        return assignment_id


@pytest.fixture
def worker_factory(live_server):
    def make(worker_id: str) -> SimulatedWorker:
        return SimulatedWorker(live_server.url, worker_id)

    return make
