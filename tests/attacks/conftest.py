"""The attacks that go through the local MTurk endpoint use the crowd tests' `local_turk`."""

from tests.crowd.conftest import local_turk  # noqa: F401  (a fixture, found here by pytest)
