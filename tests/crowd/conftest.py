"""Fixtures for the app side of the marketplace: the local endpoint on the live server,
reached through crowd.marketplaces.mturk.client (real boto3 over loopback HTTP), and workers that act as people
do — through the local worker site, our HIT pages and the local externalSubmit."""

from urllib.parse import urlencode, urljoin

import pytest
import requests

from crowd.marketplaces.mturk import client as mturk
from crowd.simulation.hits import EXTERNAL_SUBMIT_FORM_ID, HIT_FORM_ID, forms_parse
from rehearsal.localturk import faults


class TurkWorker:
    """One worker, driving the same HTTP path as the simulated crowd, step by step."""

    def __init__(self, base_url: str, worker_id: str):
        self.base = base_url
        self.worker_id = worker_id
        self.http = requests.Session()

    def accept(self, hit_id: str) -> dict:
        response = self.http.post(
            f"{self.base}/localturk/worker/accept/{hit_id}/?format=json", data={"workerId": self.worker_id}
        )
        assert response.status_code == 200, response.text
        return response.json()

    def store(self, page_url: str, *, score: int = 3, order: list[int] | None = None) -> requests.Response:
        """Load the HIT page and post its form to our submit view; the page that comes back."""
        page = self.http.get(page_url)
        assert page.status_code == 200, page.text
        form = forms_parse(page.text)[HIT_FORM_ID]
        answer = [(name, str(score)) for name in form.radios]
        if order is not None:
            answer = [("order", ",".join(map(str, order)))]
        answered = {name for name, _ in answer}
        data = [(name, value) for name, value in form.hidden if name not in answered] + answer
        stored = self.http.post(urljoin(page.url, form.action), data=data)
        assert stored.status_code == 200, stored.text
        return stored

    def external_submit(self, stored: requests.Response) -> requests.Response:
        form = forms_parse(stored.text)[EXTERNAL_SUBMIT_FORM_ID]
        return self.http.post(urljoin(stored.url, form.action) + "?format=json", data=form.hidden)

    def complete(self, hit_id: str, *, score: int = 3) -> str:
        """The whole path: accept, our page, externalSubmit. Returns the assignment id."""
        accepted = self.accept(hit_id)
        sent = self.external_submit(self.store(accepted["url"], score=score))
        assert sent.status_code == 200, sent.text
        return accepted["assignmentId"]

    def submit_to_mturk_only(self, hit_id: str, fields: dict) -> str:
        """Accept, then post the answer straight to externalSubmit: our page never sees it."""
        accepted = self.accept(hit_id)
        response = self.http.post(
            f"{self.base}/localturk/mturk/externalSubmit?format=json",
            data={"assignmentId": accepted["assignmentId"], **fields},
        )
        assert response.status_code == 200, response.text
        return accepted["assignmentId"]

    def forge(self, *, task_uuid, hit_id: str, assignment_id: str, score: int = 5) -> requests.Response:
        """Post to our page with an assignment MTurk never issued (nothing is sent to MTurk)."""
        query = urlencode(
            {
                "assignmentId": assignment_id,
                "hitId": hit_id,
                "workerId": self.worker_id,
                "turkSubmitTo": f"{self.base}/localturk",
            }
        )
        return self.store(f"{self.base}/hit/{task_uuid}/?{query}", score=score)


class LocalTurk:
    def __init__(self, base_url: str):
        self.base_url = base_url

    @property
    def client(self):
        """The app's own boto3 client for the local environment, for reading back."""
        return mturk.client_create("local")

    def worker(self, worker_id: str) -> TurkWorker:
        return TurkWorker(self.base_url, worker_id)

    def hits(self) -> list[dict]:
        return [hit for page in self.client.get_paginator("list_hits").paginate() for hit in page["HITs"]]

    inject = staticmethod(faults.inject)


@pytest.fixture
def local_turk(live_server, settings):
    """The local endpoint and our HIT pages on the live server; campaigns in environment local."""
    settings.MTURK_ENVIRONMENT = "local"
    settings.SITE_URL = live_server.url
    settings.MTURK_LOCAL_ENDPOINT_URL = live_server.url + "/localturk/"
    return LocalTurk(live_server.url)
