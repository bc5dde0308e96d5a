"""The Celery application's process set-up (config.celery)."""

import gc

from celery.signals import worker_process_init

import config.celery  # noqa: F401  (connects its receivers)


def test_a_pool_process_freezes_the_heap_it_forked_with():
    """A pool process's start (worker_process_init, sent in each child after the fork) moves
    the heap it forked with out of the cyclic collector's walks."""
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    try:
        worker_process_init.send(sender=None)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
