"""The Celery application of `benchmarks/e2e.py`'s worker: the project's (config.celery), with
each run of quality control timed. Every pool process wraps the one QC entry point where the
loop and the tasks call it (crowd.qc.worker_quality.campaign_quality_refresh) and appends a
line per run to the file E2E_QC_LOG names: `<wall seconds> <CPU seconds of the thread> <end,
Unix time>`.
Nothing else changes: the tasks, the schedule and the settings are the deployment's."""

import functools
import os
import time

from celery.signals import worker_process_init

from config.celery import app

__all__ = ["app"]

CALLERS = ("ranking.workflow", "crowd.tasks", "crowd.qc.worker_quality")


@worker_process_init.connect
def _qc_meter(**kwargs) -> None:
    import importlib

    log = os.environ["E2E_QC_LOG"]
    for name in CALLERS:
        module = importlib.import_module(name)
        original = getattr(module, "campaign_quality_refresh", None)
        if original is None or getattr(original, "metered", False):
            continue
        module.campaign_quality_refresh = _metered(original, log)


def _metered(original, log: str):
    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        wall, cpu = time.monotonic(), time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            with open(log, "a", encoding="ascii") as handle:
                handle.write(f"{time.monotonic() - wall:.4f} {time.thread_time() - cpu:.4f} {time.time():.3f}\n")

    wrapper.metered = True  # type: ignore[attr-defined]
    return wrapper
