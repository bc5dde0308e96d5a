"""Every benchmark in one run, at the sizes the issues name, into one table and one JSON file.

    .venv/bin/python -m tests.services run -- .venv/bin/python benchmarks/run_all.py [--quick]
        [--only NAME ...] [--skip NAME ...] [--out DIR]
    make bench-figures            # the same, at full size, under tests/services.py

Each benchmark runs as its own process, one after the other (never two at once: they share two
cores), with its output kept in DIR/<name>.log. Before and after each one the machine's load
(`uptime`'s 1-, 5- and 15-minute averages) is recorded, and for the whole run the git commit
(with "+dirty" when the work tree differs from it) and the date. At the end DIR holds:

* `results.jsonl`: one JSON object per benchmark (name, command, size, commit, start, wall
  seconds, load before and after, exit status, and the benchmark's own last JSON line, the
  figures it printed beside its baseline);
* `table.md`: one markdown table of the same, a row per benchmark with the lines of its output
  that carry its figures, from which benchmarks/README.md's "Current figures" is written.

Sizes: the ones issues 17, 23 and 26 name, except where that takes far over ten minutes on 2
cores: import (1 repeat instead of 3) and e2e (3 × 500 instead of 3 × 1,750) run reduced, and
their rows say so; `--full` runs those at the issues' sizes too. `e2e-prolific` runs the
campaign on Prolific (e2e.py --channel prolific) at 3 × 1,750, about 8 minutes. The default run takes about
1.5 hours on two quiet cores (`--full` about 2; scale.py and sync_bench.py are the longest,
~30 and ~15 minutes). `--quick` runs every benchmark at a small size, to check that each still
runs on today's code (~30 minutes on a busy machine; its figures are not the issues').

DIR is var/bench/<date>-<commit> by default. The exit status is 1 when any benchmark failed
(its row says how); a missed speed target is not a failure (benchmarks report, tests assert).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


@dataclass(frozen=True)
class Bench:
    name: str
    script: str
    full: list[str]  # arguments at the size the issues name
    quick: list[str]  # arguments for --quick: does it still run?
    size: str  # the full size, in words
    note: str = ""  # why the full size is not the issue's, when it is not
    reduced: list[str] | None = None  # the default's arguments where the size takes far over 10 minutes
    timeout: int = 3600  # seconds; a benchmark past this is ended and its row says so
    keep: tuple[str, ...] = field(default=())  # prefixes of the output lines the table quotes


BENCHES = [
    Bench(
        "rating",
        "benchmarks/rating_bench.py",
        [],
        ["--comparisons", "2000"],
        "20,000 comparisons over 112 items",
        keep=("fit", "rate_1vs1", "speed", "max"),
    ),
    Bench("selection", "benchmarks/selection_bench.py", [], ["--quick"], "112 items, 20 seeds, 10 % of pairs"),
    Bench(
        "hit_page",
        "benchmarks/hit_page_bench.py",
        [],
        ["--requests", "100", "--warmup", "10"],
        "1,000 requests of each kind, PostgreSQL and SQLite",
    ),
    Bench(
        "quality",
        "benchmarks/quality_bench.py",
        [],
        ["--propositions", "2000", "--workers", "60"],
        "250,000 Likert labels (50,000 propositions × 5, 300 workers)",
    ),
    Bench(
        "bundle",
        "benchmarks/bundle_bench.py",
        [],
        ["--topics", "2", "--propositions", "200"],
        "30 topics × 1,750 propositions",
    ),
    Bench(
        "import",
        "benchmarks/import_bench.py",
        [],
        ["--rows", "5000", "--repeat", "1"],
        "52,500 and 525,000 rows, 3 repeats",
        note="reduced: 1 repeat (3 take over 20 minutes; --full runs 3)",
        reduced=["--repeat", "1"],
    ),
    Bench(
        "sync",
        "benchmarks/sync_bench.py",
        [],
        ["--hits", "120", "--approve-hits", "20", "--workers", "0,1"],
        "10,620 HITs × 5 (verify pass alone, with 1 and 2 Celery processes); approval pass on 200 (the old path: issue 17's recorded figures, not re-run)",
        timeout=7200,
    ),
    Bench(
        "publish",
        "benchmarks/publish_bench.py",
        ["--hits", "10950", "--approve-hits", "10620", "--workers", "1,2"],
        ["--hits", "40", "--approve-hits", "20", "--baseline-hits", "5", "--latency-hits", "20"]
        + ["--approve-latency-hits", "10", "--workers", "1"],
        "Likert publish of 10,950 HITs, approval pass of 10,620 × 5, with 1 and 2 Celery processes, also at 150 ms a call",
        note="reduced: 1,000 HITs published, 500 approved, 200 and 100 under latency (paper scale takes hours here: "
        "the local endpoint's CPU per call is the floor; --full runs it)",
        reduced=["--hits", "1000", "--approve-hits", "500", "--latency-hits", "200"]
        + ["--approve-latency-hits", "100", "--workers", "1,2"],
        timeout=3 * 3600,
    ),
    Bench(
        "budget",
        "benchmarks/budget_bench.py",
        [],
        ["--quick"],
        "8 seeds × 30/60/112 items × budgets 5–50 %",
    ),
    Bench("suitability", "benchmarks/suitability_bench.py", [], ["--seeds", "3"], "320 CaRB tuples, 20 seeds"),
    Bench(
        "scale",
        "benchmarks/scale.py",
        [],
        ["--topics", "2,3", "--propositions", "150", "--pages", "3", "--requests", "2", "--baseline-topics", "2"],
        "3, 10 and 30 topics × 1,750 propositions; the sync and publishing sample and QC baseline at 3 and 10",
        timeout=5400,
    ),
    Bench(
        "load",
        "benchmarks/load/run.py",
        ["--repeat", "3", "--timeout", "900"],
        ["--submissions", "200", "--workers", "20"],
        "50 workers, 2,000 submissions, 3 runs (median)",
    ),
    Bench(
        "e2e",
        "benchmarks/e2e.py",
        ["--topics", "3", "--propositions", "1750"],
        ["--topics", "2", "--propositions", "60"],
        "3 topics × 1,750 propositions, from import to the zip",
        note="reduced: 3 × 500 (3 × 1,750 takes ~25 minutes on quiet cores, hours on busy ones; --full runs it)",
        reduced=["--topics", "3", "--propositions", "500"],
        timeout=3 * 3600,
    ),
    Bench(
        "e2e-prolific",
        "benchmarks/e2e.py",
        ["--channel", "prolific", "--topics", "3", "--propositions", "1750", "--sync-interval", "60"],
        ["--channel", "prolific", "--topics", "2", "--propositions", "60"],
        "3 topics × 1,750 propositions on Prolific, participants in sessions, beat 60 s",
        timeout=3600,
    ),
]


def main() -> int:
    args = _arguments()
    commit = _commit()
    chosen = [bench for bench in BENCHES if (not args.only or bench.name in args.only) and bench.name not in args.skip]
    out = args.out or ROOT / "var" / "bench" / f"{datetime.now(UTC):%Y%m%d-%H%M}-{commit.replace('+', '-')}"
    out.mkdir(parents=True, exist_ok=True)
    sizes = "quick sizes" if args.quick else "the issues' sizes" if args.full else "the issues' sizes, two reduced"
    print(f"benchmarks at {commit}, {sizes}, output in {out}", flush=True)
    rows = []
    for bench in chosen:
        row = _run(bench, quick=args.quick, full=args.full, out=out, commit=commit)
        rows.append(row)
        with (out / "results.jsonl").open("a") as results:
            results.write(json.dumps(row) + "\n")
        verdict = "ok" if row["status"] == 0 else f"FAILED ({row['status']})"
        print(
            f"  {bench.name:<12} {verdict:<12} {row['seconds']:>8.0f} s   load {row['load_before'][0]:.1f} → "
            f"{row['load_after'][0]:.1f}",
            flush=True,
        )
    (out / "table.md").write_text(_table(rows, commit=commit, quick=args.quick))
    print(f"table: {out / 'table.md'}; JSON lines: {out / 'results.jsonl'}")
    return 0 if all(row["status"] == 0 for row in rows) else 1


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = [bench.name for bench in BENCHES]
    parser.add_argument("--quick", action="store_true", help="small sizes: does every benchmark still run?")
    parser.add_argument("--full", action="store_true", help="the issues' sizes even where they take far over 10 min")
    parser.add_argument("--only", nargs="+", choices=names, default=[], metavar="NAME", help=", ".join(names))
    parser.add_argument("--skip", nargs="+", choices=names, default=[], metavar="NAME")
    parser.add_argument("--out", type=Path, help="folder for the logs, results.jsonl and table.md")
    return parser.parse_args()


def _commit() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True)
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _load() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def _run(bench: Bench, *, quick: bool, full: bool, out: Path, commit: str) -> dict:
    arguments = bench.quick if quick else bench.full if full or bench.reduced is None else bench.reduced
    command = [PY, bench.script, *arguments]
    log = out / f"{bench.name}.log"
    load_before, started_at, started = _load(), datetime.now(UTC), time.monotonic()
    with log.open("w") as output:
        try:
            status = subprocess.run(
                command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT, timeout=bench.timeout
            ).returncode
        except subprocess.TimeoutExpired:
            status = "timeout"
    seconds = time.monotonic() - started
    lines = log.read_text(errors="replace").splitlines()
    return {
        "name": bench.name,
        "command": " ".join([".venv/bin/python", bench.script, *arguments]),
        "size": "quick size (--quick)" if quick else bench.size,
        "note": "" if quick or full or bench.reduced is None else bench.note,
        "commit": commit,
        "started": started_at.isoformat(timespec="seconds"),
        "seconds": round(seconds, 1),
        "load_before": load_before,
        "load_after": _load(),
        "status": status,
        "figures": _last_json(lines),
        "summary": _summary(lines, bench.keep),
    }


def _last_json(lines: list[str]) -> dict | None:
    for line in reversed(lines):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def _summary(lines: list[str], keep: tuple[str, ...]) -> list[str]:
    """The lines that carry a benchmark's figures: its verdicts (targets met or missed), the
    lines starting with one of its `keep`, and the last lines it printed (each ends with its
    table), at most 16, in order, without its JSON line."""
    text = [line.rstrip() for line in lines if line.strip() and not line.startswith("{")]
    verdicts = {index for index, line in enumerate(text) if any(word in line for word in (" met", "MISSED"))}
    kept = {index for index, line in enumerate(text) if keep and line.strip().startswith(keep)}
    tail = set(range(max(0, len(text) - 8), len(text)))
    return [text[index].strip() for index in sorted(verdicts | kept | tail)][-16:]


def _table(rows: list[dict], *, commit: str, quick: bool) -> str:
    header = [
        f"# Benchmark run at {commit}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
        + (" (quick sizes: not the issues' figures)" if quick else ""),
        "",
        f"Machine: {os.cpu_count()} CPUs; load is `uptime`'s 1/5/15-minute averages before → after each benchmark.",
        "",
        "| benchmark | command | size | wall | load before → after | status | figures (its own verdict lines) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    body = []
    for row in rows:
        loads = f"{'/'.join(map(str, row['load_before']))} → {'/'.join(map(str, row['load_after']))}"
        size = row["size"] + (f" ({row['note']})" if row["note"] else "")
        figures = "<br>".join(line.replace("|", "\\|") for line in row["summary"]) or "—"
        status = "ok" if row["status"] == 0 else f"**failed: {row['status']}**"
        body.append(
            f"| {row['name']} | `{row['command']}` | {size} | {row['seconds']:.0f} s | {loads} | {status} | {figures} |"
        )
    return "\n".join(header + body) + "\n"


if __name__ == "__main__":
    sys.exit(main())
