"""The Celery app a fault test's worker runs: config.celery's app, plus two knobs that only
these tests turn, through the environment.

    FAULTS_MTURK_MAX_ATTEMPTS   botocore retries per MTurk call (crowd.marketplaces.mturk.client.MAX_ATTEMPTS),
                                so injected faults outlast them and reach the task's retries
    FAULTS_VISIBILITY_TIMEOUT   seconds before Redis hands the message a dead worker held to
                                another worker (kombu's default: an hour), swept every second
"""

import os

from celery.signals import worker_process_init

from config.celery import app

if "FAULTS_VISIBILITY_TIMEOUT" in os.environ:
    app.conf.broker_transport_options = {
        "visibility_timeout": int(os.environ["FAULTS_VISIBILITY_TIMEOUT"]),
        "unacked_restore_interval": 1,
        "unacked_restore_throttle": 1,
    }


@worker_process_init.connect
def _botocore_attempts(**_kwargs) -> None:
    if "FAULTS_MTURK_MAX_ATTEMPTS" in os.environ:
        from crowd.marketplaces.mturk import client as mturk

        mturk.MAX_ATTEMPTS = int(os.environ["FAULTS_MTURK_MAX_ATTEMPTS"])


__all__ = ["app"]
