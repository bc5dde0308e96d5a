"""Every change list of the apps' admins (annotation, crowd, ranking) runs as many queries for
many rows as for one, for a researcher and for a superuser: each row's related objects come with
it (`list_select_related`), including those its name reads (a topic is named with its campaign,
an assignment with its worker). Rows from tests/attacks/test_admin_scope.py, one of every model
per campaign."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from crowd.models import Worker
from tests.attacks.test_admin_scope import ADMINS, campaign_rows, researcher, signed_in
from tests.factories import WorkerFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("model", list(ADMINS), ids=lambda model: model._meta.label)
def test_a_change_list_runs_as_many_queries_for_many_rows_as_for_one(model):
    shared_worker = WorkerFactory(external_id="SHAREDWORKER")
    owner = researcher("ada")
    root = get_user_model().objects.create_superuser("root", password="pw-for-tests-only")
    clients = {"researcher": signed_in(owner), "superuser": signed_in(root)}
    campaign_rows(owner, "first", shared_worker)
    one = {who: _changelist_queries(client, model) for who, client in clients.items()}
    for name in ("second", "third", "fourth"):
        campaign_rows(owner, name, shared_worker)
    many = {who: _changelist_queries(client, model) for who, client in clients.items()}

    assert many == one
    assert model.objects.count() >= 4 or model is Worker  # the shared worker is one row


def _changelist_queries(client, model) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist"))
    assert response.status_code == 200
    return len(queries)
