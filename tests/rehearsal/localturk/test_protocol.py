"""The wire protocol itself: headers, error shapes, dispatch, requester identity."""

import json
import re

import pytest

from rehearsal.localturk import operations
from rehearsal.localturk.models import Requester

pytestmark = pytest.mark.django_db

URL = "/localturk/"
TARGET = "MTurkRequesterServiceV20170117."


def _post(client, operation, body=b"{}", **headers):
    return client.post(
        URL,
        data=body,
        content_type="application/x-amz-json-1.1",
        headers={"X-Amz-Target": TARGET + operation, **headers},
    )


def test_success_carries_content_type_and_request_id(client):
    response = _post(client, "GetAccountBalance", b"")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-amz-json-1.1"
    assert re.fullmatch(r"[0-9a-f-]{36}", response["x-amzn-RequestId"])
    assert json.loads(response.content) == {"AvailableBalance": "10000.00"}


def test_request_error_shape(client):
    response = _post(client, "GetHIT", b'{"HITId": "3PR3LXCWSFNV4OJWZBHIMQOIJVSX9G"}')

    body = json.loads(response.content)
    assert response.status_code == 400
    assert body["__type"] == "RequestError"
    assert body["TurkErrorCode"] == "AWS.MechanicalTurk.HITDoesNotExist"
    assert re.fullmatch(r"Hit 3PR3LXCWSFNV4OJWZBHIMQOIJVSX9G does not exist\. \(\d{13}\)", body["Message"])


@pytest.mark.parametrize("target", ["", "Nope.GetHIT", TARGET + "LaunchRockets"])
def test_unknown_operation(client, target):
    response = client.post(URL, data=b"{}", content_type="application/x-amz-json-1.1", headers={"X-Amz-Target": target})

    assert response.status_code == 400
    assert json.loads(response.content)["__type"] == "UnknownOperationException"


def test_modeled_operation_not_served_locally(client):
    response = _post(client, "GetFileUploadURL", b'{"AssignmentId": "A1", "QuestionIdentifier": "q"}')

    assert response.status_code == 400
    assert json.loads(response.content)["TurkErrorCode"] == "AWS.MechanicalTurk.UnsupportedOperation"


def test_body_that_is_not_json(client):
    response = _post(client, "GetAccountBalance", b"{not json")

    assert response.status_code == 400
    assert json.loads(response.content)["__type"] == "SerializationException"


def test_get_is_not_allowed(client):
    assert client.get(URL).status_code == 405


def test_requester_comes_from_the_credential(client):
    signed = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261122/us-east-1/mturk-requester/aws4_request, Signature=x"

    _post(client, "GetAccountBalance", Authorization=signed)
    _post(client, "GetAccountBalance")

    assert set(Requester.objects.values_list("access_key", flat=True)) == {"AKIDEXAMPLE", "anonymous"}


def test_internal_errors_become_service_faults(client, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("boom")

    monkeypatch.setitem(operations.HANDLERS, "GetAccountBalance", broken)

    response = _post(client, "GetAccountBalance")

    assert response.status_code == 500
    assert json.loads(response.content)["__type"] == "ServiceFault"
