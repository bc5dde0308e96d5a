"""Fixtures for Prolific: the real client (crowd.marketplaces.prolific.client) talking to the local endpoint on the
live server over loopback HTTP, and participants who act over HTTP as Prolific's would."""

import pytest
import requests

from crowd.marketplaces.prolific import client as prolific
from crowd.marketplaces.prolific import wire
from crowd.marketplaces.prolific.client import ProlificClient
from crowd.marketplaces.prolific.wire import StudySpec

TOKEN = "test-prolific-token"
TASK_URL = "https://tasks.example.org/session/"


def study_spec(**overrides) -> StudySpec:
    """A valid draft: 1.50 for 10 minutes is 9.00 an hour, above Prolific's minimum."""
    fields = {
        "name": "Rate how important statements are",
        "internal_name": "salience-campaign-7-batch-1",
        "description": "Read short statements about a topic and rate how important each one is.",
        "external_study_url": wire.study_url(TASK_URL),
        "total_available_places": 3,
        "reward_cents": 150,
        "estimated_completion_minutes": 10,
        "maximum_allowed_minutes": 30,
        "completion_code": "C0DE1234",
    }
    return StudySpec(**{**fields, **overrides})


@pytest.fixture(autouse=True)
def _own_server_threads_joined(server_threads_joined):
    """Every test here waits for the live server's threads it started (tests/conftest.py)."""


@pytest.fixture
def local_prolific(live_server, settings):
    """Settings of a deployment whose Prolific is the local endpoint on the live server."""
    settings.PROLIFIC_ENVIRONMENT = "local"
    settings.PROLIFIC_API_URL = f"{live_server.url}/localprolific/api/v1/"
    settings.PROLIFIC_API_TOKEN = TOKEN
    settings.PROLIFIC_COMPLETION_URL = f"{live_server.url}/localprolific/submissions/complete?cc={{code}}"
    return live_server.url


@pytest.fixture
def waits(monkeypatch):
    """The client's waits between attempts, recorded instead of slept."""
    recorded: list[float] = []
    monkeypatch.setattr(prolific, "_wait", recorded.append)
    return recorded


@pytest.fixture
def client_factory(local_prolific, waits):
    """Clients on the live server (no real waiting), closed at teardown."""
    clients = []

    def make(**overrides) -> ProlificClient:
        options = {"base_url": f"{local_prolific}/localprolific/api/v1/", "token": TOKEN, "timeout": 10.0, **overrides}
        clients.append(ProlificClient(**options))
        return clients[-1]

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def client(client_factory) -> ProlificClient:
    return client_factory()


class Participant:
    """One participant: starts studies on the local Prolific and follows completion links."""

    def __init__(self, base_url: str, participant_id: str | None = None):
        self.base = base_url
        self.http = requests.Session()
        self.participant_id = participant_id

    def start(self, study_id: str) -> requests.Response:
        body = {"participant_id": self.participant_id} if self.participant_id else {}
        response = self.http.post(f"{self.base}/localprolific/_control/studies/{study_id}/participants", json=body)
        if response.ok:
            self.participant_id = response.json()["participant_id"]
        return response

    def started(self, study_id: str) -> dict:
        response = self.start(study_id)
        assert response.status_code in (200, 201), response.text
        return response.json()

    def follow(self, url: str, **params) -> requests.Response:
        """Open a link the way a browser would (the cookie from `start` goes along)."""
        return self.http.get(url, params=params)

    def close(self) -> None:
        self.http.close()


@pytest.fixture
def participant_factory(local_prolific):
    participants = []

    def make(participant_id: str | None = None) -> Participant:
        participants.append(Participant(local_prolific, participant_id))
        return participants[-1]

    yield make
    for participant in participants:
        participant.close()


@pytest.fixture
def published(client):
    """A published study of three places."""
    return client.study_publish(client.study_create(study_spec()).id)
