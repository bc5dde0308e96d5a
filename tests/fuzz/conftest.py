"""Fixtures of the fuzz tests: a researcher with an API token, a campaign that already holds
propositions (so imports meet existing topics and duplicates), HIT tasks of both kinds."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from rest_framework.test import APIClient

from annotation.campaigns import campaign_create
from annotation.importing.importers import propositions_import
from annotation.models import Batch
from crowd.hit_page.content import ProcessCache
from tests.dashboard.api.conftest import client_for
from tests.factories import BatchFactory, PropositionFactory, TaskFactory, TopicFactory

SEED_TSV = (
    "topic\tsubject\trelation\tobject\tconfidence\n"
    "loans\tfederal loans\tdo not require\ta credit check\t0.9\n"
    "loans\tprivate loans\trequire\ta co-signer\t0.8\n"
    "bees\tvarroa mites\tweaken\tcolonies\t\n"
)
SEED_TOPICS = "key\tdescription\nloans\tpaying for college\n"


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # The token endpoint hashes every password it is sent, even for unknown users.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fresh_hit_cache():
    # HIT content and page fragments are cached per task uuid, in this process and in Django's cache.
    cache.clear()
    ProcessCache.clear_all()


@pytest.fixture
def researcher(db):
    return get_user_model().objects.create_user("fuzz-researcher", password="pw-for-tests-only")


@pytest.fixture
def api_client(researcher) -> APIClient:
    return client_for(researcher)


@pytest.fixture
def campaign(researcher):
    """A draft campaign with two topics and three propositions already imported."""
    campaign = campaign_create(slug="fuzz", name="Fuzzed campaign", owner=researcher)
    propositions_import(
        campaign=campaign,
        source=io.BytesIO(SEED_TSV.encode()),
        filename="seed.tsv",
        topics_source=io.BytesIO(SEED_TOPICS.encode()),
        topics_filename="topics.tsv",
        user=researcher,
    )
    return campaign


def _task(kind: str):
    topic = TopicFactory(description="student loans without credit history")
    propositions = PropositionFactory.create_batch(5, topic=topic)
    return TaskFactory(batch=BatchFactory(topic=topic, kind=kind), propositions=propositions)


@pytest.fixture
def likert_task(db):
    return _task(Batch.Kind.LIKERT)


@pytest.fixture
def comparison_task(db):
    return _task(Batch.Kind.COMPARISON)
