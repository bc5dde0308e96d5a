"""Settings: production refuses to start without its explicit configuration."""

import os
import subprocess
import sys

import pytest


def _import_settings(env: dict) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DATABASE_URL", "MTURK_ENVIRONMENT")}
    return subprocess.run(
        [sys.executable, "-c", "import config.settings"],
        env={**clean, **env},
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, "SECRET_KEY"),
        ({"SECRET_KEY": "x" * 50, "MTURK_ENVIRONMENT": "sandbox"}, "DATABASE_URL"),
        (
            {"SECRET_KEY": "short", "DATABASE_URL": "postgres://u@h/d", "MTURK_ENVIRONMENT": "sandbox"},
            "real SECRET_KEY",
        ),
    ],
)
def test_production_refuses_incomplete_configuration(env, expected):
    result = _import_settings({"SALIENCE_ENV": "production", **env})
    assert result.returncode != 0
    assert expected in result.stderr


def test_production_refuses_debug_with_a_reason():
    result = _import_settings(
        {
            "SALIENCE_ENV": "production",
            "SECRET_KEY": "k" * 50,
            "DATABASE_URL": "postgres://u@127.0.0.1/d",
            "MTURK_ENVIRONMENT": "sandbox",
            "DEBUG": "true",
        }
    )
    assert result.returncode != 0
    assert "DEBUG=true is refused with SALIENCE_ENV=production" in result.stderr


def test_production_starts_with_full_configuration():
    result = _import_settings(
        {
            "SALIENCE_ENV": "production",
            "SECRET_KEY": "k" * 50,
            "DATABASE_URL": "postgres://u@127.0.0.1/d",
            "MTURK_ENVIRONMENT": "sandbox",
        }
    )
    assert result.returncode == 0, result.stderr


def test_development_defaults_to_local_mturk_and_eager_celery(settings):
    assert settings.MTURK_ENVIRONMENT in ("local", "sandbox", "production")
    from config.celery import app

    assert app.conf.task_always_eager is settings.CELERY_TASK_ALWAYS_EAGER
    if settings.CELERY_TASK_ALWAYS_EAGER:  # no CELERY_BROKER_URL: nothing leaves the process
        assert app.conf.broker_url == "memory://localhost/"
