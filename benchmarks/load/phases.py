"""The timed part: every simulated worker on its own thread, phase after phase.

A round has a phase of trivial requests and a HIT phase of two halves: every worker loads
its pages and fills in the forms (the page's throughput), then posts all those answers
(the submission's throughput), so each kind of request is measured on its own. Rounds
alternate the order, A B B A, from the same workers on the same connections, so the
machine's slow moments (two cores, shared) hit every kind alike. A phase's time runs from
releasing all threads at once to the last one finishing; CPU is metered around it.
"""

import math
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.load.client import Failure, Job, Record, SimulatedClient
from benchmarks.load.cpu import tree_cpu_seconds
from benchmarks.load.plan import chunk, spread, warmup_plan
from benchmarks.load.report import Load


@dataclass(frozen=True)
class Meters:
    """CPU seconds used so far: this process (the clients), gunicorn, and PostgreSQL when it
    runs here (NaN for the server of DATABASE_URL)."""

    server_pid: int
    database_pid: int | None

    def read(self) -> tuple[float, float, float]:
        database = tree_cpu_seconds(self.database_pid) if self.database_pid else math.nan
        return time.process_time(), tree_cpu_seconds(self.server_pid), database


class RunProgress:
    """Where the run is, for the message when the hard timeout stops it; `stop` ends the phase."""

    def __init__(self):
        self.phase = "setting up"
        self.acknowledged = 0
        self.stop = threading.Event()


@dataclass
class Result:
    warmup: Load
    trivial: Load
    page: Load
    submit: Load


Work = Callable[[SimulatedClient, Record, int], None]  # (client, its record, its index)


def rounds_run(
    *,
    clients: list[SimulatedClient],
    tasks,
    jobs: list[list[Job]],
    trivial: int,
    rounds: int,
    meters: Meters,
    progress: RunProgress,
) -> Result:
    result = Result(Load(), Load(), Load(), Load())
    stop = progress.stop

    def warm(client: SimulatedClient, record: Record, index: int) -> None:
        client.warm(warmup_plan(tasks=tasks, worker=index, workers=len(clients)), record, stop)

    progress.phase = "warming up"
    result.warmup.add(**phase_run(meters, clients, warm))
    trivial_counts = spread(trivial, len(clients) * rounds)
    for round_ in range(rounds):
        label = f"round {round_ + 1} of {rounds}"

        def trivial_phase(round_=round_, label=label):
            progress.phase = f"{label}, trivial requests"
            counts = trivial_counts[round_ * len(clients) : (round_ + 1) * len(clients)]
            result.trivial.add(**phase_run(meters, clients, lambda c, r, i: c.trivial(counts[i], r, stop)))

        def hit_phase(round_=round_, label=label):
            progress.phase = f"{label}, HIT pages"
            result.page.add(
                **phase_run(meters, clients, lambda c, r, i: c.pages(chunk(jobs[i], round_, rounds), r, stop))
            )
            progress.phase = f"{label}, HIT submissions"
            phase = phase_run(meters, clients, lambda c, r, i: c.answers(r, stop))
            result.submit.add(**phase)
            progress.acknowledged += sum(outcome.acknowledged for outcome in phase["record"].outcomes)

        # A B B A: neither kind always runs first, on the warmer or the more crowded half of a round.
        for phase in (trivial_phase, hit_phase) if round_ % 2 == 0 else (hit_phase, trivial_phase):
            phase()
    return result


def phase_run(meters: Meters, clients: list[SimulatedClient], work: Work) -> dict:
    """Every client does its share of `work` on its own thread, all released at once."""
    records = [Record() for _ in clients]
    go = threading.Event()

    def body(index: int) -> None:
        go.wait()
        try:
            work(clients[index], records[index], index)
        except Exception:  # a bug of the client's, not the server's: fail the run, say where
            records[index].failures.append(Failure("client", 0, traceback.format_exc()))

    threads = [threading.Thread(target=body, args=(index,), daemon=True) for index in range(len(clients))]
    for thread in threads:
        thread.start()
    before, start = meters.read(), time.perf_counter()
    go.set()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    client_cpu, server_cpu, database_cpu = (after - first for after, first in zip(meters.read(), before, strict=True))
    merged = Record()
    for record in records:
        merged.merge(record)
    return {
        "seconds": seconds,
        "client_cpu": client_cpu,
        "server_cpu": server_cpu,
        "database_cpu": database_cpu,
        "record": merged,
    }
