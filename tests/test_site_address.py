"""A loopback SITE_URL (config/site_address.py): links made on it open only on the server's own
machine, so the Channel page and the commands that make or print links say so — a warning in
development, never a refusal."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from config.site_address import host_is_loopback, site_url_loopback_warning


@pytest.mark.parametrize(
    "host, loopback",
    [
        ("127.0.0.1", True),
        ("127.3.4.5", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("app.localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.0.2.7", False),
        ("tasks.example.org", False),
    ],
)
def test_loopback_hosts_are_this_machine_only(host, loopback):
    assert host_is_loopback(host) is loopback


def test_the_warning_names_the_address_and_the_way_to_a_real_study():
    warning = site_url_loopback_warning("http://localhost:8000/")

    assert warning is not None and "SITE_URL is http://localhost:8000, an address of this machine only" in warning
    assert "participants cannot reach them" in warning and "From rehearsal to a real study" in warning
    assert site_url_loopback_warning("https://tasks.example.org") is None


@pytest.mark.django_db
@pytest.mark.parametrize("site_url, shown", [("http://127.0.0.1:8000", True), ("https://tasks.example.org", False)])
def test_the_channel_page_warns_of_a_loopback_site_url(settings, owner_client, campaign, site_url, shown):
    settings.SITE_URL = site_url

    page = owner_client.get(reverse("crowd:campaign-channel", args=[campaign.slug]))

    assert page.status_code == 200
    assert ("data-site-warning" in page.content.decode()) is shown


@pytest.mark.django_db
def test_publish_warns_of_a_loopback_site_url_and_still_runs(settings, campaign):
    settings.SITE_URL = "http://127.0.0.1:8000"
    errors = StringIO()

    with pytest.raises(CommandError, match="has no topics"):
        call_command("publish", campaign=campaign.slug, dry_run=True, stderr=errors, stdout=StringIO())

    assert "Warning: SITE_URL is http://127.0.0.1:8000, an address of this machine only" in errors.getvalue()


@pytest.mark.django_db
def test_publish_is_quiet_on_a_public_site_url(settings, campaign):
    settings.SITE_URL = "https://tasks.example.org"
    errors = StringIO()

    with pytest.raises(CommandError, match="has no topics"):
        call_command("publish", campaign=campaign.slug, dry_run=True, stderr=errors, stdout=StringIO())

    assert errors.getvalue() == ""
