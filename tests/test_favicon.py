"""Every page names the icon a browser tab shows, and the icon is served."""

import pytest
from django.contrib.staticfiles import finders


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/accounts/login/", "/hit/00000000-0000-0000-0000-000000000000/"])
def test_pages_link_the_icon_and_it_exists(client, url):
    page = client.get(url).content.decode()

    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in page
    assert finders.find("favicon.svg")
