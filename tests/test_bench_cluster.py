"""The cluster benchmark's own parts: its figures from a real crawl, its report's place."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import bench_cluster  # noqa: E402
from cluster_measures import CrawlFigures, crawl, queue_scrapy_redis  # noqa: E402


def test_a_scrapy_redis_crawl_gives_the_servers_figures_and_the_nodes_round_trips(
    redis_server, tmp_path
):
    got = crawl("scrapy-redis", tmp_path, redis_server.url, 2, hosts=2, pages=7, delay=0.0)
    assert isinstance(got, CrawlFigures)
    assert got.returncodes == [0, 0]
    assert (got.pages, got.lost) == (14, 0)
    assert got.fetches == 15  # the seed: a start URL is dont_filter, and linked again
    assert len(got.cpu_per_node) == 2 and all(cpu > 0.3 for cpu in got.cpu_per_node)
    # Each page is a pop, and each new link a SADD then a ZADD: more than one trip a page.
    assert got.round_trips_per_page is not None and got.round_trips_per_page > 2
    assert got.commands_per_page > got.round_trips_per_page  # a pop is MULTI..EXEC
    assert got.lease_return_s is None  # no node was killed


def test_two_focus_nodes_on_many_hosts_make_at_most_one_round_trip_per_page(redis_server, tmp_path):
    got = crawl("focus", tmp_path, redis_server.url, 2, hosts=24, pages=31, delay=0.0)
    assert isinstance(got, CrawlFigures)
    assert got.returncodes == [0, 0]
    assert (got.pages, got.lost, got.fetches) == (24 * 31, 0, 24 * 31)
    # Every call to Redis of each node, its seams' included (harness/redis_trips.py).
    assert got.round_trips_per_page is not None and got.round_trips_per_page <= 1.0


def test_scrapy_redis_queue_gives_every_request_back_and_pickles_cost_bytes(redis_server):
    got = queue_scrapy_redis(redis_server.url, 300)
    assert got.requests == 300 and got.push_per_s > 0 and got.take_per_s > 0
    assert got.bytes_per_pending > 150  # a pickled Request.to_dict() each


def test_the_report_replaces_its_own_section_of_the_benchmarks_page(tmp_path, monkeypatch):
    page = tmp_path / "benchmarks.md"
    monkeypatch.setattr(bench_cluster, "DOCS", page)
    other, after = "## Other (x.py)\n\nkept\n", "## After (y.py)\n\nkept\n"
    old, new = (f"{bench_cluster.HEADING}\n\n{text}\n" for text in ("old", "new"))
    page.write_text(f"# B\n\n{other}\n{old}")
    bench_cluster.write_docs(new)
    assert page.read_text() == f"# B\n\n{other}\n{new}"
    page.write_text(f"# B\n\n{old}\n{after}")
    bench_cluster.write_docs(new)
    assert page.read_text() == f"# B\n\n{new}\n{after}"
    page.write_text(f"# B\n\n{other}")
    bench_cluster.write_docs(new)  # no section yet: added at the end
    assert page.read_text() == f"# B\n\n{other}\n{new}"


def test_the_harvest_part_puts_the_nodes_fetches_in_one_order_by_the_machines_clock(tmp_path):
    import json

    from cluster_harvest import HarvestFigures, Run, fetch_order, pooled_ratio

    class Keys:  # what the harvest farm does with a URL: its path
        @staticmethod
        def key(url: str) -> str:
            return url.split("/", 3)[3]

    logs = []
    for node, lines in enumerate(
        [
            [("a.html", 200, 10.0), ("moved.html", 301, 10.5), ("c.html", 200, 12.0)],
            [("b.html", 200, 11.0), ("c.html", 200, 11.5), ("d.html", 200, 13.0)],
        ]
    ):
        log = tmp_path / f"node-{node}.jsonl"
        log.write_text(
            "\n".join(
                json.dumps({"url": f"http://h/{path}", "status": status, "t": 0.0, "m": m})
                for path, status, m in lines
            )
            + "\n"
            + json.dumps({"closed": "finished"})
            + "\n"
        )
        logs.append(log)
    order, twice = fetch_order(Keys(), logs)
    assert order == ["a.html", "b.html", "c.html", "d.html"]  # redirects left out
    assert twice == 1  # c.html: node 1 first, then node 0

    run = Run(harvest_2r=0.5, recall_4r=1.0, fetched_twice=0)
    half = Run(harvest_2r=0.25, recall_4r=1.0, fetched_twice=0)
    topics = [
        HarvestFigures("a", 10, [run, run, half], [half, half, run], [run, run, run]),
        HarvestFigures("b", 30, [run, run, run], [run, run, run], [run, run, run]),
    ]
    assert topics[0].ratio == 0.5  # medians: 0.25 against 0.5
    assert pooled_ratio(topics) == (0.25 * 20 + 0.5 * 60) / (0.5 * 20 + 0.5 * 60)
    assert pooled_ratio(topics, "one_node_doubled") == 1.0


def test_the_harvest_part_runs_the_topics_asked_and_refuses_unknown_ones(capsys):
    import pytest

    assert bench_cluster.parse_args([]).harvest_topics == ()  # cluster_harvest's own four
    asked = bench_cluster.parse_args(["--harvest-topics", "cmake-tutorial,apache-programs"])
    assert asked.harvest_topics == ("cmake-tutorial", "apache-programs")
    with pytest.raises(SystemExit):
        bench_cluster.parse_args(["--harvest-topics", "asyncio,no-such-topic"])
    assert "no-such-topic" in capsys.readouterr().err

    from cluster_harvest import harvest_on_nodes

    with pytest.raises(ValueError, match="no-such-topic"):  # before any crawl or Redis call
        harvest_on_nodes(Path("/nonexistent"), "redis://127.0.0.1:1", topics=("no-such-topic",))
