"""The Celery application. Tasks live in each app's tasks.py and are discovered here."""

import gc
import os

from celery import Celery
from celery.signals import worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("salience")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect
def heap_freeze(**_kwargs) -> None:
    """A pool process starts with the heap it forked with (Django, the apps, the clients),
    which lives as long as it does: frozen (`gc.freeze`), it is left out of the cyclic
    collector's walks, which the loop's work sets off again and again (quality control builds
    a tuple per label and vote) and which otherwise walk all of it each time."""
    gc.freeze()
