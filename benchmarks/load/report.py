"""The printed table: latency and throughput beside the trivial view, targets, correctness."""

import dataclasses
import json
import statistics
from collections import Counter
from dataclasses import dataclass

from benchmarks.load.audit import Check
from benchmarks.load.client import Record

P99_SUBMIT_MS = 250.0
THROUGHPUT_SHARE = 0.40  # answers (POST …/submit/) per second against trivial requests per second


@dataclass
class Load:
    """One kind of phase summed over the rounds: wall time, CPU and what the clients saw."""

    seconds: float = 0.0
    client_cpu: float = 0.0  # this process: the simulated workers
    server_cpu: float = 0.0  # gunicorn's processes
    database_cpu: float = 0.0  # PostgreSQL's processes, NaN when it runs elsewhere
    record: Record | None = None

    def add(self, *, seconds: float, client_cpu: float, server_cpu: float, database_cpu: float, record: Record) -> None:
        self.seconds += seconds
        self.client_cpu += client_cpu
        self.server_cpu += server_cpu
        self.database_cpu += database_cpu
        if self.record is None:
            self.record = Record()
        self.record.merge(record)


def latency_row(name: str, values: list[float], seconds: float) -> str:
    if len(values) < 2:
        return f"{name:<34}{len(values):>7}"
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return (
        f"{name:<34}{len(values):>7}{len(values) / seconds:>9.1f}"
        f"{statistics.median(values):>9.1f}{cuts[94]:>9.1f}{cuts[98]:>9.1f}{max(values):>9.1f}"
    )


@dataclass
class Figures:
    """What a run's summary keeps (run.py --repeat)."""

    correct: bool  # every correctness check passed
    share: float  # answers per second / trivial requests per second
    p99_submit_ms: float
    answers_per_second: float
    trivial_per_second: float
    page_share: float = float("nan")  # HIT pages per second / trivial requests per second
    both_share: float = float("nan")  # whole submissions (page + answer) per second / trivial requests per second
    cpu_ms: dict | None = (
        None  # CPU ms per request: {"trivial"|"page"|"answer": {"client"|"gunicorn"|"PostgreSQL": ms}}
    )
    load_before: float = float("nan")  # 1-minute load average before and after the run
    load_after: float = float("nan")


def report_print(
    *, header: list[str], trivial: Load, page: Load, submit: Load, submissions: int, checks: list[Check]
) -> Figures:
    """Print everything; `correct` says whether every correctness check passed (speed targets aside)."""
    for line in header:
        print(line)
    print()
    print(f"{'':<34}{'count':>7}{'per s':>9}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    pages, posts = page.record.latencies["page"], submit.record.latencies["submit"]
    print(latency_row("trivial view   GET /trivial/", trivial.record.latencies["trivial"], trivial.seconds))
    print(latency_row("HIT page       GET /hit/<uuid>/", pages, page.seconds))
    print(latency_row("submission     POST …/submit/", posts, submit.seconds))
    print(latency_row("duplicate      POST …/submit/", submit.record.latencies["duplicate"], submit.seconds))
    trivial_rate = len(trivial.record.latencies["trivial"]) / trivial.seconds
    submission_rate = len(posts) / submit.seconds
    both = page.seconds + submit.seconds
    print(
        f"pages in {page.seconds:.1f} s, answers in {submit.seconds:.1f} s: {submissions} HIT submissions "
        f"(page + answer) in {both:.1f} s = {submissions / both:.1f}/s; trivial: {trivial_rate:.1f} requests/s "
        f"in {trivial.seconds:.1f} s"
    )
    print(
        f"CPU ms per trivial request: {_cpu(trivial, len(trivial.record.latencies['trivial']))}; "
        f"per page: {_cpu(page, len(pages))}; per answer: {_cpu(submit, len(posts))}"
    )
    resent = Counter(
        line.split(" ", 1)[0] for line in trivial.record.resent + page.record.resent + submit.record.resent
    )
    print(
        f"requests sent again because the server closed a kept connection under them: {sum(resent.values())}"
        + (f" ({', '.join(f'{count} {method}' for method, count in sorted(resent.items()))})" if resent else "")
    )
    print()
    print("targets (speed: reported, never a failure)")
    p99 = statistics.quantiles(posts, n=100, method="inclusive")[98] if len(posts) > 1 else float("nan")
    share = submission_rate / trivial_rate
    _verdict(f"p99 submission ≤ {P99_SUBMIT_MS:g} ms", f"{p99:.1f} ms", p99 <= P99_SUBMIT_MS, speed=True)
    _verdict(
        f"submission throughput ≥ {THROUGHPUT_SHARE:.0%} of trivial view's",
        f"{submission_rate:.1f}/s vs {trivial_rate:.1f}/s = {share:.0%}",
        share >= THROUGHPUT_SHARE,
        speed=True,
    )
    page_share = len(pages) / page.seconds / trivial_rate
    print(
        f"  (the page: {len(pages) / page.seconds:.1f}/s = {page_share:.0%} of the trivial view's; "
        f"page and answer together: {submissions / both / trivial_rate:.0%})"
    )
    print()
    print("correctness (a failure here fails the run)")
    for check in checks:
        _verdict(check.name, check.figures, check.ok)
        if check.detail and not check.ok:
            print(f"    {check.detail}")
    correct = all(check.ok for check in checks)
    print("correct: every answer stored once, as sent" if correct else "INCORRECT: see the failed checks above")
    cpu = {
        name: _cpu_ms(load, count)
        for name, load, count in (
            ("trivial", trivial, len(trivial.record.latencies["trivial"])),
            ("page", page, len(pages)),
            ("answer", submit, len(posts)),
        )
    }
    both_share = submissions / both / trivial_rate
    return Figures(correct, share, p99, submission_rate, trivial_rate, page_share, both_share, cpu)


def repeats_print(figures: list[Figures]) -> None:
    """The spread of several runs: each run's share and p99, their medians, and how many met."""
    shares = [f.share for f in figures]
    p99s = [f.p99_submit_ms for f in figures]
    met = sum(share >= THROUGHPUT_SHARE for share in shares)
    print(f"\n{len(figures)} runs, in order")
    print(
        "  submission throughput / trivial: "
        + ", ".join(f"{share:.0%}" for share in shares)
        + f"; median {statistics.median(shares):.0%} (target ≥ {THROUGHPUT_SHARE:.0%}: "
        + f"{'met' if statistics.median(shares) >= THROUGHPUT_SHARE else 'MISSED'} in the median, "
        + f"{met} of {len(shares)} runs)"
    )
    print(
        "  p99 submission ms: "
        + ", ".join(f"{p99:.0f}" for p99 in p99s)
        + f"; median {statistics.median(p99s):.0f} (target ≤ {P99_SUBMIT_MS:g}: "
        + f"{sum(p99 <= P99_SUBMIT_MS for p99 in p99s)} of {len(p99s)} runs)"
    )
    print(
        "  answers/s: "
        + ", ".join(f"{f.answers_per_second:.0f}" for f in figures)
        + "; trivial/s: "
        + ", ".join(f"{f.trivial_per_second:.0f}" for f in figures)
    )
    print(
        "  page and answer together / trivial: "
        + ", ".join(f"{f.both_share:.0%}" for f in figures)
        + f"; median {statistics.median(f.both_share for f in figures):.0%}; the page alone: "
        + ", ".join(f"{f.page_share:.0%}" for f in figures)
        + f"; median {statistics.median(f.page_share for f in figures):.0%}"
    )
    print(
        "  load average (1 min) before → after each run: "
        + ", ".join(f"{f.load_before:.1f} → {f.load_after:.1f}" for f in figures)
    )
    print("  correct in every run" if all(f.correct for f in figures) else "  INCORRECT in some run: see above")
    print(
        json.dumps(
            {
                "runs": [dataclasses.asdict(f) for f in figures],
                "median_share": statistics.median(shares),
                "median_p99_submit_ms": statistics.median(p99s),
                "median_both_share": statistics.median(f.both_share for f in figures),
                "median_page_share": statistics.median(f.page_share for f in figures),
                "targets": {"share": THROUGHPUT_SHARE, "p99_submit_ms": P99_SUBMIT_MS},
            }
        )
    )


def _cpu_ms(load: Load, count: int) -> dict:
    shares = [("client", load.client_cpu), ("gunicorn", load.server_cpu), ("PostgreSQL", load.database_cpu)]
    return {name: round(1000 * seconds / count, 2) for name, seconds in shares if seconds == seconds and count}


def _cpu(load: Load, count: int) -> str:
    shares = [("client", load.client_cpu), ("gunicorn", load.server_cpu), ("PostgreSQL", load.database_cpu)]
    return ", ".join(f"{name} {1000 * seconds / count:.2f}" for name, seconds in shares if seconds == seconds)


def _verdict(name: str, figures: str, ok: bool, *, speed: bool = False) -> None:
    verdict = ("met" if ok else "MISSED") if speed else ("ok" if ok else "FAILED")
    print(f"  {verdict:<8}{name:<48}{figures}")
