"""The Celery application of `benchmarks/e2e.py`'s worker: the project's (config.celery), with
each run of quality control timed and the worker's CPU split by part of the loop.

QC: every pool process wraps the one QC entry point where the loop and the tasks call it
(crowd.qc.worker_quality.campaign_quality_refresh) and appends a line per run to the file
E2E_QC_LOG names: `<wall seconds> <CPU seconds of the thread> <end, Unix time>`.

The split: every pool process wraps the functions in PARTS (and each MTurk or Prolific client
call, named by its operation) to add up the CPU time of the calling thread spent in each,
exclusive of the wrapped functions it calls (so the parts add up), plus the CPU of every
task; after each task it writes its totals as JSON to `<E2E_CPU_DIR>/<pid>.json`. The
marketplace calls run in threads of their own (crowd.work.calls): the thread's clock counts
them where they run. Two clock reads per wrapped call; nothing else changes: the tasks, the
schedule and the settings are the deployment's."""

import dataclasses
import functools
import importlib
import inspect
import json
import os
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

from celery.signals import task_postrun, task_prerun, worker_process_init

from config.celery import app

__all__ = ["app"]

CALLERS = ("ranking.workflow", "crowd.tasks", "crowd.qc.worker_quality")
# Part of the loop -> the functions ("module.name") whose CPU, less that of the parts they
# call, is that part's.
PARTS = {
    "sync: HITs with news, pending sweep": (
        "crowd.work.sync.news.hits_with_news",
        "crowd.work.sync.news.pending_sweep",
    ),
    "sync: chunk (reads, locks, the rest)": ("crowd.work.sync.chunk.hits_sync",),
    "sync: listings applied": ("crowd.work.sync.listing.listings_apply",),
    "sync: approvals due": ("crowd.work.sync.approvals.approvals_due",),
    "sync: approvals (calls run)": ("crowd.work.sync.approvals.assignments_approve",),
    "sync: reviews recorded": ("crowd.work.review.reviews_record",),
    "sync: completion": ("crowd.work.sync.completion.hits_complete", "crowd.work.sync.completion.hits_delete"),
    "sync: pass (the rest)": ("crowd.work.sync.assignments_sync", "crowd.work.sync.chunk_sync"),
    "sync: sessions verified": ("crowd.sessions.holds.sessions_verify",),
    "sync: studies (Prolific)": ("crowd.channels.prolific.study_sync.studies_sync",),
    "publishing": ("crowd.work.publishing.batch_publish", "crowd.work.publishing.chunk_publish"),
    "expiry": ("crowd.work.expiry.batch_expire",),
    "QC": ("crowd.qc.worker_quality.campaign_quality_refresh",),
    "steps": ("ranking.pipeline.topic_advance", "ranking.pipeline.topic_ready", "ranking.pipeline.topic_start"),
    "loop (the rest)": ("ranking.workflow.loop_run", "ranking.workflow.step_requests_take"),
}
CLIENT = "crowd.marketplaces.mturk.client"
PROLIFIC_CLIENT = "crowd.marketplaces.prolific.client"
TASKS = "tasks (all)"

_totals: dict[str, float] = defaultdict(float)
_counts: dict[str, int] = defaultdict(int)
_guard = threading.Lock()
_stack = threading.local()
_task_started = threading.local()


@worker_process_init.connect
def _meters_install(**kwargs) -> None:
    log = os.environ["E2E_QC_LOG"]
    for name in CALLERS:
        module = importlib.import_module(name)
        original = getattr(module, "campaign_quality_refresh", None)
        if original is None or getattr(original, "metered", False):
            continue
        module.campaign_quality_refresh = _metered(original, log)
    directory = os.environ.get("E2E_CPU_DIR")
    if directory:
        _parts_install()
        # Installing the meters walks every module (seconds of CPU): e2e.py waits for these
        # marks before it reads the worker's CPU, so the set-up is not counted as the loop's.
        Path(directory, f"{os.getpid()}.installed").touch()


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


# ---- The split ---------------------------------------------------------------------------------


def _enter() -> list[float]:
    frames = getattr(_stack, "frames", None)
    if frames is None:
        frames = _stack.frames = []
    frame = [time.thread_time(), 0.0]
    frames.append(frame)
    return frame


def _leave(part: str) -> None:
    frames = _stack.frames
    started, inner = frames.pop()
    spent = time.thread_time() - started
    if frames:
        frames[-1][1] += spent
    with _guard:
        _totals[part] += spent - inner
        _counts[part] += 1


def _timed(original, part: str):
    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        _enter()
        try:
            return original(*args, **kwargs)
        finally:
            _leave(part)

    wrapper.timed = True  # type: ignore[attr-defined]
    return wrapper


def _parts_install() -> None:
    """Each function of PARTS replaced by its timed wrapper wherever a module holds it; the
    MTurk and Prolific clients' calls timed per operation."""
    for part, names in PARTS.items():
        for dotted in names:
            module_name, name = dotted.rsplit(".", 1)
            original = inspect.unwrap(getattr(importlib.import_module(module_name), name))
            for module in list(sys.modules.values()):
                holder = getattr(module, "__dict__", {})
                for attribute, value in list(holder.items()):
                    # the function itself, or a wrapper of it (QC's meter above: one per caller)
                    if callable(value) and not getattr(value, "timed", False) and inspect.unwrap(value) is original:
                        setattr(module, attribute, _timed(value, part))
    marketplace = importlib.import_module(CLIENT).MTurkMarketplace
    call, pages = marketplace._call, marketplace._pages

    def timed_call(self, operation, **params):
        _enter()
        try:
            return call(self, operation, **params)
        finally:
            _leave(f"botocore: {operation}")

    def timed_pages(self, operation, key, **params):
        listed = pages(self, operation, key, **params)
        while True:
            _enter()
            try:
                item = next(listed)
            except StopIteration:
                return
            finally:
                _leave(f"botocore: {operation}")
            yield item

    marketplace._call, marketplace._pages = timed_call, timed_pages

    # A channel's lifecycle holds its sync function in a frozen dataclass, not a module's name.
    registry = importlib.import_module("crowd.channels.registry")
    registry.LIFECYCLES = tuple(
        dataclasses.replace(lifecycle, sync=_timed(lifecycle.sync, _part_of(lifecycle.sync)))
        if lifecycle.sync is not None and not getattr(lifecycle.sync, "timed", False)
        else lifecycle
        for lifecycle in registry.LIFECYCLES
    )

    prolific = importlib.import_module(PROLIFIC_CLIENT).ProlificClient
    send = prolific._send

    def timed_send(self, method, path, *, operation, **options):
        _enter()
        try:
            return send(self, method, path, operation=operation, **options)
        finally:
            _leave(f"prolific client: {operation}")

    prolific._send = timed_send


def _part_of(function) -> str:
    dotted = f"{function.__module__}.{function.__name__}"
    return next((part for part, names in PARTS.items() if dotted in names), f"lifecycle: {dotted}")


@task_prerun.connect
def _task_start(**kwargs) -> None:
    _task_started.cpu = time.thread_time()


@task_postrun.connect
def _task_end(**kwargs) -> None:
    directory = os.environ.get("E2E_CPU_DIR")
    started = getattr(_task_started, "cpu", None)
    if not directory or started is None:
        return
    with _guard:
        _totals[TASKS] += time.thread_time() - started
        _counts[TASKS] += 1
        figures = {part: [round(_totals[part], 4), _counts[part]] for part in _totals}
    path = os.path.join(directory, f"{os.getpid()}.json")
    with open(path + ".new", "w", encoding="ascii") as handle:
        json.dump(figures, handle)
    os.replace(path + ".new", path)
