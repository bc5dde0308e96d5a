"""F4 (issue 15): a topic key goes into URLs, so a key a URL cannot carry is refused at import
(file:line and the allowed characters, nothing written), a bad key already stored breaks no
page, the migration renames such keys, and a topic URL with an odd key is a 404, never a 500.

Over HTTP with Django's test client: the API's import, the dashboard's upload, the campaign
page, the quality report and the API's topic routes.
"""

import importlib

import pytest
from django.apps import apps
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation.models import ImportRecord, Proposition, Topic
from tests.dashboard.api.conftest import client_for
from tests.factories import CampaignFactory, PropositionFactory, TopicFactory

# The campaign page asks the marketplace for its balance: a port nobody listens on.
pytestmark = [pytest.mark.attacks, pytest.mark.django_db, pytest.mark.usefixtures("unreachable_endpoint")]

ALLOWED = 'use only letters A-Z and a-z, digits 0-9, "-", "_" and "." (a dot only between two other characters)'
BAD_KEYS = {
    "slash": ("loans/2024", "it contains '/'"),
    "question mark": ("loans?", "it contains '?'"),
    "hash": ("loans#1", "it contains '#'"),
    "percent": ("100%", "it contains '%'"),
    "space": ("student loans", "it contains a space"),
    "dot dot": ("..", 'it has a "." at the start or the end, or two in a row'),
    "non-ASCII letter": ("café", "it contains 'é'"),
}
migration = importlib.import_module("annotation.migrations.0004_topic_keys_url_safe")


@pytest.fixture
def campaign(owner):
    return CampaignFactory(owner=owner, slug="loans-run", name="Student loans")


@pytest.fixture
def api(owner) -> APIClient:
    return client_for(owner)


def api_import(api, campaign, content: bytes, name: str, **extra):
    return api.post(
        f"/api/campaigns/{campaign.slug}/propositions/import",
        {"file": SimpleUploadedFile(name, content), **extra},
        format="multipart",
    )


def nothing_written() -> bool:
    return not (Topic.objects.exists() or Proposition.objects.exists() or ImportRecord.objects.exists())


@pytest.mark.parametrize(("key", "reason"), BAD_KEYS.values(), ids=BAD_KEYS.keys())
def test_a_propositions_file_with_a_bad_topic_key_is_refused_by_line(api, campaign, key, reason):
    content = f"topic\tsubject\trelation\tobject\nloans\ta\tb\tc\n{key}\td\te\tf\n".encode()

    response = api_import(api, campaign, content, "props.tsv")

    assert response.status_code == 400, response.content
    assert response.json()["code"] == "import_invalid"
    assert response.json()["problems"] == [
        f"props.tsv:3 [topic]: the topic key {key!r} cannot be part of a web address ({reason}); {ALLOWED}"
    ]
    assert nothing_written()


@pytest.mark.parametrize(("key", "reason"), BAD_KEYS.values(), ids=BAD_KEYS.keys())
def test_a_topics_file_with_a_bad_key_is_refused_by_line(api, campaign, key, reason):
    topics = SimpleUploadedFile("topics.tsv", f"key\tdescription\nloans\tpaying for college\n{key}\tx\n".encode())

    response = api_import(api, campaign, b"topic\tsubject\trelation\tobject\nloans\ta\tb\tc\n", "p.tsv", topics=topics)

    assert response.status_code == 400, response.content
    assert response.json()["problems"] == [
        f"topics.tsv:3 [key]: the topic key {key!r} cannot be part of a web address ({reason}); {ALLOWED}"
    ]
    assert nothing_written()


def test_an_open_ie_file_with_a_bad_topic_option_is_refused_by_line(api, campaign):
    content = b"Obama gave a speech on Tuesday.\n0.93 (Barack Obama; gave; his speech)\n"

    response = api_import(api, campaign, content, "speech.txt", topic="speeches/2024")

    assert response.status_code == 400, response.content
    assert response.json()["problems"] == [
        f"speech.txt:2 [topic]: the topic key 'speeches/2024' cannot be part of a web address (it contains '/'); "
        f"{ALLOWED}"
    ]
    assert nothing_written()


def test_the_dashboard_upload_shows_the_same_refusal(owner_client, campaign):
    response = owner_client.post(
        f"/campaigns/{campaign.slug}/import/",
        {"file": SimpleUploadedFile("props.tsv", b"topic\tsubject\trelation\tobject\nloans/2024\ta\tb\tc\n")},
    )

    page = response.content.decode()
    assert response.status_code == 200 and 'id="import-problems"' in page
    assert "props.tsv:2 [topic]: the topic key &#x27;loans/2024&#x27; cannot be part of a web address" in page
    assert nothing_written()


def test_keys_with_letters_digits_dashes_underscores_and_inner_dots_import(api, campaign):
    content = b"topic\tsubject\trelation\tobject\nLoans_2024-v1.2\ta\tb\tc\n"

    response = api_import(api, campaign, content, "props.tsv")

    assert response.status_code == 201, response.content
    assert campaign.topics.get().key == "Loans_2024-v1.2"


def test_the_admin_refuses_a_bad_key_through_the_model_validator(campaign):
    with pytest.raises(ValidationError) as refused:
        Topic(campaign=campaign, key="loans/2024", description="x").full_clean()

    assert f"A topic key goes into web addresses: {ALLOWED}." in refused.value.message_dict["key"]


@pytest.mark.parametrize("key", [key for key, _ in BAD_KEYS.values()], ids=BAD_KEYS.keys())
def test_a_bad_key_already_stored_breaks_no_page(owner_client, api, campaign, key):
    """Stored directly, as before this fix or by hand in a database shell: the pages show it
    and say why it cannot be opened, instead of answering 500."""
    TopicFactory(campaign=campaign, key="good")
    bad = TopicFactory(campaign=campaign, key=key)
    PropositionFactory(topic=bad)

    page = owner_client.get(f"/campaigns/{campaign.slug}/")
    quality = owner_client.get(f"/campaigns/{campaign.slug}/quality/")
    listed = api.get(f"/api/campaigns/{campaign.slug}/topics/")

    assert page.status_code == 200
    assert f'data-unsafe-key="{bad.pk}"' in page.content.decode()
    assert f"/campaigns/{campaign.slug}/topics/good/quality/" in page.content.decode()
    assert quality.status_code == 200 and "key not usable in a web address" in quality.content.decode()
    assert listed.status_code == 200
    assert sorted(topic["key"] for topic in listed.json()["results"]) == sorted(["good", key])


ODD_SEGMENTS = ["loans%2F2024", "%3F", "%23", "%25", "a%20b", "%2E%2E", "caf%C3%A9", "%00", "%FF"]


@pytest.mark.parametrize("segment", ODD_SEGMENTS)
def test_a_topic_url_with_an_odd_or_unknown_key_is_a_404(owner_client, api, campaign, segment):
    """Topic routes match only keys the rule allows (`<topic_key:...>`), so an odd segment is a
    404 before any query: with `<str:...>`, a NUL reached PostgreSQL, which refused it (500)."""
    TopicFactory(campaign=campaign, key="loans")
    pages = [
        f"/campaigns/{campaign.slug}/topics/{segment}/quality/",
        f"/campaigns/{campaign.slug}/topics/{segment}/ranking/",
        f"/campaigns/{campaign.slug}/topics/{segment}/ranking.csv",
        f"/campaigns/{campaign.slug}/topics/{segment}/publish/",
        f"/s/l/{segment}/",  # a participant link's token
    ]
    endpoints = [
        f"/api/campaigns/{campaign.slug}/topics/{segment}/",
        f"/api/campaigns/{campaign.slug}/topics/{segment}/propositions/",
        f"/api/campaigns/{campaign.slug}/topics/{segment}/ranking/",
        f"/api/campaigns/{campaign.slug}/topics/{segment}/export/",
    ]

    statuses = {url: owner_client.get(url).status_code for url in pages}
    statuses |= {url: api.get(url).status_code for url in endpoints}

    assert set(statuses.values()) == {404}, statuses


def test_the_migration_renames_bad_keys_deterministically_and_uniquely(owner_client, campaign, capsys):
    other = CampaignFactory(owner=campaign.owner, slug="other-run")
    kept = TopicFactory(campaign=campaign, key="loans-2024")
    slash = TopicFactory(campaign=campaign, key="loans/2024")
    question = TopicFactory(campaign=campaign, key="loans?2024")
    accented = TopicFactory(campaign=campaign, key="café au lait")
    dots = TopicFactory(campaign=campaign, key="..")
    elsewhere = TopicFactory(campaign=other, key="loans/2024")
    PropositionFactory(topic=slash)

    migration.rename_unsafe_keys(apps, None)

    keys = {topic.pk: topic.key for topic in Topic.objects.all()}
    assert keys == {
        kept.pk: "loans-2024",
        slash.pk: "loans-2024-2",
        question.pk: "loans-2024-3",
        accented.pk: "cafe-au-lait",
        dots.pk: "topic",
        elsewhere.pk: "loans-2024",
    }
    assert Proposition.objects.get().topic_id == slash.pk  # the topic's rows stay with it
    assert "campaign loans-run: topic key 'loans/2024' renamed to 'loans-2024-2'" in capsys.readouterr().out
    page = owner_client.get(f"/campaigns/{campaign.slug}/")
    assert page.status_code == 200 and "data-unsafe-key" not in page.content.decode()
    assert owner_client.get(f"/campaigns/{campaign.slug}/topics/loans-2024-2/quality/").status_code == 200
    migration.rename_unsafe_keys(apps, None)
    assert {topic.pk: topic.key for topic in Topic.objects.all()} == keys  # a second run changes nothing
