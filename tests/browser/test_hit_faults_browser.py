"""The database unreachable while a worker submits: a clear "not saved — try again", the
answers stay in the page, and the same submit succeeds once the database is back."""

from contextlib import contextmanager

import pytest
from django.db import connection

from crowd.models import Assignment, LikertLabel
from tests.browser.test_hit_pages_browser import _rate_all, _task, _url
from tests.conftest import CI

pytestmark = [pytest.mark.browser, pytest.mark.faults, pytest.mark.django_db(transaction=True)]


@contextmanager
def database_unreachable():
    """No new connection to the test database is accepted and every other one is cut, as
    in a database restart; this test's own connection stays, to undo it."""
    import psycopg2

    params = connection.settings_dict
    name = params["NAME"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        ours = cursor.fetchone()[0]
    admin = psycopg2.connect(
        host=params["HOST"],
        port=params["PORT"],
        user=params["USER"],
        password=params["PASSWORD"] or None,
        dbname="postgres",
    )
    admin.autocommit = True
    try:
        with admin.cursor() as cursor:
            cursor.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> %s",
                [name, ours],
            )
        yield
    finally:
        with admin.cursor() as cursor:
            cursor.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        admin.close()


def test_a_submission_while_the_database_is_down_is_not_lost_from_the_page(live_server, page):
    if connection.vendor != "postgresql":
        message = "needs PostgreSQL to take the database away: run the suite with `make test`"
        if CI:
            pytest.fail(message)
        pytest.skip(message)
    task = _task()
    page.context.problems.console.clear()
    page.goto(_url(live_server, task))
    _rate_all(
        page,
        ("Extremely important", "Very important", "Moderately important", "Slightly important", "Not at all important"),
    )

    with database_unreachable():
        page.locator("#submitButton").click()
        status = page.locator("#submit-status")
        status.wait_for()
        message = status.text_content()
        still_checked = page.locator("input[type=radio]:checked").count()
        button_enabled = page.locator("#submitButton").is_enabled()
        stored_meanwhile = None
    page.context.problems.console.clear()  # the browser logs the 503 itself
    stored_meanwhile = Assignment.objects.count()
    page.locator("#submitButton").click()
    page.get_by_role("heading", name="Thank you!").wait_for()

    assert message.startswith("Not saved: Your answer was not saved: our database is not answering")
    assert still_checked == 5 and button_enabled
    assert stored_meanwhile == 0
    assert Assignment.objects.count() == 1
    assert sorted(LikertLabel.objects.values_list("score", flat=True)) == [1, 2, 3, 4, 5]
