"""CPU seconds and peak RSS of a crawl's whole process tree, read from /proc (Linux).

A crawl is more than one process: extraction workers (children of the
multiprocessing forkserver, which reaps them), Playwright's driver and the
browsers (children of the driver).  Neither the crawl's ``wait4`` nor
``RUSAGE_CHILDREN`` counts all of them: a process's CPU reaches its reaper's
account only, and the forkserver is nobody's to wait for.  So the tree is sampled:

- the tree is the root and its descendants at each sample, plus the processes
  *extra* names by (pid, start time): those a caller found by other means, such
  as the ones re-parented away from the root;
- a process's CPU is its own user + system time, never what it reaped from its
  children, read at its last sample (a zombie's is final); the tree's CPU is the
  sum over every process seen, so each counts once, whoever reaps it;
- processes are told apart by pid and start time: a reused pid is another one;
- what a process uses after its last sample, and a process that starts and ends
  between two samples, is missed: sample often (0.1 s costs a scan of /proc).

:func:`run_tree` runs a command under a sampler; :class:`TreeSampler` samples a
tree that something else runs, in a thread of its own or sample by sample.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import IO, Any

TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class ProcStat:
    """One line of /proc/PID/stat, the fields used here."""

    pid: int
    ppid: int
    state: str  # "Z": a zombie, dead and not yet reaped
    start: int  # clock ticks after boot
    cpu_s: float  # its own user + system time
    reaped_s: float  # that of the children it has waited for
    rss: int  # bytes


def proc_stat(pid: int) -> ProcStat | None:
    """*pid*'s stat, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            line = stat.read()
        fields = line[line.rindex(")") + 2 :].split()
        return ProcStat(
            pid=pid,
            ppid=int(fields[1]),
            state=fields[0],
            start=int(fields[19]),
            cpu_s=(int(fields[11]) + int(fields[12])) / TICK,
            reaped_s=(int(fields[13]) + int(fields[14])) / TICK,
            rss=int(fields[21]) * PAGE,
        )
    except (OSError, ValueError, IndexError):
        return None


def all_stats() -> dict[int, ProcStat]:
    """The stat of every process on the machine, by pid."""
    found = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (stat := proc_stat(int(entry.name))) is not None:
            found[stat.pid] = stat
    return found


def descendants(roots: Iterable[int], stats: dict[int, ProcStat]) -> set[int]:
    """*roots* (those still in *stats*) and every process below them."""
    children: dict[int, list[int]] = defaultdict(list)
    for stat in stats.values():
        children[stat.ppid].append(stat.pid)
    found = {pid for pid in roots if pid in stats}
    stack = list(found)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


class TreeSampler:
    """The CPU and the peak RSS of *root*'s tree, as the module docstring counts them.

    With *since_now*, CPU spent before this sampler was built is left out (for a
    tree that is already running, such as this process's own)."""

    def __init__(
        self,
        root: int,
        interval: float = 0.1,
        extra: Callable[[], Iterable[tuple[int, int]]] | None = None,
        since_now: bool = False,
    ) -> None:
        self.root, self.interval, self.extra = root, interval, extra
        self.cpu: dict[tuple[int, int], float] = {}  # (pid, start) → CPU at its last sample
        self.root_key: tuple[int, int] | None = None  # set at the first sight of the root
        self.root_reaped_s = 0.0
        self.peak_rss_main = self.peak_rss_tree = 0
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self.baseline: dict[tuple[int, int], float] = {}
        if since_now:
            self.sample()
            self.baseline = dict(self.cpu)

    @property
    def cpu_s(self) -> float:
        """CPU seconds of every process seen (less the baseline)."""
        return sum(cpu - self.baseline.get(key, 0.0) for key, cpu in self.cpu.items())

    @property
    def root_cpu_s(self) -> float:
        """CPU seconds of the root alone, at its last sample."""
        return self.cpu.get(self.root_key, 0.0) if self.root_key else 0.0

    def sample(self) -> None:
        stats = all_stats()
        root = stats.get(self.root)
        if root is not None and self.root_key in (None, (root.pid, root.start)):
            self.root_key = (root.pid, root.start)
        known = {self.root_key, *(self.extra() if self.extra else ())}
        roots = [pid for pid, stat in stats.items() if (pid, stat.start) in known]
        tree = 0
        for pid in descendants(roots, stats):
            stat = stats[pid]
            key = (pid, stat.start)
            self.cpu[key] = stat.cpu_s
            if stat.state != "Z":
                tree += stat.rss
            if key == self.root_key:
                self.root_reaped_s = stat.reaped_s
                self.peak_rss_main = max(self.peak_rss_main, stat.rss)
        self.peak_rss_tree = max(self.peak_rss_tree, tree)

    def start(self) -> TreeSampler:
        """Sample every *interval* seconds in a thread, until :meth:`stop`."""
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> float:
        """Stop the thread, take a last sample; the tree's CPU seconds."""
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()
        return self.cpu_s

    def _run(self) -> None:
        while not self._done.wait(self.interval):
            self.sample()


@dataclass
class TreeRun:
    returncode: int
    wall_s: float
    crawl_cpu_s: float  # the crawl process, from wait4 (with what it reaped itself)
    cpu_s: float  # the crawl and every process it started, each counted once
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
    """Run *command* to its end, sampling its tree every *interval* seconds."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=stdout, stderr=stderr)
    sampler = TreeSampler(proc.pid, interval)
    exited = os.WEXITED | os.WNOHANG | os.WNOWAIT  # a zombie until wait4: still sampled
    while os.waitid(os.P_PID, proc.pid, exited) is None:
        sampler.sample()
        time.sleep(interval)
    sampler.sample()  # the zombie's own CPU and what it reaped are final
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    crawl_cpu = usage.ru_utime + usage.ru_stime
    # wait4 is exact but holds what the crawl reaped, which the samples count already;
    # the samples are in clock ticks.
    own = max(sampler.root_cpu_s, crawl_cpu - sampler.root_reaped_s)
    return TreeRun(
        returncode=proc.returncode,
        wall_s=time.perf_counter() - started,
        crawl_cpu_s=crawl_cpu,
        cpu_s=sampler.cpu_s - sampler.root_cpu_s + own,
        peak_rss_main=max(sampler.peak_rss_main, usage.ru_maxrss * 1024),
        peak_rss_tree=sampler.peak_rss_tree,
    )
