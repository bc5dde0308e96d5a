"""The same import through the REST API and the admin upload form."""

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.campaigns import campaign_create
from annotation.models import Proposition

pytestmark = pytest.mark.django_db

GOOD = b"topic\tsubject\trelation\tobject\tconfidence\nloans\ta\tb\tc\t0.9\nloans\td\te\tf\t0.2\n"
BAD = b"topic\tsubject\trelation\tobject\tconfidence\nloans\ta\tb\tc\t0.9\nloans\t\te\tf\t0.7\n"


@pytest.fixture
def researcher():
    return get_user_model().objects.create_user("ada", password="pw-for-tests-only")


@pytest.fixture
def campaign(researcher):
    return campaign_create(slug="c1", name="One", owner=researcher)


def api(user=None):
    client = APIClient()
    if user:
        client.force_authenticate(user)
    return client


def upload(client, slug, content, name="props.tsv", **extra):
    url = reverse("api-proposition-import", args=[slug])
    return client.post(url, {"file": SimpleUploadedFile(name, content), **extra}, format="multipart")


def test_api_import_returns_the_summary(researcher, campaign):
    response = upload(api(researcher), "c1", GOOD)
    assert response.status_code == 201, response.content
    assert response.json()["topics"]["loans"] == {
        "read": 2,
        "kept": 1,
        "below_threshold": 1,
        "duplicates": 0,
        "ids_filled": 0,
    }
    assert Proposition.objects.count() == 1


def test_api_import_with_topics_file_and_threshold(researcher, campaign):
    topics = SimpleUploadedFile("topics.tsv", b"key\tdescription\nloans\tpaying for college\n")
    response = upload(api(researcher), "c1", GOOD, topics=topics, min_confidence="0.1")
    assert response.status_code == 201
    assert response.json()["topics"]["loans"]["kept"] == 2
    assert campaign.topics.get(key="loans").description == "paying for college"


def test_api_import_problems_are_a_400_with_a_list(researcher, campaign):
    response = upload(api(researcher), "c1", BAD)
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "import_invalid"
    assert body["problems"] == ["props.tsv:3 [subject]: required field is empty"]
    assert Proposition.objects.count() == 0


def test_api_import_needs_authentication(campaign):
    response = upload(api(), "c1", GOOD)
    assert response.status_code in (401, 403)
    assert Proposition.objects.count() == 0


def test_api_import_into_another_researchers_campaign_is_404(campaign):
    other = get_user_model().objects.create_user("bob", password="pw-for-tests-only")
    response = upload(api(other), "c1", GOOD)
    assert response.status_code == 404
    assert Proposition.objects.count() == 0


def test_api_import_rejects_an_unknown_format_value(researcher, campaign):
    response = upload(api(researcher), "c1", GOOD, format="xml")
    assert response.status_code == 400
    assert "format" in response.json()


@pytest.fixture
def admin_client_logged_in(client):
    admin = get_user_model().objects.create_superuser("root", "root@example.org", "pw-for-tests-only")
    client.force_login(admin)
    return client


def test_admin_upload_imports_and_shows_the_summary(admin_client_logged_in, campaign):
    url = reverse("admin:annotation_campaign_import", args=[campaign.pk])
    response = admin_client_logged_in.post(
        url, {"file": SimpleUploadedFile("props.tsv", GOOD), "format": "auto", "min_confidence": "0.5"}
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "Imported 1 propositions from props.tsv" in page
    assert Proposition.objects.count() == 1


def test_admin_upload_shows_problems_on_the_form(admin_client_logged_in, campaign):
    url = reverse("admin:annotation_campaign_import", args=[campaign.pk])
    response = admin_client_logged_in.post(
        url, {"file": SimpleUploadedFile("props.tsv", BAD), "format": "auto", "min_confidence": "0.5"}
    )
    page = response.content.decode()
    assert "props.tsv was not imported" in page
    assert "props.tsv:3 [subject]: required field is empty" in page
    assert Proposition.objects.count() == 0


def test_admin_campaign_page_links_to_the_import(admin_client_logged_in, campaign):
    response = admin_client_logged_in.get(reverse("admin:annotation_campaign_change", args=[campaign.pk]))
    assert reverse("admin:annotation_campaign_import", args=[campaign.pk]) in response.content.decode()


CR_IN_QUOTES = b'topic\tsubject\trelation\tobject\nloans\t"a\rb"\tb\tc\nloans\t\tb\tc\n'
CR_PROBLEM = "props.tsv:3 [subject]: required field is empty"


def test_every_interface_ends_lines_at_lf_only(researcher, campaign, admin_client_logged_in, tmp_path, capsys):
    """A CR inside a quoted field does not end the line: the empty subject is on line 3
    through the API, the admin, the dashboard and the command alike (Django's File.__iter__
    would have made it line 4 for uploads)."""
    response = upload(api(researcher), "c1", CR_IN_QUOTES)
    assert response.json()["problems"] == [CR_PROBLEM]
    admin_page = admin_client_logged_in.post(
        reverse("admin:annotation_campaign_import", args=[campaign.pk]),
        {"file": SimpleUploadedFile("props.tsv", CR_IN_QUOTES), "format": "auto", "min_confidence": "0.5"},
    ).content.decode()
    assert CR_PROBLEM in admin_page
    admin_client_logged_in.force_login(researcher)
    dashboard_page = admin_client_logged_in.post(
        reverse("dashboard:propositions-import", args=[campaign.slug]),
        {"file": SimpleUploadedFile("props.tsv", CR_IN_QUOTES)},
    ).content.decode()
    assert CR_PROBLEM in dashboard_page
    path = tmp_path / "props.tsv"
    path.write_bytes(CR_IN_QUOTES)
    with pytest.raises(SystemExit):
        call_command("import_propositions", str(path), "--campaign", "c1")
    assert f"  {CR_PROBLEM}" in capsys.readouterr().err
    assert Proposition.objects.count() == 0


def test_admin_upload_takes_a_traps_file_and_a_delimiter(admin_client_logged_in, campaign):
    url = reverse("admin:annotation_campaign_import", args=[campaign.pk])
    response = admin_client_logged_in.post(
        url,
        {
            "file": SimpleUploadedFile("props.csv", b"topic;subject;relation;object\nloans;a;b;c\n"),
            "traps": SimpleUploadedFile("traps.csv", b"topic;subject;relation;object\nloans;the council;met;today\n"),
            "format": "auto",
            "delimiter": "semicolon",
            "min_confidence": "0.5",
        },
    )
    assert "Imported 1 propositions from props.csv (csv, semicolon-separated)" in response.content.decode()
    assert dict(Proposition.objects.values_list("subject", "trap_kind")) == {"a": "none", "the council": "subtle"}
