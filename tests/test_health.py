import pytest


@pytest.mark.django_db
def test_healthz_answers_with_the_database_up(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
