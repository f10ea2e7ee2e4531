"""N real Scrapy nodes against one Redis: start them, kill one, collect what they report.

:class:`ClusterNodes` runs *nodes* ``scrapy runspider`` processes of one spider
with the same settings, each with its own name (``USER_AGENT`` ``node-<i>``, so
the farm's log tells who fetched what; ``FOCUS_NODE_NAME`` the same), its own
log file, stats file (harness.stats_dump) and working directory (each node's
corpus and JOBDIR are its own: bodies never go through Redis).  :meth:`run` starts
them *stagger* seconds apart, SIGKILLs one node once a :class:`Kill` says so
(seconds after that node started, or a predicate polled every 50 ms),
waits for every node to exit (SIGKILLing all at *timeout*), and returns a
:class:`ClusterRun`: per node its exit code, final stats (none for a killed
node), wall time and CPU seconds (its own and its reaped children's, from
``wait4``: sampling /proc would take the GIL from the farm's server threads,
whose clock the figures are read on).

Two kinds of project, by the settings given (:func:`scrapy_redis_settings`,
:func:`focus_settings`):

- **scrapy-redis**: its Scheduler, RFPDupeFilter and a ``RedisSpider``
  (tests/spiders/redis_cluster_spider.py), ``SCHEDULER_PERSIST`` on so that no
  node deletes the shared queue, the seeds pushed once to ``cluster:start_urls``
  (:meth:`ClusterNodes.push_start_urls`) before the nodes start;
- **scrapy-focus**: the add-on and ``FOCUS_CLUSTER_REDIS_URL``, the spider
  tests/spiders/cluster_spider.py, every node given the seeds.

Every node also counts its Redis round trips (harness.redis_trips).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.crawl import REPO, STATS_EXTENSION, crawl_env, read_stats, scrapy_command, setting_args

FOCUS_SPIDER = REPO / "tests" / "spiders" / "cluster_spider.py"
REDIS_SPIDER = REPO / "tests" / "spiders" / "redis_cluster_spider.py"
START_URLS_KEY = "cluster:start_urls"  # scrapy-redis's %(name)s:start_urls for the spider
EXTENSIONS = {STATS_EXTENSION: 0, "harness.redis_trips.RedisRoundTrips": 0}


def _common(delay: float, per_host: int, concurrency: int) -> dict[str, Any]:
    return {
        "DOWNLOAD_DELAY": delay,
        # One node then honours the delay exactly: a gap below it is the cluster's doing.
        "RANDOMIZE_DOWNLOAD_DELAY": False,
        "CONCURRENT_REQUESTS": concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": per_host,
        "AUTOTHROTTLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "INFO",
        "EXTENSIONS": EXTENSIONS,
    }


def scrapy_redis_settings(
    redis_url: str,
    delay: float = 0.25,
    per_host: int = 1,
    concurrency: int = 16,
    idle_close: int = 3,
) -> dict[str, Any]:
    """A scrapy-redis project's settings, as its README gives them."""
    return {
        **_common(delay, per_host, concurrency),
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        "SCHEDULER_PERSIST": True,
        "REDIS_URL": redis_url,
        "MAX_IDLE_TIME_BEFORE_CLOSE": idle_close,
    }


def focus_settings(
    redis_url: str,
    crawl: str = "cluster",
    delay: float = 0.25,
    per_host: int = 1,
    concurrency: int = 16,
) -> dict[str, Any]:
    """A scrapy-focus project's settings in cluster mode."""
    return {
        **_common(delay, per_host, concurrency),
        "ADDONS": {"scrapy_focus.Addon": 500},
        "FOCUS_CLUSTER_REDIS_URL": redis_url,
        "FOCUS_CLUSTER_NAME": crawl,
        # The farm links only to itself, across hosts the seed does not name.
        "FOCUS_SEED_SCOPE": "any",
        # Its synthetic pages read alike to the trap detector (a few lines of made-up
        # words and links): every page is to be fetched, as scrapy-redis fetches it.
        "FOCUS_TRAP_PAGES": 0,
        "FOCUS_EXTRACT_WORKERS": 0,
    }


@dataclass(frozen=True)
class Kill:
    """SIGKILL node *index* (None: the first node for which *when* is due) once *when*
    is reached: seconds after it started, or a predicate of (node, elapsed seconds)."""

    index: int | None
    when: float | Callable[[int, float], bool]

    def due(self, index: int, elapsed: float) -> bool:
        if self.index not in (None, index):
            return False
        if isinstance(self.when, (int, float)):
            return elapsed >= self.when
        return self.when(index, elapsed)


@dataclass
class NodeRun:
    index: int
    name: str
    returncode: int | None
    stats: dict[str, Any]
    log: Path
    wall_s: float
    cpu_s: float
    killed: bool = False

    def stat(self, name: str, default: Any = 0) -> Any:
        return self.stats.get(name, default)


@dataclass
class ClusterRun:
    nodes: list[NodeRun]
    wall_s: float
    killed_at: float | None = None  # seconds after the first node started
    killed_clock: float | None = None  # time.monotonic() of the SIGKILL (the farm's clock)
    notes: dict[str, Any] = field(default_factory=dict)

    def total(self, stat: str) -> int:
        return sum(int(node.stat(stat)) for node in self.nodes)

    @property
    def cpu_s(self) -> float:
        return sum(node.cpu_s for node in self.nodes)


class ClusterNodes:
    """*nodes* nodes of *spider* with *settings*, in *workdir* (one folder per node)."""

    def __init__(
        self,
        workdir: Path,
        settings: Mapping[str, Any],
        spider: Path,
        urls: list[str],
        nodes: int = 3,
    ) -> None:
        self.workdir, self.settings, self.spider = Path(workdir), dict(settings), spider
        self.urls, self.count = urls, nodes

    def push_start_urls(self, redis_url: str) -> None:
        """The seeds, as scrapy-redis's start-URL list wants them (JSON objects)."""
        import redis

        client = redis.Redis.from_url(redis_url)
        try:
            client.rpush(START_URLS_KEY, *(json.dumps({"url": url}) for url in self.urls))
        finally:
            client.close()

    def command(self, index: int) -> list[str]:
        name = f"node-{index}"
        settings = {**self.settings, "USER_AGENT": name}
        if "FOCUS_CLUSTER_REDIS_URL" in settings:
            settings["FOCUS_NODE_NAME"] = name
        args = ["runspider", str(self.spider)]
        if self.spider == FOCUS_SPIDER:
            args += ["-a", "urls=" + " ".join(self.urls)]
        return scrapy_command(*args, *setting_args(settings))

    def run(
        self, kill: Kill | None = None, stagger: float = 0.0, timeout: float = 180.0
    ) -> ClusterRun:
        procs: list[subprocess.Popen[bytes]] = []
        started: list[float] = []
        ended: dict[int, tuple[float, int, float]] = {}  # index → (time, exit code, CPU s)
        killed_at = killed_clock = None
        first = time.monotonic()
        for index in range(self.count):
            procs.append(self._start(index))
            started.append(time.monotonic())
            if stagger and index < self.count - 1:
                time.sleep(stagger)
        while len(ended) < len(procs):
            now = time.monotonic()
            for index, proc in enumerate(procs):
                if index in ended:
                    continue
                # wait4, not poll: the node's CPU, exactly, at no cost while it runs.
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    proc.returncode = os.waitstatus_to_exitcode(status)
                    ended[index] = (now, proc.returncode, usage.ru_utime + usage.ru_stime)
                elif kill and killed_at is None and kill.due(index, now - started[index]):
                    proc.send_signal(signal.SIGKILL)
                    killed_at, killed_clock = now - first, now
                elif now - first > timeout:
                    proc.kill()
            time.sleep(0.05)
        runs = [
            NodeRun(
                index=index,
                name=f"node-{index}",
                returncode=ended[index][1],
                stats=read_stats(self.workdir / f"node-{index}" / "stats.json"),
                log=self.workdir / f"node-{index}" / "crawl.log",
                wall_s=ended[index][0] - started[index],
                cpu_s=ended[index][2],
                killed=ended[index][1] == -signal.SIGKILL,
            )
            for index in range(len(procs))
        ]
        return ClusterRun(runs, max(end for end, _, _ in ended.values()) - first, killed_at,
                          killed_clock)  # fmt: skip

    def _start(self, index: int) -> subprocess.Popen[bytes]:
        folder = self.workdir / f"node-{index}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "stats.json").unlink(missing_ok=True)  # a killed node leaves none
        with open(folder / "crawl.log", "wb") as log:
            return subprocess.Popen(
                self.command(index),
                cwd=folder,
                env=crawl_env(folder / "stats.json"),
                stdout=log,
                stderr=subprocess.STDOUT,
            )


def scrapy_redis_fingerprint(url: str) -> bytes:
    """RFPDupeFilter.request_fingerprint of a GET without a body, as scrapy-redis 0.9.1
    computes it (its own, not REQUEST_FINGERPRINTER_CLASS's): what its seen set holds."""
    from w3lib.url import canonicalize_url

    data = json.dumps({"method": "GET", "url": canonicalize_url(url), "body": ""}, sort_keys=True)
    return hashlib.sha1(data.encode()).hexdigest().encode()
