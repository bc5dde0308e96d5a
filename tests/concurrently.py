"""Calls started at the same moment, each in a thread on a database connection of its own:
how the tests race concurrent writers (PostgreSQL only; SQLite serialises them)."""

import threading
from collections.abc import Callable
from typing import TypeVar

from django.db import connections

T = TypeVar("T")


def at_once(calls: list[Callable[[], T]]) -> tuple[list[T], list[Exception]]:
    """Run the calls together, released by one barrier; what they returned and what they raised."""
    barrier = threading.Barrier(len(calls))
    results: list[T] = []
    errors: list[Exception] = []

    def run(call: Callable[[], T]) -> None:
        try:
            barrier.wait()
            results.append(call())
        except Exception as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results, errors
