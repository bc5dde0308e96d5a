"""Publishing and the approval pass at paper scale, in parallel and bounded, against the local
MTurk endpoint over HTTP.

    .venv/bin/python benchmarks/publish_bench.py [--hits 10950] [--approve-hits 10620]
        [--baseline-hits 200] [--latency-hits 400] [--latency-ms 150] [--workers 0,1,2]

Targets (issue 26): a paper-scale Likert publish (10,950 HITs) ≤ 3 min; an approval pass of
10,620 HITs × 5 assignments ≤ 10 min; each with 1 and 2 processes at work, and again with the
endpoint's latency fault at `--latency-ms` per call, where more processes must shorten it.

What "processes at work" means here: the pass is one process (in a deployment it runs inside a
Celery worker process); `--workers N` starts a Celery worker of N pool processes beside it, so
N workers are N + 1 processes taking chunks. Each process makes MARKETPLACE_CALLS_PER_PROCESS
calls at once, and all of them together at most MTURK_CONCURRENT_CALLS: with the defaults (4
and 8) a second process can double the calls in flight, a third cannot add any.

The endpoint is gunicorn (2 processes × 8 threads) on PostgreSQL, with Redis for Celery, as
in sync_bench.py; every process keeps its database connections as a deployment does
(CONN_MAX_AGE=60, config/settings.py's production default, as in e2e.py) unless CONN_MAX_AGE
is set. Every run works its own HITs (a fresh Likert batch to publish; a slice of
one round built in bulk, every slot submitted, to approve), so no run sees another's work.

In the same run, for each of publish and approval:

* baseline: the sequential code this replaces — crowd/work/publishing.py, and
  crowd/work/sync/approvals.py, at BASELINE_COMMIT, read with `git show` — one call after the
  other in this process, on `--baseline-hits` HITs (half as many under latency),
  extrapolated per HIT to the full size (said so in its row). The approval baseline swaps
  the approvals for the old ones and runs with MARKETPLACE_CALLS_PER_PROCESS=1, so its
  listings and deletions go one after the other too, as they did;
* ours: MARKETPLACE_CALLS_PER_PROCESS calls at once in this process alone (0 workers: 1
  process), then with a Celery worker of 1 and of 2 pool processes taking chunks beside it
  (the pass works chunks too: 2 and 3 processes), within MTURK_CONCURRENT_CALLS in flight; the
  same under the latency fault. A pass goes in PASS_CHUNKS chunks (crowd.work.chunks.chunks_split:
  at least 10 tasks or HITs a chunk, at most 50 tasks when publishing and 100 HITs when
  syncing), so the reduced sizes are shared too; each row says how many chunks it had.

Sizes smaller than the paper's are extrapolated per HIT, and each row says what it ran. CPU is
per process tree (this process, the endpoint, the workers), read from /proc; the endpoint's
CPU and queries per call are also read from its own meter (rehearsal/localturk/meter.py), per
operation, over every run of the benchmark. The last line is one JSON object of the figures.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
import types
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._harness import ROOT
from benchmarks.sync_bench import SLOTS, Bench, analyze, django_setup, machine, qc_ran, round_build, services_run

BASELINE_COMMIT = "be6617f"  # main before issue 26's parallel calls: one call after the other
PAPER_PUBLISH_HITS = 10_950
PAPER_APPROVE_HITS = 10_620


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hits", type=int, default=PAPER_PUBLISH_HITS, help="HITs each publish run creates")
    parser.add_argument("--approve-hits", type=int, default=PAPER_APPROVE_HITS, help="HITs each approval run approves")
    parser.add_argument("--baseline-hits", type=int, default=200, help="HITs the sequential baseline runs on")
    parser.add_argument("--latency-hits", type=int, default=400, help="HITs per publish run under the latency fault")
    parser.add_argument(
        "--approve-latency-hits", type=int, default=300, help="HITs per approval run under the latency fault"
    )
    parser.add_argument("--latency-ms", type=int, default=150, help="the endpoint's latency fault per call")
    parser.add_argument("--workers", default="0,1,2", help="Celery pool processes beside the pass, per run")
    return parser.parse_args()


def main() -> int:
    os.environ.setdefault("CONN_MAX_AGE", "60")  # read by this process, the endpoint and the workers
    return services_run(arguments(), name="publish", bench=lambda **kw: PublishBench(**kw))


class PublishBench(Bench):
    threads = 8  # per endpoint process: MTURK_CONCURRENT_CALLS' default fits in one

    def run(self) -> int:
        django_setup()
        from django.conf import settings
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        args = self.args
        figures: dict = {
            "sizes": {
                "publish_hits": args.hits,
                "approve_hits": args.approve_hits,
                "baseline_hits": args.baseline_hits,
            },
            "settings": {
                "MTURK_CONCURRENT_CALLS": settings.MTURK_CONCURRENT_CALLS,
                "MARKETPLACE_CALLS_PER_PROCESS": settings.MARKETPLACE_CALLS_PER_PROCESS,
            },
            "machine_before": machine(),
        }
        counts = [int(n) for n in args.workers.split(",")]
        latency_counts = counts
        started = time.perf_counter()
        slices = self.approval_round(len(counts) + len(latency_counts) + 2, counts, latency_counts)
        print(
            f"built the approval round ({sum(len(s) for s in slices.values()):,} HITs) in {time.perf_counter() - started:.0f} s"
        )
        with self.endpoint():
            figures["publish"] = self.publish_runs(counts, latency_counts)
            figures["approve"] = self.approval_runs(slices, counts, latency_counts)
            figures["endpoint_meter"] = self.endpoint_meter()
        figures["machine_after"] = machine()
        report(figures)
        print(json.dumps(figures, sort_keys=True))
        return 0

    def endpoint_meter(self) -> dict:
        """Each endpoint process's own figures (answered by whichever process takes the call)."""
        import requests

        seen: dict = {}
        for _ in range(40):
            figures = requests.get(f"http://127.0.0.1:{self.port}/localturk/_control/calls", timeout=10).json()
            seen[figures["pid"]] = figures
            if len(seen) == 2:
                break
        calls = sum(f["calls"] for f in seen.values())
        cpu = sum(f["calls"] * (f["cpu_ms_per_call"] or 0) for f in seen.values())
        operations: dict = {}
        for figures in seen.values():
            for name, op in figures["operations"].items():
                total = operations.setdefault(name, {"calls": 0, "cpu_ms": 0.0, "queries": 0.0})
                total["calls"] += op["calls"]
                total["cpu_ms"] += op["calls"] * op["cpu_ms_per_call"]
                total["queries"] += op["calls"] * op["queries_per_call"]
        return {
            "processes": len(seen),
            "calls": calls,
            "cpu_ms_per_call": round(cpu / calls, 2) if calls else None,
            "operations": {
                name: {
                    "calls": op["calls"],
                    "cpu_ms_per_call": round(op["cpu_ms"] / op["calls"], 2),
                    "queries_per_call": round(op["queries"] / op["calls"], 2),
                }
                for name, op in sorted(operations.items())
            },
        }

    # -- publishing

    def publish_runs(self, counts: list[int], latency_counts: list[int]) -> dict:
        from crowd.tasks import chunks_dispatch

        runs: dict = {}
        old = baseline_module("crowd/work/publishing.py")
        runs["baseline"] = self.publish_run(
            "baseline", self.args.baseline_hits, lambda batch_id: old.batch_publish(batch_id=batch_id)
        )
        for n in counts:
            dispatch = chunks_dispatch if n else None
            runs[f"ours_{n}"] = self.publish_run(
                f"ours, {processes(n)}", self.args.hits, lambda batch_id, d=dispatch: publish(batch_id, d), workers=n
            )
        with latency(self.args.latency_ms):
            sample = max(1, self.args.baseline_hits // 2)
            runs["latency_baseline"] = self.publish_run(
                f"baseline, {self.args.latency_ms} ms latency",
                sample,
                lambda batch_id: old.batch_publish(batch_id=batch_id),
            )
            for n in latency_counts:
                runs[f"latency_ours_{n}"] = self.publish_run(
                    f"ours, {processes(n)}, {self.args.latency_ms} ms latency",
                    self.args.latency_hits,
                    lambda batch_id, d=chunks_dispatch if n else None: publish(batch_id, d),
                    workers=n,
                )
        return runs

    def publish_run(self, name: str, hits: int, function, *, workers: int = 0) -> dict:
        from crowd.models import HIT

        batch_id = likert_batch_build(name=name, hits=hits)
        with self.celery(workers):
            figures, _ = self.measured(lambda: function(batch_id))
        published = HIT.objects.filter(task__batch_id=batch_id).count()
        assert published == hits, (name, published, hits)
        per_hit_figures(figures, hits, PAPER_PUBLISH_HITS)
        figures.update(hits=hits, processes=workers + 1)
        if not name.startswith("baseline"):  # the sequential code had no chunks
            figures["chunks"] = chunk_count(hits, "publish", shared=workers > 0)
        print(f"publish, {name}: {hits} HITs in {figures['seconds']} s; {figures}")
        return figures

    # -- approvals

    def approval_round(self, runs: int, counts: list[int], latency_counts: list[int]) -> dict[str, list[int]]:
        """One round of HITs, every slot submitted, sliced per approval run."""
        from benchmarks.sync_bench import hit_pks

        sizes = {"baseline": self.args.baseline_hits}
        sizes.update({f"ours_{n}": self.args.approve_hits for n in counts})
        sizes["latency_baseline"] = max(1, self.args.baseline_hits // 2)
        sizes.update({f"latency_ours_{n}": self.args.approve_latency_hits for n in latency_counts})
        campaign = round_build(hits=sum(sizes.values()))
        pks, slices, start = hit_pks(campaign), {}, 0
        for name, size in sizes.items():
            slices[name] = pks[start : start + size]
            start += size
        qc_ran(campaign)  # every answer due for approval once verified
        analyze()
        return slices

    def approval_runs(self, slices: dict[str, list[int]], counts: list[int], latency_counts: list[int]) -> dict:
        from django.conf import settings

        from crowd.tasks import chunks_dispatch
        from crowd.work.sync import chunk as sync_chunk

        old = baseline_module("crowd/work/sync/approvals.py")
        ours = sync_chunk.assignments_approve

        def old_approve(*, due, marketplace, channel, report):
            return old.assignments_approve(due=due, marketplace=marketplace, report=report)

        runs: dict = {}
        sync_chunk.assignments_approve = old_approve
        per_process = settings.MARKETPLACE_CALLS_PER_PROCESS
        settings.MARKETPLACE_CALLS_PER_PROCESS = 1  # listings and deletions one after the other
        try:
            runs["baseline"] = self.approval_run("baseline", slices["baseline"], None)
            with latency(self.args.latency_ms):
                runs["latency_baseline"] = self.approval_run(
                    f"baseline, {self.args.latency_ms} ms latency", slices["latency_baseline"], None
                )
        finally:
            sync_chunk.assignments_approve = ours
            settings.MARKETPLACE_CALLS_PER_PROCESS = per_process
        for n in counts:
            runs[f"ours_{n}"] = self.approval_run(
                f"ours, {processes(n)}", slices[f"ours_{n}"], chunks_dispatch if n else None, workers=n
            )
        with latency(self.args.latency_ms):
            for n in latency_counts:
                runs[f"latency_ours_{n}"] = self.approval_run(
                    f"ours, {processes(n)}, {self.args.latency_ms} ms latency",
                    slices[f"latency_ours_{n}"],
                    chunks_dispatch if n else None,
                    workers=n,
                )
        return runs

    def approval_run(self, name: str, hit_ids: list[int], dispatch, *, workers: int = 0) -> dict:
        from crowd.work.sync import assignments_sync

        with self.celery(workers):
            figures, result = self.measured(lambda: assignments_sync(hit_ids=hit_ids, dispatch=dispatch))
        assert result.approved == len(hit_ids) * SLOTS and result.completed == len(hit_ids), (name, result)
        per_hit_figures(figures, len(hit_ids), PAPER_APPROVE_HITS)
        figures.update(
            hits=len(hit_ids),
            approved=result.approved,
            chunks=chunk_count(len(hit_ids), "sync", shared=dispatch is not None),
            chunks_shared=result.chunks_shared,
            processes=workers + 1,
        )
        print(f"approval pass, {name}: {len(hit_ids)} HITs × {SLOTS} in {figures['seconds']} s; {figures}")
        return figures


def processes(workers: int) -> str:
    """A run's label: the processes taking chunks (the pass, and the Celery worker's pool)."""
    if not workers:
        return "1 process (the pass alone)"
    return f"{workers + 1} processes (the pass + {workers} Celery worker process{'es' if workers > 1 else ''})"


def chunk_count(items: int, job: str, *, shared: bool) -> int:
    """How many chunks a pass of `items` HITs (sync) or tasks (publish) goes in."""
    from crowd.work import publishing, sync
    from crowd.work.chunks import chunks_split

    module = publishing if job == "publish" else sync
    return len(chunks_split(list(range(items)), floor=module.CHUNK_FLOOR, ceiling=module.CHUNK_SIZE, shared=shared))


def publish(batch_id: int, dispatch) -> None:
    from crowd.work.publishing import batch_publish

    batch_publish(batch_id=batch_id, dispatch=dispatch)


class latency:
    """The endpoint's latency fault on every requester call while inside."""

    def __init__(self, milliseconds: int):
        self.milliseconds = milliseconds

    def __enter__(self):
        from rehearsal.localturk import faults

        faults.inject(latency_ms=self.milliseconds)

    def __exit__(self, *exc):
        from rehearsal.localturk import faults

        faults.clear()


def likert_batch_build(*, name: str, hits: int) -> int:
    """A campaign of one topic whose Likert batch has `hits` tasks, unpublished."""
    from annotation.batching import likert_tasks_build
    from annotation.models import Batch, Campaign, Proposition, Topic
    from annotation.text import normalize_text, proposition_text

    slug = "publish-" + hashlib.sha256(name.encode()).hexdigest()[:16]  # labels alike in their first 50 characters
    campaign = Campaign.objects.create(
        name=name,
        slug=slug,
        channel=Campaign.Channel.MTURK,
        environment=Campaign.Environment.LOCAL,
        trap_rate=0,
        budget_cap=Decimal("999999"),
    )
    topic = Topic.objects.create(campaign=campaign, key="topic", description="How students pay for college")
    texts = [("Lender", "offers", f"loans to students, variant {n}") for n in range(hits * 5)]
    Proposition.objects.bulk_create(
        Proposition(topic=topic, subject=s, relation=r, object=o, normalized=normalize_text(proposition_text(s, r, o)))
        for s, r, o in texts
    )
    likert_tasks_build(topic=topic, seed=1)
    analyze()
    return Batch.objects.get(topic=topic).pk


def baseline_module(path: str) -> types.ModuleType:
    """`path` as it was at BASELINE_COMMIT, as a module of its own."""
    shown = subprocess.run(["git", "show", f"{BASELINE_COMMIT}:{path}"], cwd=ROOT, capture_output=True, text=True)
    if shown.returncode:
        raise SystemExit(f"git show {BASELINE_COMMIT}:{path} failed: {shown.stderr}")
    module = types.ModuleType(f"baseline_{Path(path).stem}")
    exec(compile(shown.stdout, f"{BASELINE_COMMIT}:{path}", "exec"), module.__dict__)
    return module


def per_hit_figures(figures: dict, hits: int, paper_hits: int) -> None:
    figures["calls_per_hit"] = round(figures["calls"] / hits, 3)
    figures["ms_per_hit"] = round(1000 * figures["seconds"] / hits, 2)
    figures["paper_scale_seconds"] = round(figures["seconds"] * paper_hits / hits)
    figures["cpu_ms_per_hit"] = {name: round(1000 * value / hits, 1) for name, value in figures["cpu_seconds"].items()}
    calls = max(figures["calls"], 1)
    figures["endpoint_cpu_ms_per_call"] = round(1000 * figures["cpu_seconds"].get("endpoint", 0) / calls, 2)


def report(figures: dict) -> None:
    for what, paper, target in (
        ("publish", PAPER_PUBLISH_HITS, 180),
        ("approve", PAPER_APPROVE_HITS, 600),
    ):
        print()
        print(f"{what}: paper scale {paper:,} HITs, target ≤ {target} s (sizes below; extrapolated per HIT)")
        print(
            f"{'run':48} {'HITs':>6} {'chunks':>6} {'s':>8} {'calls/HIT':>10} {'ms/HIT':>8} {'paper s':>8}  endpoint CPU ms/call"
        )
        for name, run in figures[what].items():
            if "baseline" in name:
                label = name.replace("_", " ") + f" (code at {BASELINE_COMMIT}, sequential)"
            else:
                label = ("latency " if "latency" in name else "") + f"ours, {run['processes']} process(es)"
            print(
                f"{label:48} {run['hits']:>6} {run.get('chunks', '-'):>6} {run['seconds']:>8} {run['calls_per_hit']:>10} "
                f"{run['ms_per_hit']:>8} {run['paper_scale_seconds']:>8}  {run['endpoint_cpu_ms_per_call']}"
            )
        runs = figures[what]
        for fewer, more in ((0, 1), (1, 2)):
            if f"latency_ours_{fewer}" in runs and f"latency_ours_{more}" in runs:
                ratio = round(
                    runs[f"latency_ours_{fewer}"]["ms_per_hit"] / runs[f"latency_ours_{more}"]["ms_per_hit"], 2
                )
                figures[f"{what}_latency_ratio_{fewer + 1}_to_{more + 1}_processes"] = ratio
                print(f"under latency, {fewer + 1} → {more + 1} processes at work: {ratio}× less time a HIT")
    meter = figures["endpoint_meter"]
    print(
        f"endpoint's own meter, {meter['calls']} calls in {meter['processes']} processes: {meter['cpu_ms_per_call']} ms CPU a call"
    )
    for name, op in meter["operations"].items():
        print(
            f"  {name:32} {op['calls']:>7} calls {op['cpu_ms_per_call']:>7} ms CPU {op['queries_per_call']:>6} queries a call"
        )
    print(f"database connections kept for {os.environ.get('CONN_MAX_AGE')} s (CONN_MAX_AGE)")
    print(f"load before {figures['machine_before']['load_average']}, after {figures['machine_after']['load_average']}")


if __name__ == "__main__":
    sys.exit(main())
