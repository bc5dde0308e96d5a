"""schemathesis against the REST API's own OpenAPI schema (GET /api/schema/), loaded from
and run through Django's WSGI application in this process, as a researcher with a DRF
token who owns a campaign with topics, propositions, scores, batches, HITs and workers.

Every operation gets generated requests, valid and invalid; path parameters name the
researcher's real campaign and topics half of the time, so calls reach the data instead of
stopping at a 404. Checks: no 5xx; status codes, content types, headers and bodies as the
schema documents them; authentication enforced; undocumented methods refused; required
headers required. Not checked, because the API does not pass them and is not wrong to:
positive_data_acceptance (DRF validates more than a schema says: no NUL, no blank names,
wrong credentials are a 400) and negative_data_rejection (pagination reads `?page=` as
page 1).
"""

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import override_settings
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    missing_required_header,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from annotation.models import Proposition
from crowd.models import WorkerQuality
from ranking.models import PropositionScore, RankingSnapshot
from tests.factories import AssignmentFactory, BatchFactory, HITFactory, TaskFactory, WorkerFactory
from tests.fuzz.examples import FUZZ

pytestmark = pytest.mark.django_db
CAMPAIGN_SLUG = "fuzz"  # conftest.campaign

# Loaded once, at collection, through the WSGI app: the schema view needs no database, and no
# login with the setting that opens it. (The fixture-based loader, schemathesis.pytest.from_fixture,
# does not run under pytest 9: it sets Node._nodeid, which pytest 9 removed.)
with override_settings(API_DOCS_PUBLIC=True):
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", WSGIHandler())

REAL_PATH_VALUES = {
    "slug": st.just(CAMPAIGN_SLUG),
    "campaign_slug": st.just(CAMPAIGN_SLUG),
    "topic_key": st.sampled_from(["loans", "bees"]),
    "id": st.integers(0, 10**6).map(str),
}


@schema.hook
def flatmap_path_parameters(context, path_parameters):
    """Half of the cases name the researcher's campaign and topics instead of random ones."""
    real = {name: REAL_PATH_VALUES[name] for name in path_parameters or () if name in REAL_PATH_VALUES}
    if not real:
        return st.just(path_parameters)
    generated = {name: st.just(value) for name, value in path_parameters.items()}
    return st.one_of(st.just(path_parameters), st.fixed_dictionaries({**generated, **real}))


# Every status the API answers is documented (config/schema.py adds the error responses),
# so the status code check runs without exceptions.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    ignored_auth,
    unsupported_method,
    missing_required_header,
]


@pytest.fixture(autouse=True)
def _requests_inside_the_test_transaction():
    """After each request Django closes a connection that is not in autocommit mode, which
    would end the transaction the test database lives in; Django's test client disconnects
    the same receivers."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def campaign_with_data(campaign):
    """The conftest campaign (topics loans and bees) with a ranking, a batch, a HIT, an
    answered assignment and a worker's quality figures."""
    assert campaign.slug == CAMPAIGN_SLUG
    loans = campaign.topics.get(key="loans")
    first, second = Proposition.objects.filter(topic=loans).order_by("id")
    PropositionScore.objects.create(
        proposition=first, likert_mean=4.2, likert_n=5, in_comparisons=True, mu=30.0, sigma=1.0, comparisons=12, rank=1
    )
    PropositionScore.objects.create(proposition=second, likert_mean=3.0, likert_n=5, rank=2)
    RankingSnapshot.objects.create(
        topic=loans, number=1, comparisons_used=10, spearman_previous=0.9, ranking=[[first.pk, 30.0, 1.0]]
    )
    task = TaskFactory(batch=BatchFactory(topic=loans), propositions=[first, second])
    worker = WorkerFactory()
    AssignmentFactory(task=task, worker=worker, hit=HITFactory(task=task))
    WorkerQuality.objects.create(campaign=campaign, worker=worker)
    return campaign


@pytest.fixture
def researcher_token(campaign_with_data) -> str:
    return Token.objects.create(user=campaign_with_data.owner).key


# One test per operation, named by it. (schemathesis's own `schema.parametrize()` gives every
# operation the same node id under pytest 9, and pytest-xdist, which `make test` runs, then runs
# one of them.)
OPERATIONS = [result.ok() for result in schema.get_all_operations()]


@pytest.mark.parametrize("operation", OPERATIONS, ids=[operation.label for operation in OPERATIONS])
def test_the_api_conforms_to_its_schema_and_never_fails(operation, researcher_token):
    cases = st.one_of(operation.as_strategy(mode) for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE))

    @given(case=cases)
    @settings(FUZZ, max_examples=25)
    def call(case):
        case.call_and_validate(headers={"Authorization": f"Token {researcher_token}"}, checks=CHECKS)

    call()


def test_every_operation_is_fuzzed():
    assert len(OPERATIONS) == len({operation.label for operation in OPERATIONS}) >= 20


# --- what the fuzzing found (issue #7) ----------------------------------------------------


REFUSED_ONCE_PUBLISHED = {("patch", "/api/campaigns/{slug}/"), ("put", "/api/campaigns/{campaign_slug}/channel/")}


def test_every_operation_documents_the_errors_it_answers():
    undocumented = []
    for path, item in schema.raw_schema["paths"].items():
        for method, operation in item.items():
            documented = set(operation["responses"])
            query = [parameter for parameter in operation.get("parameters", []) if parameter["in"] == "query"]
            expected = {"401"}
            if "{" in path:
                expected.add("404")
            if "requestBody" in operation:
                expected |= {"400", "415"}
            if query:
                expected.add("400")
            if (method, path) in REFUSED_ONCE_PUBLISHED:
                expected.add("409")
            undocumented += [f"{method.upper()} {path}: {status}" for status in sorted(expected - documented)]
    assert not undocumented, "\n".join(undocumented)


def test_the_error_shape_is_the_application_errors(campaign_with_data, researcher_token):
    """A 409 from PATCH of a published campaign's fixed setting matches the documented Error."""
    campaign_with_data.status = "active"
    campaign_with_data.save(update_fields=["status"])
    case = schema["/api/campaigns/{slug}/"]["PATCH"].Case(
        path_parameters={"slug": CAMPAIGN_SLUG}, body={"likert_reward": "0.99"}, media_type="application/json"
    )
    response = case.call(headers={"Authorization": f"Token {researcher_token}"})
    assert response.status_code == 409 and response.json()["code"] == "settings_fixed"
    case.validate_response(response, checks=[status_code_conformance, response_schema_conformance])
    error = schema.raw_schema["components"]["schemas"]["Error"]
    assert error["required"] == ["code", "message"] and set(error["properties"]) == {"code", "message", "details"}


def test_a_worker_without_a_quality_override_matches_the_schema(campaign_with_data, researcher_token):
    # The fixture's workers have no confirmed answer: the list shows them when asked (issue 24, F1-b).
    case = schema["/api/campaigns/{campaign_slug}/workers/"]["GET"].Case(
        path_parameters={"campaign_slug": CAMPAIGN_SLUG}, query={"include": "unconfirmed"}
    )
    response = case.call(headers={"Authorization": f"Token {researcher_token}"})
    assert response.json()["results"][0]["quality"]["override_status"] == ""
    case.validate_response(response, checks=[response_schema_conformance])


def test_revoking_a_link_with_a_non_numeric_id_is_a_json_404(campaign_with_data, researcher_token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {researcher_token}")
    url = reverse("api-campaign-list") + f"{CAMPAIGN_SLUG}/links/abc/revoke/"
    response = client.post(url)
    assert response.status_code == 404
    assert response.json() == {"code": "not_found", "message": "Nothing is at this address."}
