"""Shared fixtures. Services come from `python -m tests.services run`; with CI=true a
missing one is a failure, never a skip."""

import os

import pytest

CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_service(variable: str, what: str) -> str:
    """The URL of a service started by the test tooling: fail in CI, skip elsewhere."""
    value = os.environ.get(variable)
    if value:
        return value
    message = f"{what} is not running: run the suite with `make test` ({variable} unset)"
    if CI:
        pytest.fail(message)
    pytest.skip(message)


def pytest_sessionstart(session):
    if CI and not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise pytest.UsageError("CI=true needs PostgreSQL: run the suite through `make test`.")


@pytest.fixture
def redis_url():
    return require_service("SALIENCE_TEST_REDIS_URL", "Redis")
