"""The multi-node harness: the farm's accounting, scrapy-redis's baseline, our cluster's tests.

The farm (harness/cluster_farm.py) is checked with a deliberately impolite client
before it judges anyone.  Then two kinds of crawl on it, several real Scrapy
processes against one real redis-server (harness/cluster_nodes.py):

- scrapy-redis's SIGKILL loss, a measurement of scrapy-redis (not of
  scrapy-focus): it documents the defect cluster mode fixes;
- scrapy-focus's cluster tests, xfail until the cluster scheduler is wired in
  (``FOCUS_CLUSTER_REDIS_URL`` has no effect before that: every node crawls the
  whole farm by itself).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import urllib.error
import urllib.request

import pytest
import redis

from harness.cluster_farm import ClusterFarm
from harness.cluster_nodes import (
    FOCUS_SPIDER,
    REDIS_SPIDER,
    ClusterNodes,
    Kill,
    focus_settings,
    scrapy_redis_settings,
)

DELAY = 0.25
needs_cluster = pytest.mark.xfail(reason="needs the cluster scheduler", strict=False)


def fetch(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            answer.read()
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


def test_an_impolite_client_is_caught_and_a_polite_one_is_not():
    with ClusterFarm(hosts=2, pages=8, latency=0.1) as farm:
        # Host 0: two at once, twice (the second pair 0.3 s later); host 1: one by one.
        for _ in range(2):
            pair = [threading.Thread(target=fetch, args=(farm.url(0, i),)) for i in (1, 2)]
            for thread in pair:
                thread.start()
            for thread in pair:
                thread.join()
            time.sleep(0.2)
        for page in (1, 2, 3):
            fetch(farm.url(1, page))
            time.sleep(DELAY)
        fetch(farm.url(1, 3))
        host0, host1 = farm.netlocs
        gaps = farm.gaps()
        assert len(gaps[host0]) == 3 and len(gaps[host1]) == 3
        assert sum(gap < 0.05 for gap in gaps[host0]) == 2  # within each pair
        assert min(gaps[host1]) >= DELAY
        assert farm.gaps_below(DELAY) == sorted(gap for gap in gaps[host0] if gap < DELAY)
        assert farm.max_in_flight() == {host0: 2, host1: 1}
        assert farm.fetched_twice() == {farm.url(0, 1): 2, farm.url(0, 2): 2, farm.url(1, 3): 2}
        fetched = {farm.url(0, 1), farm.url(0, 2), farm.url(1, 1), farm.url(1, 2), farm.url(1, 3)}
        assert farm.never_fetched() == farm.all_urls() - fetched


def test_the_throttled_host_holds_and_counts_who_did_not_wait():
    with ClusterFarm(hosts=2, pages=4, throttled=1, retry_after=1.0) as farm:
        assert fetch(farm.url(1, 0)) == 429
        assert fetch(farm.url(1, 1)) == 429  # inside the hold: counted
        assert fetch(farm.url(0, 1)) == 200  # other hosts are not held
        time.sleep(1.05)
        assert fetch(farm.url(1, 1)) == 200
        assert [hit.path for hit in farm.early_retries()] == ["/p/1"]


def test_every_page_is_reachable_from_the_seed_through_two_parents():
    farm = ClusterFarm(hosts=3, pages=7)
    try:
        links: dict[str, set[str]] = {}
        for host in range(3):
            for page in range(7):
                html = farm.page_html(host, page).decode()
                base = f"http://{farm.netlocs[host]}"
                hrefs = [part.split('"')[0] for part in html.split('href="')[1:]]
                links[farm.url(host, page)] = {
                    href if href.startswith("http") else base + href for href in hrefs
                }
        reached, todo = {farm.seed}, [farm.seed]
        while todo:
            for url in links[todo.pop()] - reached:
                reached.add(url)
                todo.append(url)
        assert reached == farm.all_urls()
        parents = {url: sum(url in out for out in links.values()) for url in farm.all_urls()}
        assert min(count for url, count in parents.items() if not url.endswith("/p/0")) == 2
    finally:
        farm.stop()


def scrapy_redis_fingerprint(url: str) -> bytes:
    """RFPDupeFilter.request_fingerprint of a GET without a body, as scrapy-redis 0.9.1 has it."""
    from w3lib.url import canonicalize_url

    data = json.dumps({"method": "GET", "url": canonicalize_url(url), "body": ""}, sort_keys=True)
    return hashlib.sha1(data.encode()).hexdigest().encode()


def test_scrapy_redis_loses_the_requests_a_sigkilled_node_had_taken(redis_server, tmp_path):
    """A measurement of scrapy-redis 0.9.1, not of scrapy-focus: the baseline defect."""
    with ClusterFarm(hosts=8, pages=31) as farm:
        nodes = ClusterNodes(
            tmp_path, scrapy_redis_settings(redis_server.url, DELAY), REDIS_SPIDER, [farm.seed]
        )
        nodes.push_start_urls(redis_server.url)
        run = nodes.run(kill=Kill(1, lambda elapsed: farm.by_agent()["node-1"] >= 10))
        assert [node.killed for node in run.nodes] == [False, True, False]
        assert [run.nodes[i].returncode for i in (0, 2)] == [0, 0], run.nodes[0].log.read_text()
        lost = farm.never_fetched()
        client = redis.Redis.from_url(redis_server.url)
        seen = client.smembers("cluster:dupefilter")
        assert client.zcard("cluster:requests") == 0  # nothing left queued...
        assert lost, "scrapy-redis lost nothing: the baseline changed"
        # ...and every lost page was marked seen: no node will ever fetch it.
        assert {scrapy_redis_fingerprint(url) for url in lost} <= seen
        # Politeness is per process: two nodes hit one host faster than DOWNLOAD_DELAY.
        assert farm.gaps_below(DELAY)


# -- scrapy-focus in cluster mode: the lead flips these once the scheduler is wired in.

HOSTS, PAGES = 4, 15


def focus_nodes(tmp_path, redis_url, farm, count, **settings):
    options = focus_settings(redis_url, delay=DELAY) | settings
    return ClusterNodes(tmp_path, options, FOCUS_SPIDER, [farm.seed], nodes=count)


@needs_cluster
def test_the_cluster_fetches_what_one_node_fetches_each_page_once(redis_server, tmp_path):
    with ClusterFarm(HOSTS, PAGES) as alone:
        single = focus_nodes(tmp_path / "one", redis_server.url, alone, 1, FOCUS_CLUSTER_NAME="one")
        assert single.run().nodes[0].returncode == 0
        one_node = {alone.page_id(url) for url in alone.fetched()}
    with ClusterFarm(HOSTS, PAGES) as farm:
        run = focus_nodes(tmp_path / "three", redis_server.url, farm, 3).run()
        assert [node.returncode for node in run.nodes] == [0, 0, 0]
        union = {farm.page_id(url) for url in farm.fetched()}
        assert union == one_node
        assert farm.fetched_twice() == {}
        assert sum(1 for count in farm.by_agent().values() if count) == 3  # all took part


@needs_cluster
def test_a_sigkilled_nodes_leases_are_fetched_by_the_others(redis_server, tmp_path):
    with ClusterFarm(HOSTS * 2, PAGES) as farm:
        nodes = focus_nodes(
            tmp_path, redis_server.url, farm, 3, FOCUS_CLUSTER_HEARTBEAT=0.5,
            FOCUS_CLUSTER_LEASE_TIMEOUT=2.0,
        )  # fmt: skip
        run = nodes.run(kill=Kill(1, lambda elapsed: farm.by_agent()["node-1"] >= 5))
        assert run.nodes[1].killed
        assert farm.never_fetched() == set()
        # Only what the killed node had leased may be fetched twice.
        assert len(farm.fetched_twice()) <= 16


@needs_cluster
def test_gaps_across_nodes_never_below_the_delay_nor_two_in_flight(redis_server, tmp_path):
    with ClusterFarm(HOSTS, PAGES, latency=0.05) as farm:
        run = focus_nodes(tmp_path, redis_server.url, farm, 3).run()
        assert [node.returncode for node in run.nodes] == [0, 0, 0]
        assert farm.never_fetched() == set()
        assert farm.gaps_below(DELAY) == []
        assert max(farm.max_in_flight().values()) == 1


@needs_cluster
def test_one_nodes_429_holds_the_host_for_all(redis_server, tmp_path):
    with ClusterFarm(HOSTS, PAGES, throttled=1, retry_after=3.0) as farm:
        run = focus_nodes(tmp_path, redis_server.url, farm, 3).run()
        assert [node.returncode for node in run.nodes] == [0, 0, 0]
        assert farm.early_retries() == []
        assert farm.never_fetched() == set()
