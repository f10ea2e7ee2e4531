"""Re-scoring in a cluster (scrapy_focus/cluster/rescoring.py) on a real redis-server.

The moves ride rounds as on a node: a ``Riders`` holding the ``FrontierMoves`` is asked
for its commands and sent through the frontier's pipeline, as ``ClusterLink`` does.
"""

from __future__ import annotations

import pickle
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from harness.redis_server import RedisServer
from scrapy_focus.cluster import seen
from scrapy_focus.cluster.frontier import RedisFrontier, Release
from scrapy_focus.cluster.node import NodeHostQueues, NodeStore
from scrapy_focus.cluster.rescoring import FrontierMoves
from scrapy_focus.cluster.riders import Riders
from scrapy_focus.config import FocusConfig
from scrapy_focus.frontier.admission import queue_host
from scrapy_focus.frontier.codec import RequestCodec
from scrapy_focus.frontier.entries import decode_key, encode_key, encode_rank
from tests.test_cluster_frontier import fp, item, make, urls
from tests.test_frontier_rediscovery import SITE, link, open_scheduler


def ride(frontier: RedisFrontier, moves: FrontierMoves) -> int:
    """One round of the rider through *frontier*: how many commands it said."""
    riders = Riders()
    riders.add(moves)
    calls, spans = riders.calls(time.monotonic())
    if calls:
        riders.answered(spans, frontier.run(calls))
    return len(calls)


def index_sizes(frontier: RedisFrontier) -> tuple[int, int]:
    client, keys = frontier.client, frontier.keys
    return client.hlen(keys.key("pending")), client.hlen(keys.key("entry_seen"))


def test_a_raise_moves_a_queued_entry_up_with_its_new_payload_whichever_node_pushed_it(
    redis_server: RedisServer,
) -> None:
    a, b = make(redis_server, "a"), make(redis_server, "b")
    a.push([item("u1", score=0.2), item("u2", score=0.5), item("u3", score=0.4)])
    moves = FrontierMoves(b)
    moves.raise_entry(fp("u1"), "h", encode_rank(0, 0.9), b"u1 from a better page")
    moves.raise_entry(fp("u3"), "h", encode_rank(0, 0.1), b"u3 lower")  # never down
    moves.raise_entry(fp("u2"), "h", encode_rank(1, 0.9), b"u2 other priority")
    assert ride(b, moves) == 1  # one script call for the three
    assert b.stats["focus/cluster/raised"] == 1 and not moves.gone
    assert urls(a.lease(10).entries) == ["u1 from a better page", "u2", "u3"]


def test_a_link_another_node_queued_lower_moves_up_when_pushed_again(
    redis_server: RedisServer,
) -> None:
    """The push of a link seen before is the raise of what another node queued: the
    node that finds it again did not offer it, so only Redis knows it is queued."""
    a, b = make(redis_server, "a"), make(redis_server, "b")
    a.push([item("u1", score=0.2), item("u2", score=0.5)])
    better = replace(item("u1", score=0.9), payload=b"u1 from b's better page")
    assert b.push([better, item("u2", score=0.1)]) == [False, False]
    assert b.stats["focus/cluster/raised"] == 1 and b.stats["focus/cluster/seen"] == 2
    assert urls(a.lease(10).entries) == ["u1 from b's better page", "u2"]
    assert b.push([item("u1", score=1.0)]) == [False]  # leased now: stays as it is
    assert b.stats["focus/cluster/raised"] == 1


def test_a_raise_of_an_entry_taken_says_so_and_the_index_lives_from_push_to_ack(
    redis_server: RedisServer,
) -> None:
    a = make(redis_server, "a")
    a.push([item("u1", score=0.9), item("u2", score=0.5)])
    assert index_sizes(a) == (2, 2)
    first = a.lease(1).entries[0]
    moves = FrontierMoves(a)
    moves.raise_entry(fp("u1"), "h", encode_rank(0, 0.95), b"u1 again")  # leased
    moves.raise_entry(fp("never"), "h", encode_rank(0, 0.95), b"never pushed")
    ride(a, moves)
    assert not moves.gone  # not yet: a push may follow its raise by a round
    assert ride(a, moves) == 1  # tried once more, alone
    assert list(moves.gone) == [fp("u1"), fp("never")]
    assert a.stats["focus/cluster/raise_gone"] == 2
    assert ride(a, moves) == 0  # and then forgotten
    # A requeued entry keeps its index under its new key: it can still be raised.
    moved = a.requeue(first, 0.1)
    assert moved is not None and a.client.hget(a.keys.key("pending"), str(_member("u1")))
    moves.raise_entry(fp("u1"), "h", encode_rank(0, 0.8), b"u1 raised after its requeue")
    ride(a, moves)
    entries = a.lease(10).entries
    assert urls(entries) == ["u1 raised after its requeue", "u2"]
    a.release([Release(e.host, e.key, True, time.monotonic()) for e in entries])
    a.ack([e.key for e in entries])
    assert index_sizes(a) == (0, 0)  # nothing queued or leased: nothing indexed


def test_a_raise_that_reaches_redis_before_its_push_moves_the_entry_a_round_later(
    redis_server: RedisServer,
) -> None:
    """A round takes its pushes, then asks the riders: a link queued and raised on the
    reactor in between has its raise in that round and its push in the next."""
    a, b = make(redis_server, "a"), make(redis_server, "b")
    a.push([item("u2", score=0.5)])
    moves = FrontierMoves(b)
    moves.raise_entry(fp("u1"), "h", encode_rank(0, 0.9), b"u1 from a better page")
    assert ride(b, moves) == 1 and not moves.gone  # nothing queued yet: kept
    b.push([item("u1", score=0.2)])  # the next round's push, before its riders
    assert ride(b, moves) == 1
    assert b.stats["focus/cluster/raised"] == 1 and not b.stats["focus/cluster/raise_gone"]
    assert not moves.gone and ride(b, moves) == 0
    assert urls(a.lease(10).entries) == ["u1 from a better page", "u2"]


def _member(url: str) -> int:
    return seen.member(fp(url))


def test_the_window_is_read_with_a_round_and_rekeyed_with_the_next(
    redis_server: RedisServer,
) -> None:
    a = make(redis_server, "a")
    a.push([item(f"h{i}", host="h", score=0.9 - i / 10) for i in range(5)])
    a.push([item(f"g{i}", host="g", score=0.5 - i / 10) for i in range(3)])
    moves = FrontierMoves(a)
    hosts = NodeHostQueues(a, moves, lambda: 1, lambda: None)  # type: ignore[arg-type]
    store = NodeStore(a, moves, lambda name: None, "test")  # type: ignore[arg-type]
    assert hosts.rescore_window(4) is None  # asked for: it comes with the next round
    assert hosts.rescore_window(4) is None and ride(a, moves) == 1
    window = hosts.rescore_window(4)
    assert window is not None
    assert {host: [p for _, p in entries] for host, entries in window.items()} == {
        "h": [b"h0", b"h1"],  # ready hosts best first, the window shared out
        "g": [b"g0", b"g1"],
    }
    assert all(decode_key(key)[0] == 0 for entries in window.values() for key, _ in entries)
    last_g = window["g"][1][0]
    _, priority, score, _ = decode_key(last_g)
    assert abs(score - 0.4) < 1e-6
    store.rekey("g", [(last_g, _key(priority, 0.99))], {})
    assert ride(a, moves) == 1 and a.stats["focus/cluster/rekeyed"] == 1
    leased = a.lease(10).entries
    assert [e.payload for e in leased if e.host == "g"] == [b"g1", b"g0", b"g2"]


def _key(priority: int, score: float) -> bytes:
    return encode_key(0, priority, score, 0)


def test_a_node_store_raises_what_it_queued_and_forgets_what_was_taken(
    redis_server: RedisServer,
) -> None:
    a = make(redis_server, "a")
    moves = FrontierMoves(a)
    sent: list[Any] = []
    link: Any = type("Link", (), {"send": lambda self, kind, message: sent.append(message)})()
    store = NodeStore(link, moves, lambda name: None, "test")
    assert store.seen_add(fp("u1"))
    place = store.push("h", 0, 0.3, b"u1", fp("u1"))
    store.seen_pending(fp("u1"), place)
    a.push(sent)
    assert store.pending_key(fp("u1")) == place
    raised = store.replace(place, "h", 0, 0.7, b"u1 better", fp("u1"))
    assert raised is not None and decode_key(raised[0])[2] > decode_key(place)[2]
    store.seen_pending(fp("u1"), raised[0])
    ride(a, moves)
    (entry,) = a.lease(1).entries
    assert entry.payload == b"u1 better" and abs(entry.score - 0.7) < 1e-6
    store.replace(raised[0], "h", 0, 0.8, b"u1 best", fp("u1"))  # taken meanwhile
    ride(a, moves)
    assert store.pending_key(fp("u1")) is not None  # its push might be a round behind
    ride(a, moves)
    assert store.pending_key(fp("u1")) is None  # not scored again for a raise


def test_a_node_scheduler_raises_a_page_found_again_on_a_relevant_page(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """The scheduler's own path on a cluster node: the rescorer, the node's store, the
    rider on the link's thread, the script in Redis; another node leases what it left."""
    cluster = {"FOCUS_CLUSTER_REDIS_URL": redis_server.url, "FOCUS_CLUSTER_NAME": "t"}
    with open_scheduler(tmp_path, **cluster) as scheduler:
        scheduler.enqueue_request(link("/sched.html", "/modindex.html", 0.05, "sched"))
        for n in range(5):
            scheduler.enqueue_request(link(f"/other{n}.html", "/modindex.html", 0.3, f"mod {n}"))
        again = link("/sched.html", "/concurrency.html", 0.9, "sched: event scheduler for threads")
        assert not scheduler.enqueue_request(again)  # a duplicate: still one entry
        other = make(redis_server, "other")
        host = queue_host(f"{SITE}/sched.html")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the link says it with its next round
            queued = other.iter_host(host, 10)
            if len(queued) == 6 and b"concurrency" in queued[0][1]:
                break
            time.sleep(0.05)
        best = other.lease(1).entries
        assert best and b"/sched.html" in best[0].payload and b"concurrency" in best[0].payload
        assert scheduler.crawler.stats.get_value("focus/frontier/raised") == 1
        rest = other.lease(10).entries
        assert len(rest) == 5 and not any(b"/sched.html" in e.payload for e in rest)


def test_an_entry_of_the_window_that_is_not_data_reads_as_none_not_an_error() -> None:
    """The window comes from Redis, which anyone who reaches it can write: its entries
    are read as data, and one that is not is left where it is (the lease of its turn
    quarantines it)."""
    config = FocusConfig.from_settings(Settings()).frontier
    codec = RequestCodec(None, get_crawler().stats, config)
    for payload in (b"", b"garbage", b"\x80\x05not a pickle at all", pickle.dumps(1)):
        assert codec.load(payload) is None
