"""Prolific without the network: costs (its policy), wire formats, local checks, the client factory."""

import re
from decimal import Decimal as D

import pytest

from config.errors import ApplicationError
from crowd.marketplaces.prolific import client as prolific
from crowd.marketplaces.prolific import wire
from crowd.marketplaces.prolific.policy import ProlificPolicy

from .conftest import study_spec


def test_a_submission_costs_the_session_reward_plus_the_fee_rounded_half_up(settings):
    policy = ProlificPolicy()
    settings.PROLIFIC_SERVICE_FEE_RATE = D("0.428")
    assert policy.submission_cost(reward=D("1.50")) == D("2.14")  # 1.50 + 0.642 → 0.64
    assert policy.submission_cost(reward=D("0.30")) == D("0.43")  # 2 tasks at 0.15: 0.30 + 0.1284 → 0.13

    settings.PROLIFIC_SERVICE_FEE_RATE = D("0.333")
    assert policy.submission_cost(reward=D("1.50")) == D("2.00")  # 1.50 + 0.4995 → 0.50
    assert policy.submission_cost(reward=D("0.01")) == D("0.01")  # no minimum fee, as the endpoint charges
    assert policy.bonus_cost(D("2.00")) == D("2.67")


def test_the_default_fee_is_prolifics_corporate_rate(settings):
    assert D("0.428") == settings.PROLIFIC_SERVICE_FEE_RATE


def test_study_url_appends_prolifics_placeholders():
    assert wire.study_url("https://x.org/s/?a=1") == (
        "https://x.org/s/?a=1&PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )


def test_bonus_csv_is_one_line_per_participant_with_two_decimals():
    assert wire.bonus_csv([("p1", D("1.5")), ("s2", D("0.25"))]) == "p1,1.50\ns2,0.25\n"
    for bad in ([], [("p1", D("0"))], [("p1", D("0.125"))], [("p1", D("1")), ("p1", D("2"))], [("a,b", D("1"))]):
        with pytest.raises(wire.RequestInvalid):
            wire.bonus_csv(bad)


def test_rejection_check_follows_prolifics_rules():
    wire.rejection_check(message="x" * 100, category="NO_CODE")
    with pytest.raises(wire.RequestInvalid, match="has 99"):
        wire.rejection_check(message="x" * 99 + "   ", category="NO_CODE")
    with pytest.raises(wire.RequestInvalid, match="Unknown rejection category"):
        wire.rejection_check(message="x" * 100, category="no_code")


@pytest.mark.parametrize(
    "change, words",
    [
        ({"external_study_url": "https://tasks.example.org/"}, "{{%PROLIFIC_PID%}}"),
        ({"completion_code": "C0DE 1"}, "letters and digits"),
        ({"device_compatibility": ("watch",)}, "Devices"),
        ({"maximum_allowed_minutes": 5}, "maximum allowed time"),
    ],
)
def test_a_spec_prolific_would_refuse_is_refused_before_sending(change, words):
    client = prolific.ProlificClient(base_url="http://127.0.0.1:9/api/v1/", token="t")
    with pytest.raises(wire.RequestInvalid, match=re.escape(words)):
        client.study_create(study_spec(**change))
    client.close()


def test_the_deployment_client_never_reaches_real_prolific_outside_production(settings):
    settings.PROLIFIC_ENVIRONMENT = "local"
    settings.PROLIFIC_API_URL = "https://api.prolific.com/api/v1/"
    with pytest.raises(ApplicationError) as refused:
        prolific.prolific_client()
    assert refused.value.code == "production_disabled"

    settings.PROLIFIC_ENVIRONMENT = "production"
    settings.PROLIFIC_API_TOKEN = ""
    with pytest.raises(ApplicationError) as missing:
        prolific.prolific_client()
    assert missing.value.code == "credentials_missing"

    settings.PROLIFIC_API_TOKEN = "secret-token"
    with prolific.prolific_client() as client:
        assert client.base_url == "https://api.prolific.com/api/v1/"
        assert "secret-token" not in repr(client)


def test_a_client_for_another_environment_than_the_deployments_is_refused(settings):
    settings.PROLIFIC_ENVIRONMENT = "local"
    for environment, code in (("production", "production_disabled"), ("sandbox", "environment_unavailable")):
        with pytest.raises(ApplicationError) as refused:
            prolific.prolific_client(environment=environment)
        assert refused.value.code == code
    with prolific.prolific_client(environment="local") as client:
        assert client.base_url == settings.PROLIFIC_API_URL


def test_completion_url_fills_the_code(settings):
    settings.PROLIFIC_COMPLETION_URL = "https://app.prolific.com/submissions/complete?cc={code}"
    client = prolific.ProlificClient(base_url="http://127.0.0.1:9/api/v1/", token="t")
    assert client.completion_url("C0DE1234") == "https://app.prolific.com/submissions/complete?cc=C0DE1234"
    client.close()


def test_development_defaults_to_the_local_endpoint(settings):
    assert settings.PROLIFIC_ENVIRONMENT == "local"
    assert f"{settings.SITE_URL}/localprolific/api/v1/" == settings.PROLIFIC_API_URL
    assert f"{settings.SITE_URL}/localprolific/submissions/complete?cc={{code}}" == settings.PROLIFIC_COMPLETION_URL
    assert settings.LOCALPROLIFIC_ENABLED is settings.LOCALTURK_ENABLED
