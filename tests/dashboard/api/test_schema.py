"""The OpenAPI schema generates without warnings and validates; the docs page is self-hosted.
Both need a login by default (tests/attacks/test_admin_scope.py): these read them signed in."""

import re

import pytest
import yaml
from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.urls import reverse
from drf_spectacular.drainage import GENERATOR_STATS
from drf_spectacular.validation import validate_schema
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(django_user_model) -> APIClient:
    client = APIClient()
    client.force_login(django_user_model.objects.create_user("reader", password="pw-for-tests-only"))
    return client


EXPECTED_OPERATIONS = {
    ("/api/auth/token/", "post"),
    ("/api/campaigns/", "get"),
    ("/api/campaigns/", "post"),
    ("/api/campaigns/{slug}/", "get"),
    ("/api/campaigns/{slug}/", "patch"),
    ("/api/campaigns/{slug}/propositions/import", "post"),
    ("/api/campaigns/{campaign_slug}/topics/", "get"),
    ("/api/campaigns/{campaign_slug}/topics/{topic_key}/", "get"),
    ("/api/campaigns/{campaign_slug}/topics/{topic_key}/propositions/", "get"),
    ("/api/campaigns/{campaign_slug}/topics/{topic_key}/ranking/", "get"),
    ("/api/campaigns/{campaign_slug}/topics/{topic_key}/export/", "get"),
    ("/api/campaigns/{campaign_slug}/batches/", "get"),
    ("/api/campaigns/{campaign_slug}/hits/", "get"),
    ("/api/campaigns/{campaign_slug}/workers/", "get"),
}


def test_spectacular_generates_and_validates_without_warnings(tmp_path):
    GENERATOR_STATS.reset()  # warnings are counted per process; count only this run's
    output = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(output))
    schema = yaml.safe_load(output.read_text())
    assert schema["openapi"].startswith("3.0")
    operations = {(path, method) for path, item in schema["paths"].items() for method in item}
    assert operations >= EXPECTED_OPERATIONS


def test_the_served_schema_validates_and_every_ref_resolves(api):
    response = api.get(reverse("api-schema"), {"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    validate_schema(schema)  # jsonschema against the OpenAPI 3.0 specification
    components = schema["components"]["schemas"]
    refs = set(re.findall(r'"\$ref": "#/components/schemas/([^"]+)"', response.content.decode()))
    assert refs and refs <= set(components)


def test_every_operation_but_the_token_endpoint_needs_authentication(api):
    schema = api.get(reverse("api-schema"), {"format": "json"}).json()
    schemes = schema["components"]["securitySchemes"]
    assert schemes["tokenAuth"] == {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": schemes["tokenAuth"]["description"],
    }
    for path, method in EXPECTED_OPERATIONS - {("/api/auth/token/", "post")}:
        security = schema["paths"][path][method]["security"]
        assert {} not in security, f"{method} {path} allows anonymous access"


def test_docs_page_loads_swagger_ui_from_local_static_files_only(api):
    response = api.get(reverse("api-docs"))
    assert response.status_code == 200
    page = response.content.decode()
    assert not re.search(r"(https?:)?//", page), "the docs page must not reference another host"
    assert "<script>" not in page, "no inline scripts: the init code lives in static/js/api-docs.js"
    assert f'data-schema-url="{reverse("api-schema")}"' in page
    references = re.findall(r'(?:src|href)="([^"]+)"', page)
    static = [ref for ref in references if ref.startswith(settings.STATIC_URL)]
    assert {ref.rsplit("/", 1)[-1] for ref in static} == {
        "swagger-ui.css",
        "swagger-ui-bundle.js",
        "api-docs.js",
        "favicon.svg",
    }
    for ref in static:
        assert finders.find(ref.removeprefix(settings.STATIC_URL)), f"{ref} is not a shipped static file"
    assert set(references) - set(static) == {reverse("api-schema")}


def test_docs_init_script_calls_no_other_host_and_the_licence_is_shipped():
    script = open(finders.find("js/api-docs.js"), encoding="utf-8").read()
    assert "http" not in script
    assert "validatorUrl: null" in script
    assert "Apache License" in open(finders.find("vendor/swagger-ui/LICENSE"), encoding="utf-8").read()
