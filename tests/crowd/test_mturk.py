"""crowd.marketplaces.mturk.client: clients per environment, wire formats, errors, and HIT recovery by token."""

import uuid
from decimal import Decimal as D
from io import StringIO
from xml.etree import ElementTree

import pytest
from botocore.exceptions import ClientError
from django.core.management import call_command

from config.errors import ApplicationError
from crowd.marketplaces.base import (
    DuplicateRequest,
    InvalidState,
    MarketplaceError,
    MarketplaceUnavailable,
    NotFoundAtMarketplace,
    Publication,
    WorkType,
)
from crowd.marketplaces.mturk import client as mturk

WORK_TYPE = WorkType(
    title="Rate statements",
    description="How important is each?",
    keywords="rating",
    reward=D("0.06"),
    assignment_duration_seconds=600,
    auto_approval_delay_seconds=3600,
)


def test_local_client_talks_to_the_configured_endpoint(settings):
    settings.MTURK_LOCAL_ENDPOINT_URL = "http://127.0.0.1:9/localturk/"
    client = mturk.client_create("local")
    assert client.meta.endpoint_url == "http://127.0.0.1:9/localturk/"
    assert client.meta.region_name == "us-east-1"
    # botocore stores `max_attempts` (retries) as total attempts: one more.
    assert client.meta.config.retries == {"mode": "standard", "total_max_attempts": mturk.MAX_ATTEMPTS + 1}
    # a fixed User-Agent, not botocore's rebuilt for every request
    assert client.meta.config.user_agent.startswith(mturk.USER_AGENT)
    assert client._user_agent_creator.to_string() == client.meta.config.user_agent


def test_sandbox_client_is_constructed_for_the_sandbox_endpoint():
    client = mturk.client_create("sandbox")
    assert client.meta.endpoint_url == "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
    assert client.meta.region_name == "us-east-1"


def test_production_client_exists_only_on_a_production_deployment(settings):
    settings.MTURK_ENVIRONMENT = "sandbox"
    with pytest.raises(ApplicationError) as refused:
        mturk.client_create("production")
    assert refused.value.code == "production_disabled"

    settings.MTURK_ENVIRONMENT = "production"
    client = mturk.client_create("production")
    assert client.meta.endpoint_url == "https://mturk-requester.us-east-1.amazonaws.com"


def test_external_question_escapes_the_url_and_fills_the_frame():
    xml = mturk.external_question("https://example.org/hit/1/?a=1&b=2")
    root = ElementTree.fromstring(xml)
    ns = "{http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd}"
    assert root.tag == f"{ns}ExternalQuestion"
    assert root.findtext(f"{ns}ExternalURL") == "https://example.org/hit/1/?a=1&b=2"
    assert root.findtext(f"{ns}FrameHeight") == "0"
    assert "&amp;" in xml


def test_amounts_are_strings_with_two_decimals():
    assert mturk.amount_text(D("0.06")) == "0.06"
    assert mturk.amount_text(D("5")) == "5.00"
    with pytest.raises(ValueError):
        mturk.amount_text(D("0.065"))


def _client_error(status: int, body: dict) -> ClientError:
    response = {
        "Error": {"Code": body["__type"], "Message": body.get("Message", "")},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    if "TurkErrorCode" in body:
        response["TurkErrorCode"] = body["TurkErrorCode"]
    return ClientError(response, "ApproveAssignment")


@pytest.mark.parametrize(
    "status, body, error_class",
    [
        (400, {"__type": "ThrottlingException", "Message": "Rate exceeded"}, MarketplaceUnavailable),
        (
            500,
            {"__type": "ServiceFault", "Message": "oops", "TurkErrorCode": "AWS.MechanicalTurk.ServiceFault"},
            MarketplaceUnavailable,
        ),
        (503, {"__type": "503"}, MarketplaceUnavailable),
        (400, {"__type": "RequestError", "TurkErrorCode": "AWS.MechanicalTurk.InvalidAssignmentState"}, InvalidState),
        (400, {"__type": "RequestError", "TurkErrorCode": "AWS.MechanicalTurk.HITDoesNotExist"}, NotFoundAtMarketplace),
        (400, {"__type": "RequestError", "TurkErrorCode": "AWS.MechanicalTurk.DuplicateRequest"}, DuplicateRequest),
        (400, {"__type": "RequestError", "TurkErrorCode": "AWS.InvalidParameterValue"}, MarketplaceError),
    ],
)
def test_client_errors_become_our_errors(status, body, error_class):
    error = mturk._error(_client_error(status, body), "ApproveAssignment")
    assert type(error) is error_class
    assert error.marketplace_code == body.get("TurkErrorCode", body["__type"])


@pytest.mark.mturk
def test_a_repeated_token_returns_the_first_hit(local_turk):
    market = mturk.MTurkMarketplace(environment="local")
    type_id = market.work_type_create(WORK_TYPE)
    publication = Publication(
        url=f"{local_turk.base_url}/hit/{uuid.uuid4()}/",
        max_assignments=3,
        lifetime_seconds=3600,
        token=str(uuid.uuid4()),
    )

    first = market.hit_publish(work_type_id=type_id, publication=publication)
    again = market.hit_publish(work_type_id=type_id, publication=publication)

    assert again.hit_id == first.hit_id
    assert [hit["HITId"] for hit in local_turk.hits()] == [first.hit_id]


@pytest.mark.mturk
def test_a_hit_the_refusal_does_not_name_is_found_by_its_url(local_turk):
    market = mturk.MTurkMarketplace(environment="local")
    type_id = market.work_type_create(WORK_TYPE)
    url = f"{local_turk.base_url}/hit/{uuid.uuid4()}/"
    other = Publication(
        url=f"{local_turk.base_url}/hit/{uuid.uuid4()}/", max_assignments=1, lifetime_seconds=3600, token="a"
    )
    market.hit_publish(work_type_id=type_id, publication=other)
    created = market.hit_publish(
        work_type_id=type_id, publication=Publication(url=url, max_assignments=1, lifetime_seconds=3600, token="b")
    )

    found = market._hit_recover(message="This token was used before. (1763791999123)", url=url)

    assert found.hit_id == created.hit_id
    with pytest.raises(MarketplaceError, match="cannot be found"):
        market._hit_recover(message="", url=f"{local_turk.base_url}/hit/{uuid.uuid4()}/")


@pytest.mark.mturk
def test_the_same_work_type_is_reused_by_the_marketplace(local_turk):
    market = mturk.MTurkMarketplace(environment="local")
    assert market.work_type_create(WORK_TYPE) == market.work_type_create(WORK_TYPE)


@pytest.mark.mturk
def test_unknown_hit_is_not_found(local_turk):
    with pytest.raises(NotFoundAtMarketplace):
        mturk.MTurkMarketplace(environment="local").hit_get("3PR3LXCWSFNV4OJWZBHIMQOIJVSX9G")


@pytest.mark.mturk
def test_local_balance_is_read_as_a_decimal(local_turk):
    assert mturk.MTurkMarketplace(environment="local").balance() == D("10000.00")


@pytest.mark.mturk
def test_account_balance_command(local_turk):
    out = StringIO()
    call_command("account_balance", environment="local", stdout=out)
    assert out.getvalue().strip() == "MTurk local: $10000.00 available."
