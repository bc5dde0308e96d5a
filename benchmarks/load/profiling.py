"""`run.py --profile DIR`: cProfile inside each gunicorn worker, per kind of request.

A gunicorn config module (`--config python:benchmarks.load.profiling`). Each worker thread
profiles every request from gunicorn's pre_request hook to its post_request hook — the WSGI
application (middleware, URL resolving, the view, the response), writing the response, the
access log and the request_finished signal — into one profile per thread and kind of
request (trivial, page, submit), and each worker writes them to DIR when it exits. Times
are the thread's CPU time (time.thread_time), not wall time: with 4 threads a worker, wall
time would charge each function for the time its thread waited for the GIL. What
lies outside the hooks (parsing the request line and headers, the keep-alive poller) is not
in the profiles: compare their total with the CPU per request that run.py prints.
`profiles_print` (`python -m benchmarks.load.profiling DIR`) merges them per kind.

cProfile slows Python code several times over, so a profiled run's rates say nothing;
run without --profile for the figures.
"""

import cProfile
import os
import pstats
import sys
import threading
import time
from pathlib import Path

DIRECTORY_VARIABLE = "LOAD_BENCH_PROFILE_DIR"
KINDS = ("trivial", "page", "submit")

_local = threading.local()
_profiles: list[tuple[int, str, cProfile.Profile]] = []  # (thread id, kind, profile) of this worker
_lock = threading.Lock()


def request_kind(path: str) -> str:
    if path.startswith("/trivial/"):
        return "trivial"
    return "submit" if path.endswith("/submit/") else "page" if path.startswith("/hit/") else "other"


def pre_request(worker, req) -> None:
    profiles = getattr(_local, "profiles", None)
    if profiles is None:
        profiles = _local.profiles = {}
    kind = request_kind(req.path)
    profile = profiles.get(kind)
    if profile is None:
        profile = profiles[kind] = cProfile.Profile(time.thread_time)
        with _lock:
            _profiles.append((threading.get_ident(), kind, profile))
    _local.running = profile
    profile.enable()


def post_request(worker, req, environ, resp) -> None:
    profile = getattr(_local, "running", None)
    if profile is not None:
        profile.disable()
        _local.running = None


def worker_exit(server, worker) -> None:
    directory = Path(os.environ[DIRECTORY_VARIABLE])
    with _lock:
        for thread, kind, profile in _profiles:
            profile.dump_stats(directory / f"{kind}-{os.getpid()}-{thread}.prof")


def profiles_print(directory: Path, *, lines: int = 45, requests: dict[str, int] | None = None) -> None:
    """Each kind's profiles merged, the functions with the most cumulative time first."""
    for kind in KINDS:
        files = sorted(directory.glob(f"{kind}-*.prof"))
        if not files:
            continue
        stats = pstats.Stats(str(files[0]), stream=sys.stdout)
        for file in files[1:]:
            stats.add(str(file))
        count = (requests or {}).get(kind)
        print(f"\n===== {kind}: {len(files)} thread profiles" + (f", {count} requests" if count else "") + " =====")
        stats.sort_stats("cumulative").print_stats(lines)


if __name__ == "__main__":
    profiles_print(Path(sys.argv[1]), lines=int(sys.argv[2]) if len(sys.argv) > 2 else 45)
