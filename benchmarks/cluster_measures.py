"""The cluster benchmark's measurements, one function each, scrapy-redis's side and ours.

Each function takes a running redis-server's URL (and, for crawls, a work
folder) and returns a small dataclass of figures, or a :class:`Pending` saying
which piece of scrapy-focus's cluster mode it still waits for: the store
(``scrapy_focus.cluster.frontier.RedisFrontier``) or the scheduler's wiring
(nodes that share one frontier).  So the benchmark reruns unchanged as
the pieces land.

- :func:`queue_scrapy_redis` / :func:`queue_focus`: push N requests, then take
  every one, as each scheduler calls its store (scrapy-redis: one ``push`` and one
  ``pop`` per request; ours: ``push``, ``lease`` and ``ack`` of BATCH entries a
  call, as a node's link thread batches them); Redis bytes per pending request
  from ``INFO memory`` (``used_memory`` before and after the push);
- :func:`seen_scrapy_redis` / :func:`seen_focus`: Redis bytes per seen URL
  (``MEMORY USAGE`` of the seen set's keys);
- :func:`crawl`: N nodes on a :class:`~harness.cluster_farm.ClusterFarm`, the
  server's figures (pages/s from its first to its last page, gaps, in flight,
  fetched twice, lost), each node's CPU and Redis round trips.
"""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis
import scrapy

from harness.cluster_farm import ClusterFarm
from harness.cluster_nodes import (
    FOCUS_SPIDER,
    REDIS_SPIDER,
    ClusterNodes,
    ClusterRun,
    Kill,
    focus_settings,
    scrapy_redis_fingerprint,
    scrapy_redis_settings,
)

HOSTS_IN_QUEUE = 100  # the hosts of the queue benchmarks' requests


@dataclass(frozen=True)
class Pending:
    """A measurement of scrapy-focus that waits for a piece of cluster mode."""

    reason: str

    def __str__(self) -> str:
        return f"pending: {self.reason}"


@dataclass(frozen=True)
class QueueFigures:
    requests: int
    push_per_s: float
    take_per_s: float  # scrapy-redis: pop; ours: lease + ack
    bytes_per_pending: float


def _client(url: str) -> Any:
    return redis.Redis.from_url(url)


def _used_memory(client: Any) -> int:
    return int(client.info("memory")["used_memory"])


def bench_requests(count: int, seed: int = 1) -> list[scrapy.Request]:
    """*count* distinct requests over HOSTS_IN_QUEUE hosts, with priorities 0-9."""
    rng = random.Random(seed)
    return [
        scrapy.Request(
            f"http://host{rng.randrange(HOSTS_IN_QUEUE)}.example/section/{i % 50}/page-{i}.html"
            f"?ref={rng.randrange(1000)}",
            priority=rng.randrange(10),
        )
        for i in range(count)
    ]


def queue_scrapy_redis(url: str, count: int) -> QueueFigures:
    from scrapy_redis.queue import PriorityQueue

    client = _client(url)
    client.flushall()
    queue = PriorityQueue(client, scrapy.Spider(name="bench"), "bench:requests")
    requests = bench_requests(count)
    before = _used_memory(client)
    started = time.perf_counter()
    for request in requests:
        queue.push(request)
    pushed = time.perf_counter() - started
    size = _used_memory(client) - before
    started = time.perf_counter()
    while queue.pop() is not None:
        pass
    taken = time.perf_counter() - started
    client.flushall()
    return QueueFigures(count, count / pushed, count / taken, size / count)


BATCH = 64  # entries per call on our side: a node batches its pushes, leases and acks


def open_focus_frontier(url: str, crawl: str, expected: int = 100_000) -> Any:
    """Our Redis store for the crawl *crawl*, or a Pending while it does not exist.
    No delay and a concurrency no host reaches: the store's own speed is measured."""
    try:
        from scrapy_focus.cluster.frontier import RedisFrontier
    except ImportError:
        return Pending("scrapy_focus.cluster.frontier.RedisFrontier does not exist yet")
    from scrapy.settings import Settings

    from scrapy_focus.cluster.connection import redis_client
    from scrapy_focus.cluster.keys import ClusterKeys
    from scrapy_focus.config import FocusConfig

    settings = Settings(
        {
            "FOCUS_CLUSTER_REDIS_URL": url,
            "FOCUS_CLUSTER_SEEN_EXPECTED": expected,
            "DOWNLOAD_DELAY": 0,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 1_000_000,
        }
    )
    config = FocusConfig.from_settings(settings)
    keys = ClusterKeys.for_crawl(config.cluster.key_prefix, crawl)
    try:
        return RedisFrontier(
            redis_client(config.cluster), keys, "bench", config.cluster, config.politeness
        )
    except TypeError as error:
        return Pending(f"open_focus_frontier() does not know RedisFrontier's constructor: {error}")


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[start : start + size] for start in range(0, len(items), size)]


def queue_focus(url: str, count: int) -> QueueFigures | Pending:
    """Push in batches of BATCH, then lease BATCH at a time and ack each batch."""
    from scrapy_focus.cluster.entries import Push
    from scrapy_focus.frontier.payload import dump_entry
    from scrapy_focus.urls import host_of

    client = _client(url)
    client.flushall()
    store = open_focus_frontier(url, "bench", count)
    if isinstance(store, Pending):
        return store
    rng = random.Random(2)
    # Encoded outside the timed part: the payload is the same for any store.
    entries = [
        Push(hashlib.sha1(r.url.encode()).digest(), host_of(r.url), r.priority, rng.random(),
             dump_entry(r.to_dict()))
        for r in bench_requests(count)
    ]  # fmt: skip
    before = _used_memory(client)
    started = time.perf_counter()
    for batch in _chunks(entries, BATCH):
        store.push(batch)
    pushed = time.perf_counter() - started
    size = _used_memory(client) - before
    taken_count = 0
    started = time.perf_counter()
    while leased := store.lease(BATCH).entries:
        store.ack([entry.key for entry in leased])
        taken_count += len(leased)
    taken = time.perf_counter() - started
    client.flushall()
    if taken_count != count:
        return Pending(f"RedisFrontier gave back {taken_count} of {count} requests pushed")
    return QueueFigures(count, count / pushed, count / taken, size / count)


def _memory_of(client: Any, pattern: str) -> int:
    return sum(
        int(client.memory_usage(key, samples=0) or 0)
        for key in client.scan_iter(match=pattern, count=1000)
    )


def seen_scrapy_redis(url: str, count: int) -> float:
    """Bytes of Redis per URL in RFPDupeFilter's set (SADD of its 40-hex fingerprints):
    ``MEMORY USAGE`` of the set."""
    from scrapy_redis.dupefilter import RFPDupeFilter

    client = _client(url)
    client.flushall()
    dupefilter = RFPDupeFilter(client, "bench:dupefilter")
    for request in bench_requests(count):
        dupefilter.request_seen(request)
    size = _memory_of(client, "bench:dupefilter")
    client.flushall()
    return size / count


def seen_focus(url: str, count: int) -> float | Pending:
    """Bytes of Redis per URL in our seen set: ``MEMORY USAGE`` of its keys, after
    pushing *count* entries with empty payloads (the queue's keys are not counted)."""
    from scrapy_focus.cluster.entries import Push

    client = _client(url)
    client.flushall()
    store = open_focus_frontier(url, "bench", count)
    if isinstance(store, Pending):
        return store
    pushes = [
        Push(hashlib.sha1(r.url.encode()).digest(), "h", 0, 0.5, b"") for r in bench_requests(count)
    ]
    for batch in _chunks(pushes, 2000):
        store.push(batch)
    size = _memory_of(client, store.keys.key("seen", "*"))
    client.flushall()
    return size / count


@dataclass
class CrawlFigures:
    kind: str  # "scrapy-redis" | "focus"
    nodes: int
    hosts: int
    pages: int  # pages answered 200, each counted once
    fetches: int  # pages answered 200, every time
    pages_per_s: float  # from the server's first page request to its last
    wall_s: float  # from the first node's start to the last node's exit
    cpu_per_node: list[float]  # CPU seconds of each node's process tree
    cpu_share: float  # the nodes' CPU over the crawl's seconds, in cores
    gaps: int
    gaps_below: int
    min_gap: float
    max_in_flight: int
    peak_host_rate: float  # the most requests to one host in any 2 s, per second
    fetched_twice: int
    lost: int
    round_trips_per_page: float | None  # the nodes' own count (harness.redis_trips)
    round_trips: int  # their sum over the nodes that lived
    commands_per_page: float  # the server's INFO commandstats calls
    killed_at: float | None = None
    lease_return_s: float | None = None  # see lease_return()
    queued_left: int = 0  # requests still queued when every node had closed (not lost)
    # scrapy-redis: pages lost that its seen set holds and its queue does not: taken by
    # a node and dropped (the others were never found: every page linking to them was lost)
    lost_seen: int = 0
    returncodes: list[int | None] = field(default_factory=list)

    @property
    def host_rate(self) -> float:
        """Pages per second per host."""
        return self.pages_per_s / self.hosts


def _commands(client: Any) -> int:
    return sum(int(stat["calls"]) for stat in client.info("commandstats").values())


def shares_frontier(run: ClusterRun, farm: ClusterFarm) -> bool:
    """Whether nodes split the crawl: not (nearly) every page fetched by every node."""
    fetched = farm.fetched()
    return len(run.nodes) == 1 or sum(fetched.values()) < 1.5 * max(len(fetched), 1)


_wiring: dict[str, Pending | None] = {}


def focus_wiring(workdir: Path, redis_url: str) -> Pending | None:
    """None once two scrapy-focus nodes share one frontier (a small probe crawl,
    run once per benchmark); else why our crawl figures are pending."""
    if redis_url not in _wiring:
        _client(redis_url).flushall()
        with ClusterFarm(2, 7) as farm:
            settings = focus_settings(redis_url, crawl="probe", delay=0.0)
            probe = ClusterNodes(workdir / "probe", settings, FOCUS_SPIDER, [farm.seed], 2)
            run = probe.run(timeout=120)
            per_page = sum(farm.fetched().values()) / max(len(farm.fetched()), 1)
            shared = shares_frontier(run, farm) and all(n.returncode == 0 for n in run.nodes)
        _wiring[redis_url] = (
            None
            if shared
            else Pending(
                f"the scheduler is not wired to Redis yet (a 2-node probe: {per_page:.1f} "
                "fetches per page)"
            )
        )
    return _wiring[redis_url]


def crawl(
    kind: str,
    workdir: Path,
    redis_url: str,
    nodes: int,
    hosts: int,
    pages: int,
    delay: float,
    kill: Any = None,
    latency: float = 0.0,
    links: int = 2,
    idle_close: int = 3,
) -> CrawlFigures | Pending:
    """One crawl of a fresh farm by *nodes* nodes of *kind*; *kill*: (node, pages):
    SIGKILL that node (None: the first node) once the farm has answered it that
    many pages; *links*: the farm's fan-out
    (the wider, the more requests are queued at once); *idle_close*: scrapy-redis's
    ``MAX_IDLE_TIME_BEFORE_CLOSE`` (counted from the spider's import: a node idle
    when the shared queue is empty for a moment closes once that long has passed)."""
    if kind == "focus" and (unwired := focus_wiring(workdir.parent, redis_url)) is not None:
        return unwired
    client = _client(redis_url)
    client.flushall()
    client.config_resetstat()
    with ClusterFarm(hosts, pages, links, latency=latency) as farm:
        if kind == "scrapy-redis":
            settings = scrapy_redis_settings(redis_url, delay, idle_close=idle_close)
            cluster = ClusterNodes(workdir, settings, REDIS_SPIDER, [farm.seed], nodes)
            cluster.push_start_urls(redis_url)
        else:
            settings = focus_settings(redis_url, delay=delay)
            cluster = ClusterNodes(workdir, settings, FOCUS_SPIDER, [farm.seed], nodes)
        killing = None
        if kill is not None:
            index, pages_first = kill
            killing = Kill(index, lambda i, _: farm.by_agent()[f"node-{i}"] >= pages_first)
        commands_before = _commands(client)
        run = cluster.run(kill=killing)
        commands = _commands(client) - commands_before
        queued_left = lost_seen = 0
        if kind == "scrapy-redis":
            queued_left = int(client.zcard("cluster:requests"))
            seen = client.smembers("cluster:dupefilter")
            lost_seen = sum(scrapy_redis_fingerprint(url) in seen for url in farm.never_fetched())
        if kind == "focus" and not shares_frontier(run, farm):
            per_page = sum(farm.fetched().values()) / max(len(farm.fetched()), 1)
            return Pending(f"the nodes do not share a frontier ({per_page:.1f} fetches per page)")
        figures = _figures(kind, run, farm, delay, commands, hosts)
        figures.queued_left, figures.lost_seen = queued_left, lost_seen - queued_left
        return figures


def _figures(
    kind: str, run: ClusterRun, farm: ClusterFarm, delay: float, commands: int, hosts: int
) -> CrawlFigures:
    hits = [hit for hit in farm.page_hits() if hit.status == 200]
    span = hits[-1].at - hits[0].at if len(hits) > 1 else float("nan")
    fetched = farm.fetched()
    gaps = [gap for host in farm.gaps().values() for gap in host]
    below = farm.gaps_below(delay)
    # A killed node reports nothing: the rate is that of the nodes that lived.
    reported = [node for node in run.nodes if node.stats]
    trips = sum(node.stat("harness/redis_round_trips") for node in reported)
    answered = sum(node.stat("response_received_count") for node in reported)
    return CrawlFigures(
        kind=kind,
        nodes=len(run.nodes),
        hosts=hosts,
        pages=len(fetched),
        fetches=sum(fetched.values()),
        pages_per_s=len(hits) / span,
        wall_s=run.wall_s,
        cpu_per_node=[node.cpu_s for node in run.nodes],
        cpu_share=run.cpu_s / run.wall_s,
        gaps=len(gaps),
        gaps_below=len(below),
        min_gap=min(gaps) if gaps else float("nan"),
        max_in_flight=max(farm.max_in_flight().values(), default=0),
        peak_host_rate=farm.peak_rate(),
        fetched_twice=len(farm.fetched_twice()),
        lost=len(farm.never_fetched()),
        round_trips_per_page=trips / answered if answered else None,
        round_trips=trips,
        commands_per_page=commands / max(len(hits), 1),
        killed_at=run.killed_at,
        lease_return_s=lease_return(run, farm),
        returncodes=[node.returncode for node in run.nodes],
    )


def lease_return(run: ClusterRun, farm: ClusterFarm) -> float | None:
    """Seconds from the SIGKILL until another node fetched the last page the killed
    node had asked the farm for and not finished (None: no kill or no such page;
    ``inf``: some of them never came back).  Leases a node held but had not yet sent are not seen
    by the farm; the figure is a lower bound of the return of all its leases."""
    killed = next((node for node in run.nodes if node.killed), None)
    if killed is None or run.killed_clock is None:
        return None
    hits = farm.page_hits()
    taken = {(hit.host, hit.path) for hit in hits if hit.agent == killed.name}
    done = {(hit.host, hit.path) for hit in hits if hit.agent == killed.name and hit.status == 200}
    again = {}
    for hit in hits:
        page = (hit.host, hit.path)
        if page in taken and hit.agent != killed.name and hit.at >= run.killed_clock:
            again.setdefault(page, hit.at)
    unfinished = taken - done
    if not unfinished:
        return None
    if not unfinished <= set(again):
        return float("inf")
    return max(again[page] for page in unfinished) - run.killed_clock
