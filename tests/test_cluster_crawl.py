"""Cluster mode end to end: real ``scrapy focus-crawl`` processes sharing one real redis-server.

Each node has its own working directory (its own corpus, as on separate
machines); the farm's request log, kept by the server, says what the cluster
fetched and when.
"""

from __future__ import annotations

import itertools
import json
import pickle
import signal
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import redis
from scrapy.settings import Settings

from harness.crawl import STATS_EXTENSION, crawl_env, focus_crawl_command, read_stats
from harness.redis_server import RedisServer
from scrapy_focus.cluster.entries import Push
from scrapy_focus.cluster.frontier import RedisFrontier
from scrapy_focus.cluster.keys import ClusterKeys
from scrapy_focus.config import FocusConfig

# /graph/ nodes to depth 2: 1 + 10 + 100 pages.
GRAPH = {0} | set(range(1, 11)) | set(range(11, 111))
GRAPH_PATHS = {f"/graph/{n}.html" for n in GRAPH}


def node_settings(redis: RedisServer, **extra: Any) -> dict[str, Any]:
    return {
        "FOCUS_CLUSTER_REDIS_URL": redis.url,
        "FOCUS_CLUSTER_NAME": "graph",
        "FOCUS_CLUSTER_HEARTBEAT": 0.5,
        "FOCUS_CLUSTER_LEASE_TIMEOUT": 3.0,
        "FOCUS_CLUSTER_IDLE_CHECK": 1.0,
        "FOCUS_MAX_DEPTH": 2,
        "CONCURRENT_REQUESTS": 4,
        "DOWNLOAD_DELAY": 0.0,
        "ROBOTSTXT_OBEY": False,
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
        "EXTENSIONS": {STATS_EXTENSION: 0},
        **extra,
    }


class Node:
    """One ``scrapy focus-crawl`` process of the cluster, in its own directory."""

    def __init__(self, root: Path, name: str, seeds: list[str], settings: dict[str, Any]) -> None:
        self.workdir = root / name
        self.workdir.mkdir(parents=True)
        self.stats_file = self.workdir / "stats.json"
        command = focus_crawl_command(seeds, self.workdir / "items.jsonl", settings)
        self.log = (self.workdir / "log.txt").open("w")
        self.process = subprocess.Popen(
            command,
            cwd=self.workdir,
            env=crawl_env(self.stats_file),
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )

    def wait(self, timeout: float = 180) -> int:
        code = self.process.wait(timeout)
        self.log.close()
        return code

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.wait()

    @property
    def stats(self) -> dict[str, Any]:
        return read_stats(self.stats_file)

    @property
    def text(self) -> str:
        return (self.workdir / "log.txt").read_text(errors="replace")


def fetched_since(farm, since: float) -> Counter[str]:
    return Counter(path for t, _, path in farm.log if t >= since and path.startswith("/graph/"))


# /graph/ to depth 3: 1111 pages, long enough to act in the middle of the crawl.
DEEP = {0} | set(range(1, 1111))
DEEP_PATHS = {f"/graph/{n}.html" for n in DEEP}
# The host takes twice what one node's downloader holds (CONCURRENT_REQUESTS and
# FOCUS_CLUSTER_LEASE_AHEAD): work for two nodes, not one host kept by one node.
MORE_THAN_ONE_NODE_TAKES = {"DOWNLOAD_DELAY": 0.0, "CONCURRENT_REQUESTS_PER_DOMAIN": 16}


def test_two_nodes_share_one_crawl_and_fetch_each_page_once(farm, redis_server, tmp_path):
    since = time.monotonic()
    seeds = [farm.url("/graph/0.html")]
    # More work than one node's downloader takes (the host takes twice a node's
    # requests at once), and a crawl that outlasts the second node's start-up.  A
    # node that keeps up with a host's politeness keeps its turns (docs/cluster.md).
    settings = node_settings(redis_server, FOCUS_MAX_DEPTH=3, **MORE_THAN_ONE_NODE_TAKES)
    nodes = [Node(tmp_path, f"node{i}", seeds, settings) for i in range(2)]
    codes = [node.wait() for node in nodes]
    assert codes == [0, 0], nodes[0].text[-3000:] + nodes[1].text[-3000:]
    fetched = fetched_since(farm, since)
    assert set(fetched) == DEEP_PATHS
    assert max(fetched.values()) == 1, [p for p, n in fetched.items() if n > 1]
    per_node = [node.stats.get("response_received_count", 0) for node in nodes]
    assert all(count > 0 for count in per_node), per_node  # both took part
    assert sum(per_node) == len(DEEP)
    for node in nodes:
        assert node.stats["finish_reason"] == "finished"
        assert "Cluster mode: crawl 'graph'" in node.text


def test_a_crafted_queue_entry_is_quarantined_never_executed(farm, redis_server, tmp_path):
    # An entry written straight into the crawl's Redis by someone who can: a
    # pickle that would create a file if it were ever unpickled, and garbage.
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (Path.touch, (marker,))

    settings = node_settings(redis_server)
    config = FocusConfig.from_settings(Settings(settings))
    keys = ClusterKeys.for_crawl(config.cluster.key_prefix, "graph")
    client = redis.Redis.from_url(redis_server.url)
    frontier = RedisFrontier(client, keys, "attacker", config.cluster, config.politeness)
    host = "127.0.0.1"
    frontier.push(
        [
            Push(b"f" * 20, host, 5, 1.0, pickle.dumps(Evil())),
            Push(b"g" * 20, host, 5, 1.0, b"\x00\xffnot a request"),
        ]
    )
    node = Node(tmp_path, "node", [farm.url("/graph/0.html")], {**settings, "FOCUS_MAX_DEPTH": 1})
    assert node.wait(60) == 0, node.text[-3000:]
    assert not marker.exists()
    assert node.stats.get("focus/frontier/unreadable") == 2
    assert frontier.status().queued == 0
    quarantined = client.lrange(keys.key("quarantine"), 0, -1)
    assert len(quarantined) == 2, quarantined
    json.dumps([q.decode("latin-1") for q in quarantined])  # kept as data for a person


def wait_for_fetches(farm, since: float, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while sum(fetched_since(farm, since).values()) < count:
        assert time.monotonic() < deadline, "the cluster did not start fetching"
        time.sleep(0.05)


def test_a_node_killed_mid_crawl_loses_nothing(farm, redis_server, tmp_path):
    since = time.monotonic()
    seeds = [farm.url("/graph/0.html")]
    settings = node_settings(redis_server, FOCUS_MAX_DEPTH=3, DOWNLOAD_DELAY=0.005)
    killed, survivor = (Node(tmp_path, name, seeds, settings) for name in ("killed", "survivor"))
    wait_for_fetches(farm, since, 300)
    killed.kill()
    killed_at = time.monotonic()
    assert survivor.wait() == 0, survivor.text[-3000:]
    fetched = fetched_since(farm, since)
    assert set(fetched) == DEEP_PATHS  # the killed node's leases came back
    twice = [path for path, n in fetched.items() if n > 1]
    # Only what the killed node had taken and not finished: its downloader's and its inbox.
    assert len(twice) <= 2 * settings["CONCURRENT_REQUESTS"], twice
    assert all(n <= 2 for n in fetched.values())
    # Fetched again once the killed node's heartbeat lapsed, not before.
    refetched = [t for t, _, path in farm.log if path in twice and t > killed_at]
    assert all(t - killed_at >= settings["FOCUS_CLUSTER_LEASE_TIMEOUT"] - 1 for t in refetched)
    assert survivor.stats["finish_reason"] == "finished"


def test_redis_killed_and_restarted_mid_crawl_loses_nothing(farm, redis_server, tmp_path):
    since = time.monotonic()
    seeds = [farm.url("/graph/0.html")]
    settings = node_settings(redis_server, FOCUS_MAX_DEPTH=3, DOWNLOAD_DELAY=0.005)
    nodes = [Node(tmp_path, f"node{i}", seeds, settings) for i in range(2)]
    wait_for_fetches(farm, since, 300)
    redis_server.restart(kill=True, down=1.0)  # AOF, fsync always: every write kept
    codes = [node.wait() for node in nodes]
    assert codes == [0, 0], nodes[0].text[-3000:] + nodes[1].text[-3000:]
    fetched = fetched_since(farm, since)
    assert set(fetched) == DEEP_PATHS
    assert all(n <= 2 for n in fetched.values())
    for node in nodes:
        assert "Redis does not answer" in node.text or "Redis is back" in node.text
    assert any("Redis is back" in node.text for node in nodes)


def test_a_node_that_joins_late_takes_part(farm, redis_server, tmp_path):
    since = time.monotonic()
    seeds = [farm.url("/graph/0.html")]
    settings = node_settings(redis_server, FOCUS_MAX_DEPTH=3, **MORE_THAN_ONE_NODE_TAKES)
    first = Node(tmp_path, "first", seeds, settings)
    wait_for_fetches(farm, since, 100)
    late = Node(tmp_path, "late", seeds, settings)
    assert [first.wait(), late.wait()] == [0, 0], late.text[-3000:]
    fetched = fetched_since(farm, since)
    assert set(fetched) == DEEP_PATHS and max(fetched.values()) == 1
    assert late.stats.get("response_received_count", 0) > 50


def test_the_delay_holds_across_nodes(farm, redis_server, tmp_path):
    # Three nodes, one host: the host sees one request per DOWNLOAD_DELAY, not three.
    since = time.monotonic()
    delay = 0.1
    seeds = [farm.url("/graph/0.html")]
    settings = node_settings(redis_server, DOWNLOAD_DELAY=delay, FOCUS_MAX_DEPTH=2)
    nodes = [Node(tmp_path, f"node{i}", seeds, settings) for i in range(3)]
    assert [node.wait() for node in nodes] == [0, 0, 0]
    times = sorted(t for t, _, path in farm.log if t >= since and path.startswith("/graph/"))
    assert len(times) == len(GRAPH)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= delay * 0.95, sorted(gaps)[:5]  # the server's clock, all nodes
    # (Which nodes fetch is not the point: a host's next turn is leased in the round
    # that releases the one before, so on one host one node may keep every turn.)


def test_one_nodes_429_holds_the_host_for_every_node(farm, redis_server, tmp_path):
    # The first request for /graph/3.html is answered 429 with Retry-After: 2; the
    # server then sees no request from either node for those two seconds.
    path, wait = "/graph/3.html", 2
    farm.set_page(path, "slow down", status=429, headers={"Retry-After": str(wait)})
    hits_before = farm.hit_count(path)  # the farm serves the whole session's tests

    def serve_it_again() -> None:
        deadline = time.monotonic() + 60
        while farm.hit_count(path) == hits_before and time.monotonic() < deadline:
            time.sleep(0.002)
        with farm._lock:
            farm.pages.pop(path, None)

    since = time.monotonic()
    restorer = threading.Thread(target=serve_it_again, daemon=True)
    restorer.start()
    seeds = [farm.url("/graph/0.html")]
    settings = node_settings(redis_server, DOWNLOAD_DELAY=0.0)
    nodes = [Node(tmp_path, f"node{i}", seeds, settings) for i in range(2)]
    assert [node.wait() for node in nodes] == [0, 0]
    log = [(t, p) for t, _, p in farm.log if t >= since and p.startswith("/graph/")]
    refused_at = min(t for t, p in log if p == path)
    # What was on the wire when the 429 came back still arrives; nothing is sent after.
    quiet = [p for t, p in log if refused_at + 0.3 < t < refused_at + wait - 0.1]
    assert quiet == [], quiet
    assert {p for _, p in log} == GRAPH_PATHS  # and the refused page was fetched after
    backoffs = sum(node.stats.get("focus/politeness/backoff", 0) for node in nodes)
    assert backoffs == 1


def test_a_redis_that_hangs_never_blocks_the_reactor_and_loses_nothing(
    farm, redis_server, tmp_path
):
    # SIGSTOP: the server takes connections and answers nothing (a hung machine,
    # a stalled network), so every call to it waits for its socket timeout (30 s),
    # here until SIGCONT.  A slow page asked just before answers meanwhile: the
    # node counts it, learns its engine's history, scores its links, all while
    # Redis hangs, and its reactor must go on.
    since = time.monotonic()
    seeds = [farm.url("/graph/0.html"), farm.url("/slow.html?s=2")]
    ticks = tmp_path / "ticks.txt"
    settings = node_settings(
        redis_server,
        FOCUS_MAX_DEPTH=3,
        DOWNLOAD_DELAY=0.005,
        TEST_REACTOR_TICKS=str(ticks),
        EXTENSIONS={STATS_EXTENSION: 0, "tests.reactor_ticks.ReactorTicks": 0},
    )
    node = Node(tmp_path, "node", seeds, settings)
    deadline = time.monotonic() + 60
    while not any(path.startswith("/slow.html") for t, _, path in farm.log if t >= since):
        assert time.monotonic() < deadline, "the slow page was never asked"
        time.sleep(0.01)
    assert redis_server.process is not None
    redis_server.process.send_signal(signal.SIGSTOP)
    stopped = time.monotonic()
    time.sleep(5.0)
    resumed = time.monotonic()
    redis_server.process.send_signal(signal.SIGCONT)
    assert node.wait() == 0, node.text[-3000:]
    beats = [float(line) for line in ticks.read_text().split()]
    during = [t for t in beats if stopped - 0.5 <= t <= resumed + 0.5]
    gaps = [b - a for a, b in itertools.pairwise(during)]
    # The reactor ran all along (ticks every 0.1 s; a busy machine delays a few).
    assert during and during[-1] >= resumed and max(gaps) < 1.5, max(gaps, default=None)
    fetched = fetched_since(farm, since)
    assert set(fetched) - {"/slow.html?s=2"} == DEEP_PATHS  # nothing lost
    assert max(fetched.values()) == 1  # nor fetched twice: no lease lapsed meanwhile
    assert node.stats["finish_reason"] == "finished"
