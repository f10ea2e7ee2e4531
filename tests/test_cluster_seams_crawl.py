"""The cluster's shared state besides the frontier in real crawls: two nodes (two
``scrapy runspider`` processes, one after the other) against one real redis-server.
The frontier is not shared here (the scheduler's wiring does that); what is shared
is what ``install`` puts in place: the counters, engine history, breakers and the
link model.
"""

from __future__ import annotations

import json

import redis

from harness.crawl import STATS_EXTENSION
from tests.crawl import run_crawl

INSTALL = "tests.cluster_install.InstallCluster"


def node(farm, redis_server, workdir, name, max_pages, start):
    workdir.mkdir()
    settings = {
        "REDIS_URL": redis_server.url,
        "FOCUS_NODE_NAME": name,
        "FOCUS_MAX_PAGES": max_pages,
        "FOCUS_TOPIC": "article",
        "EXTENSIONS": {STATS_EXTENSION: 0, INSTALL: 0},
    }
    result = run_crawl(workdir, [farm.url(start)], settings, follow=True)
    assert result.returncode == 0, result.log[-3000:]
    return result


def http_successes(client) -> float:
    records = client.hgetall("focus:{farm}:history")
    return sum(
        json.loads(raw)["successes"] for field, raw in records.items() if field.endswith(b"\0http")
    )


def test_two_nodes_share_the_page_budget_the_history_and_the_link_model(
    farm, redis_server, tmp_path
):
    client = redis.Redis.from_url(redis_server.url)  # reconnects after the restart
    first = node(farm, redis_server, tmp_path / "a", "a", 6, "/index.html")
    assert first.stats["finish_reason"] == "focus_max_pages"
    # Pages in flight when the budget was reached still arrive (as on one machine).
    after_first = int(client.hget("focus:{farm}:counters", "fetched"))
    assert after_first == first.stats["focus/pages_fetched"] == len(first.items) >= 6
    said = [line for line in first.log.splitlines() if "Cluster mode: crawl" in line]
    assert len(said) == 1 and f"on {redis_server.url} (from REDIS_URL) as node a" in said[0]
    learnt = http_successes(client)
    assert learnt >= 5  # flushed when the crawl closed
    assert int(client.hget("focus:{farm}:model", "updates")) > 0

    redis_server.restart(kill=True)  # AOF: what node a wrote is kept
    budget = after_first + 3
    second = node(farm, redis_server, tmp_path / "b", "b", budget, "/articles/20.html")
    # The budget is the crawl's: node b fetched about what node a left of it.
    assert second.stats["finish_reason"] == "focus_max_pages"
    total = int(client.hget("focus:{farm}:counters", "fetched"))
    assert second.stats["focus/pages_fetched"] == total == after_first + len(second.items)
    assert 3 <= len(second.items) <= 5  # alone, it would have fetched `budget` pages
    # Node b's ladder read node a's record and added its own pages to it.
    assert http_successes(client) >= learnt + len(second.items) - 0.5
