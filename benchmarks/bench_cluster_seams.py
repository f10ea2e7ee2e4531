"""Cluster mode's shared state besides the frontier, and scrapy-redis's queue with ours.

Two measurements against one real redis-server (harness.redis_server, AOF off so
the disk is not what is measured):

1. **Round trips per page of the shared seams**: one simulated page as the crawl
   makes it: count it (``add_fetched``), check the budget (``fetched``), the
   ladder's start engine and its observation (engine history), the breaker's
   state and success, ten links scored and one learnt by the link model.  Round
   trips counted where the client sends them (a pipeline or a script call is
   one), over ``--pages`` pages on ``--domains`` domains, one node.
2. **scrapy-redis's queue**: ``--requests`` requests pushed then popped, through
   scrapy-redis's ``PriorityQueue`` (pickle) and through ``FocusPriorityQueue``
   (JSON, float scores, FIFO ties): requests per second each way (wall), the
   client's CPU microseconds per request (the fairer figure on a shared
   machine), and Redis bytes per queued request (``MEMORY USAGE`` of the sorted
   set / its size).

Usage::

    .venv/bin/python benchmarks/bench_cluster_seams.py [--pages 5000] [--domains 50]
        [--requests 20000]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import redis
import repo_root  # noqa: F401 - the repository root on sys.path
from scrapy import Request, Spider
from scrapy.utils.test import get_crawler
from scrapy_redis.queue import PriorityQueue

from harness.redis_server import RedisServer
from scrapy_focus.cluster.breaker import RedisBreakerStates
from scrapy_focus.cluster.counters import RedisCounters
from scrapy_focus.cluster.history import RedisHistoryStore
from scrapy_focus.cluster.keys import ClusterKeys
from scrapy_focus.cluster.model import RedisLinkModel
from scrapy_focus.cluster.queue import FocusPriorityQueue
from scrapy_focus.engines.breaker import CircuitBreaker
from scrapy_focus.engines.history import DomainHistory
from scrapy_focus.state import FocusState, LinkContext


class CountedConnection(redis.Connection):
    """A connection that counts what it sends: one count per round trip."""

    sent = 0

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountedConnection.sent += 1
        super().send_packed_command(command, check_health)


def seams_round_trips(url: str, pages: int, domains: int) -> tuple[float, float]:
    client = redis.Redis.from_url(url, connection_class=CountedConnection)
    client.ping()  # the connection's own handshake is not a page's
    keys = ClusterKeys.for_crawl("focus:{%(crawl)s}", "bench")
    counters = RedisCounters(client, keys)
    history = DomainHistory(RedisHistoryStore(client, keys), ("http", "chromium"))
    states = RedisBreakerStates(client, keys)
    breaker = CircuitBreaker(clock=states.clock, states=states)
    model = RedisLinkModel(client, keys)
    rng = random.Random(1)
    CountedConnection.sent = 0
    started = time.perf_counter()
    for page in range(pages):
        domain = f"site{page % domains}.test"
        counters.add_fetched()
        counters.fetched  # noqa: B018 - the budget check
        history.start_engine(domain)
        breaker.state(domain)
        for link in range(10):
            model.correction([f"host:{domain}", f"dir:{domain}/d{link % 3}/"])
        history.observe(domain, "http", "success", 0.1)
        breaker.success(domain)
        model.update([f"host:{domain}", f"dir:{domain}/d{page % 3}/"], rng.uniform(-1, 1))
    seconds = time.perf_counter() - started
    return CountedConnection.sent / pages, pages / seconds


def scored(n: int) -> Request:
    url = f"http://site{n % 50}.test/page/{n}.html"
    state = FocusState(link=LinkContext(url=url, anchor="a link", score=round(n % 97 / 97, 3)))
    return Request(url, meta={"focus": state, "depth": 2}, headers={"Referer": url})


def queue_rates(url: str, queue_class: Any, requests: int) -> tuple[float, ...]:
    """Pushes and pops per second (wall), their client CPU microseconds, bytes each."""
    spider = Spider.from_crawler(get_crawler(Spider, {}), name="bench")
    client = redis.Redis.from_url(url)
    queue = queue_class(client, spider, "%(spider)s:requests")
    queue.clear()
    batch = [scored(n) for n in range(requests)]
    wall, cpu = time.perf_counter(), time.process_time()
    for request in batch:
        queue.push(request)
    pushed, pushed_cpu = time.perf_counter() - wall, time.process_time() - cpu
    size = client.memory_usage("bench:requests", samples=0) / len(queue)
    wall, cpu = time.perf_counter(), time.process_time()
    while queue.pop() is not None:
        pass
    popped, popped_cpu = time.perf_counter() - wall, time.process_time() - cpu
    micros = 1e6 / requests
    return (
        requests / pushed,
        requests / popped,
        pushed_cpu * micros,
        popped_cpu * micros,
        size,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=5000)
    parser.add_argument("--domains", type=int, default=50)
    parser.add_argument("--requests", type=int, default=20000)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as directory,
        RedisServer(Path(directory) / "redis", aof=False) as server,
    ):
        per_page, rate = seams_round_trips(server.url, args.pages, args.domains)
        print(f"shared seams: {per_page:.3f} Redis round trips per page ({rate:.0f} pages/s)")
        print("queue                        push/s   pop/s  push CPU µs  pop CPU µs  bytes each")
        for name, cls in (
            ("scrapy-redis PriorityQueue", PriorityQueue),
            ("FocusPriorityQueue", FocusPriorityQueue),
        ):
            push, pop, push_cpu, pop_cpu, size = queue_rates(server.url, cls, args.requests)
            print(f"{name:26} {push:8.0f} {pop:7.0f} {push_cpu:12.0f} {pop_cpu:11.0f} {size:11.0f}")


if __name__ == "__main__":
    main()
