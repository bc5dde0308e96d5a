"""CPU time spent by each side of the benchmark (client, gunicorn, PostgreSQL), from /proc.

Two cores are shared by all three, so where the CPU goes explains the throughput.
"""

import itertools
import os
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float:
    """User and system time of process `pid` and its children, living or already reaped."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        fields = _stat_fields(stat)
        if fields is None:
            continue
        if stat.parent.name == str(pid):
            total += sum(int(value) for value in fields[11:15])  # utime, stime, cutime, cstime
        elif int(fields[1]) == pid:  # a child: its ppid is `pid`
            total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


def postgres_pid(data_directory: Path | None = None, *, port: int | None = None) -> int | None:
    """The postmaster serving `data_directory`, or listening on `port` as tests/services.py
    starts it (`-p PORT` on its command line; under runuser when started as root)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if not args[0].endswith(b"/postgres"):
            continue
        if data_directory is not None and str(data_directory).encode() in args:
            return int(cmdline.parent.name)
        if port is not None and any(
            flag == b"-p" and value == str(port).encode() for flag, value in itertools.pairwise(args)
        ):
            return int(cmdline.parent.name)
    return None


def _stat_fields(stat: Path) -> list[str] | None:
    """The fields after the command name, which may itself hold spaces or parentheses."""
    try:
        return stat.read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None  # a process that ended while we looked
