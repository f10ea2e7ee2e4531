"""Run a crawl as a child process and measure its whole process tree.

``wait4`` gives the crawl process's own CPU exactly, but not that of the processes
it started: the extraction workers are the forkserver's children, reaped by the
forkserver, so ``RUSAGE_CHILDREN`` never sees them.  Their CPU and memory are
sampled while they run (every ``interval`` seconds; the last sample of each
process counts).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from dataclasses import dataclass
from typing import IO, Any


@dataclass
class TreeRun:
    returncode: int
    wall_s: float
    crawl_cpu_s: float  # the crawl process, from wait4
    cpu_s: float  # the crawl and every process it started
    peak_rss_main: int  # bytes
    peak_rss_tree: int


def run_tree(
    command: list[str],
    *,
    cwd: str | os.PathLike[str],
    env: dict[str, str],
    stdout: IO[Any] | int,
    stderr: IO[Any] | int = subprocess.STDOUT,
    interval: float = 0.1,
) -> TreeRun:
    import psutil

    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=stdout, stderr=stderr)
    root = psutil.Process(proc.pid)
    peak_main = peak_tree = 0
    cpu_seen: dict[int, float] = {}  # pid → CPU seconds at its last sample
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            returncode = os.waitstatus_to_exitcode(status)
            break
        main, tree = sample_tree(root, cpu_seen)
        peak_main, peak_tree = max(peak_main, main), max(peak_tree, tree)
        time.sleep(interval)
    wall = time.perf_counter() - started
    proc.returncode = returncode
    crawl_cpu = usage.ru_utime + usage.ru_stime
    return TreeRun(
        returncode=returncode,
        wall_s=wall,
        crawl_cpu_s=crawl_cpu,
        cpu_s=crawl_cpu + sum(v for k, v in cpu_seen.items() if k != proc.pid),
        peak_rss_main=max(peak_main, usage.ru_maxrss * 1024),
        peak_rss_tree=peak_tree,
    )


def sample_tree(root: Any, cpu: dict[int, float]) -> tuple[int, int]:
    """RSS of *root* and of its whole tree; records each process's CPU seconds in *cpu*."""
    import psutil

    try:
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0, 0
    main = total = 0
    for process in processes:
        with contextlib.suppress(psutil.Error):
            with process.oneshot():
                rss = process.memory_info().rss
                times = process.cpu_times()
            cpu[process.pid] = times.user + times.system
            total += rss
            if process is root:
                main = rss
    return main, total
