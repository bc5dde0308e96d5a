"""Researchers and API clients that authenticate with real tokens, as API users do."""

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.factories import CampaignFactory


def client_for(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.fixture
def researcher(db):
    return get_user_model().objects.create_user("ada", password="pw-for-tests-only")


@pytest.fixture
def other_researcher(db):
    return get_user_model().objects.create_user("grace", password="pw-for-tests-only")


@pytest.fixture
def superuser(db):
    return get_user_model().objects.create_superuser("root", password="pw-for-tests-only")


@pytest.fixture
def api(researcher):
    return client_for(researcher)


@pytest.fixture
def campaign(researcher):
    return CampaignFactory(slug="loans", name="Student loans", owner=researcher)


@pytest.fixture
def foreign_campaign(other_researcher):
    return CampaignFactory(slug="grace-only", name="Not yours", owner=other_researcher)
