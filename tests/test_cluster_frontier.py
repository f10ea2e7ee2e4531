"""The cluster frontier's data layer (scrapy_focus/cluster/frontier.py) on a real redis-server.

Two ``RedisFrontier`` instances with different node names stand for two nodes (each
with its own client, as two processes would have); times are Redis's own (the
lease records' dispatch times, ``TIME``).
"""

from __future__ import annotations

import hashlib
import itertools
import pickle
import random
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import redis
from scrapy import Request
from scrapy.settings import Settings
from scrapy_redis.dupefilter import RFPDupeFilter

from harness.redis_server import RedisServer
from scrapy_focus.cluster.connection import redis_client
from scrapy_focus.cluster.frontier import (
    ClusterUnavailable,
    Leased,
    Push,
    RedisFrontier,
    Release,
)
from scrapy_focus.cluster.keys import ClusterKeys
from scrapy_focus.config import FocusConfig
from scrapy_focus.frontier.entries import decode_rank, encode_key, encode_rank
from scrapy_focus.frontier.payload import dump_entry


def make(server: RedisServer, node: str, client: Any = None, **settings: Any) -> RedisFrontier:
    """A node's frontier of the crawl "t" on *server*; FOCUS_*/Scrapy settings as given,
    ``max_host_delay``/``base_backoff`` as politeness fields."""
    politeness = {k: settings.pop(k) for k in ("max_host_delay", "base_backoff") if k in settings}
    settings["FOCUS_CLUSTER_REDIS_URL"] = server.url
    config = FocusConfig.from_settings(Settings(settings))
    keys = ClusterKeys.for_crawl(config.cluster.key_prefix, "t")
    return RedisFrontier(
        client or redis_client(config.cluster),
        keys,
        node,
        config.cluster,
        replace(config.politeness, **politeness),
    )


def fp(url: str) -> bytes:
    return hashlib.sha1(url.encode()).digest()


def item(url: str, host: str = "h", score: float = 0.5, priority: int = 0) -> Push:
    return Push(fp(url), host, priority, score, url.encode())


def urls(entries: list[Leased]) -> list[str]:
    return [entry.payload.decode() for entry in entries]


def dispatch_time(frontier: RedisFrontier, key: bytes) -> float:
    record = frontier.client.hget(frontier.keys.key("leases"), key)
    return float(record.split(b"\n")[2])


def test_best_first_by_float_score_and_fifo_among_equals_across_two_nodes(
    redis_server: RedisServer,
) -> None:
    a, b = make(redis_server, "a"), make(redis_server, "b")
    a.push([item("a1", "h1", 0.25), item("a2", "h2", 0.75)])
    b.push([item("b1", "h1", 0.75), item("b2", "h3", 0.250001)])
    a.push([item("a3", "h2", 0.75), item("a4", "h3", 0.1, priority=1)])
    b.push([item("b3", "h1", 0.75)])
    assert a.status().queued == 7
    batch = b.lease(100)
    # priority first, then score (0.250001 above 0.25), then the order of the pushes
    assert urls(batch.entries) == ["a4", "a2", "b1", "a3", "b3", "b2", "a1"]
    assert [e.score for e in batch.entries][:2] == pytest.approx([0.1, 0.75])
    assert (batch.queued, batch.wait) == (0, None)


def test_a_fingerprint_is_queued_once_across_nodes(redis_server: RedisServer) -> None:
    a, b = make(redis_server, "a"), make(redis_server, "b")
    assert a.push([item("u1"), item("u2"), item("u1")]) == [True, True, False]
    assert b.push([item("u2"), item("u3")]) == [False, True]
    assert urls(a.lease(10).entries) == ["u1", "u2", "u3"]
    assert b.push([item("u1")]) == [False]  # leased, still seen
    assert a.stats["focus/cluster/seen"] == 1 and b.stats["focus/cluster/seen"] == 2


def _seen_count(client: Any, keys: ClusterKeys) -> int:
    return sum(
        client.scard(key)
        for key in client.scan_iter(match=keys.key("seen", "*"), count=1000)
        if not key.endswith(b":buckets")
    )


def test_seen_is_queued_even_when_redis_is_killed_mid_push(redis_server: RedisServer) -> None:
    frontier = make(redis_server, "a")
    stop = threading.Event()

    def pusher() -> None:
        n = 0
        while not stop.is_set():
            try:
                frontier.push([item(f"u{n}-{i}") for i in range(200)])
            except ClusterUnavailable:
                return
            n += 1

    thread = threading.Thread(target=pusher)
    thread.start()
    time.sleep(0.4)
    redis_server.restart(kill=True)  # SIGKILL while batches are being written
    stop.set()
    thread.join()
    client = frontier.client
    seen_urls = _seen_count(client, frontier.keys)
    assert seen_urls > 0
    queued = client.zcard(frontier.keys.key("q", "h"))
    assert seen_urls == queued == client.hlen(frontier.keys.key("payloads"))
    assert frontier.status().queued == queued


def test_per_host_delay_holds_across_two_nodes_leasing_alternately(
    redis_server: RedisServer,
) -> None:
    a, b = make(redis_server, "a", DOWNLOAD_DELAY=0.2), make(redis_server, "b", DOWNLOAD_DELAY=0.2)
    a.push([item(f"u{i}") for i in range(8)])
    times: dict[str, list[float]] = {"a": [], "b": []}
    deadline, last = time.monotonic() + 1.5, b
    while time.monotonic() < deadline:
        # The node that did not get the last turn asks first: alternating by loop count
        # instead can phase-lock with the delay and hand every turn to one node.
        first, second = (a, b) if last is b else (b, a)
        for node, other in ((first, second), (second, first)):
            for entry in node.lease(4).entries:
                times[node.node].append(dispatch_time(node, entry.key))
                # The other node asks at once; on a loaded machine the delay may have
                # passed by then, and its turn counts in the gaps below like any other.
                for late in other.lease(4).entries:
                    times[other.node].append(dispatch_time(other, late.key))
                    other.release([Release(late.host, late.key, network=True)])
                    other.ack([late.key])
                node.release([Release(entry.host, entry.key, network=True)])
                node.ack([entry.key])
                last = node
        time.sleep(0.01)
    assert times["a"] and times["b"], times
    handed = sorted(times["a"] + times["b"])
    gaps = [later - earlier for earlier, later in itertools.pairwise(handed)]
    assert len(handed) >= 5 and min(gaps) >= 0.2, gaps


def test_a_turn_is_given_back_when_the_corpus_answered(redis_server: RedisServer) -> None:
    frontier = make(redis_server, "a", DOWNLOAD_DELAY=5.0)
    frontier.push([item("u1"), item("u2")])
    first = frontier.lease(2)
    # One at a time with a delay: the host waits for its request to end, then the delay.
    assert len(first.entries) == 1 and first.wait > 5.0
    frontier.release([Release("h", first.entries[0].key, network=False)])
    assert urls(frontier.lease(2).entries) == ["u2"]  # the host's turn was not used
    assert frontier.release([Release("h", b"not leased here", network=True)]) == 1
    assert frontier.lease(2).wait is None  # nothing left to wait for


def test_per_host_concurrency_limit_across_nodes(redis_server: RedisServer) -> None:
    settings = {"CONCURRENT_REQUESTS_PER_DOMAIN": 2}
    a, b = make(redis_server, "a", **settings), make(redis_server, "b", **settings)
    a.push([item(f"u{i}") for i in range(5)] + [item("other", "h2")])
    taken = a.lease(10).entries
    assert urls(taken) == ["u0", "u1", "other"]
    assert b.lease(10).entries == []
    a.release([Release("h", taken[0].key, network=True)])
    assert urls(b.lease(10).entries) == ["u2"]
    assert b.lease(10).entries == []


def test_backoff_on_one_node_holds_the_host_for_the_other(redis_server: RedisServer) -> None:
    a, b = make(redis_server, "a", max_host_delay=60.0), make(redis_server, "b")
    a.push([item("u1"), item("u2"), item("x1", "h2")])
    assert a.backoff("h", 0.4) == pytest.approx(0.4)
    batch = b.lease(10)
    assert urls(batch.entries) == ["x1"] and 0 < batch.wait <= 0.4
    time.sleep(batch.wait + 0.02)
    assert urls(b.lease(1).entries) == ["u1"]
    # a Retry-After beyond FOCUS_MAX_HOST_DELAY sets the host aside for every node
    assert a.backoff("h", 3600) == float("inf")
    status = b.status()
    assert (status.queued, status.held) == (0, 1)
    assert b.lease(10).entries == [] and b.push([item("u3")]) == [True]
    assert b.status().held == 2


def test_set_policy_raises_the_delay_for_all_nodes(redis_server: RedisServer) -> None:
    a, b = make(redis_server, "a"), make(redis_server, "b", DOWNLOAD_DELAY=0.0)
    a.push([item("u1"), item("u2")])
    b.set_policy("h", 0.3, 8)  # a robots.txt Crawl-delay
    b.set_policy("h", 0.1, 8)  # a shorter one does not lower it
    assert len(a.lease(5).entries) == 1
    waited = b.lease(5)
    assert waited.entries == [] and 0 < waited.wait <= 0.3


def test_reclaim_returns_a_dead_nodes_unacknowledged_leases_to_their_place(
    redis_server: RedisServer,
) -> None:
    settings = {"FOCUS_CLUSTER_HEARTBEAT": 0.1, "FOCUS_CLUSTER_LEASE_TIMEOUT": 1.0}
    dead, alive = make(redis_server, "dead", **settings), make(redis_server, "alive", **settings)
    dead.push([item(f"u{i}", score=1 - i / 10) for i in range(5)])
    dead.heartbeat()
    taken = dead.lease(3).entries
    dead.ack([taken[1].key])
    assert alive.heartbeat() == 0  # the dead node's heartbeat is still fresh
    assert urls(alive.lease(1).entries) == ["u3"]
    time.sleep(1.05)
    assert alive.heartbeat() == 2
    assert urls(alive.lease(10).entries) == ["u0", "u2", "u4"]  # their places, u1 never
    # the dead node comes back: its acks and releases of reclaimed keys are no-ops
    assert dead.ack([taken[0].key]) == 1 and dead.stats["focus/cluster/ack_gone"] == 1
    assert dead.release([Release("h", taken[2].key, network=True)]) == 1
    status = alive.status()
    assert (status.queued, status.leased, status.nodes_alive) == (0, 4, 1)


def test_a_host_with_a_delay_gets_one_request_at_a_time_before_any_policy_is_said(
    redis_server: RedisServer,
) -> None:
    # A push can reach Redis before its node's set_policy: the record it makes keeps
    # the same rule, so the first turns also count from the end of the request before.
    a = make(redis_server, "a", DOWNLOAD_DELAY=0.3, CONCURRENT_REQUESTS_PER_DOMAIN=8)
    a.push([item("u1"), item("u2")])
    assert a.client.hget(a.keys.key("host", "h"), "concurrency") == b"1"
    (first,) = a.lease(4).entries
    time.sleep(0.35)  # the delay after its dispatch: still in flight, no second turn
    assert a.lease(4).entries == []
    a.release([Release("h", first.key, True)])
    assert a.lease(4).entries == []  # a delay after it ended


def test_a_reclaimed_request_in_flight_counts_its_hosts_delay_from_the_reclaim(
    redis_server: RedisServer,
) -> None:
    # The dead node's request may have reached the host just before it died, and no
    # release will say when it ended: the next one waits a delay after the reclaim.
    settings = {"FOCUS_CLUSTER_HEARTBEAT": 0.1, "FOCUS_CLUSTER_LEASE_TIMEOUT": 0.5}
    dead, alive = make(redis_server, "dead", **settings), make(redis_server, "alive", **settings)
    dead.set_policy("h", 1.0, 1)
    dead.push([item("u1"), item("u2")])
    dead.heartbeat()
    (taken,) = dead.lease(1).entries
    time.sleep(0.6)
    assert alive.heartbeat() == 1  # reclaimed
    reclaimed_at = float(b"%d.%06d" % tuple(alive.client.time()))
    waiting = alive.lease(2)
    assert waiting.entries == [] and 0.9 < waiting.wait <= 1.0  # not 0.4 after its lease
    time.sleep(waiting.wait + 0.05)
    leased = alive.lease(2).entries
    assert urls(leased) == ["u1"]  # its place, a delay after the reclaim
    assert dispatch_time(alive, leased[0].key) >= reclaimed_at + 1.0
    assert taken.key == leased[0].key


def test_a_lease_past_its_hard_deadline_returns_whatever_the_heartbeats(
    redis_server: RedisServer,
) -> None:
    frontier = make(redis_server, "a", FOCUS_CLUSTER_LEASE_DEADLINE=1.0)
    frontier.push([item("u1")])
    frontier.heartbeat()
    key = frontier.lease(1).entries[0].key
    assert frontier.heartbeat() == 0
    # index entries without a lease (written by someone else) are dropped, not kept forever
    deadlines = frontier.keys.key("deadlines")
    frontier.client.zadd(deadlines, {b"stale %d" % i: 0 for i in range(300)})
    time.sleep(1.05)
    assert frontier.heartbeat() == 0  # the first 256 past their deadline were stale
    assert frontier.heartbeat() == 1
    assert frontier.client.zrange(deadlines, 0, -1) == []
    assert [e.key for e in frontier.lease(1).entries] == [key]


def test_acknowledged_keys_never_come_back(redis_server: RedisServer) -> None:
    settings = {"FOCUS_CLUSTER_HEARTBEAT": 0.1, "FOCUS_CLUSTER_LEASE_TIMEOUT": 0.3}
    frontier = make(redis_server, "a", FOCUS_CLUSTER_LEASE_DEADLINE=0.3, **settings)
    other = make(redis_server, "b", **settings)
    frontier.push([item("u1"), item("u2")])
    keys = [entry.key for entry in frontier.lease(2).entries]
    assert frontier.ack(keys) == 0
    time.sleep(0.4)
    assert other.heartbeat() == 0 and other.reclaim() == 0
    assert other.lease(10).entries == []
    status = other.status()
    assert (status.queued, status.leased) == (0, 0)
    assert other.client.hlen(other.keys.key("payloads")) == 0


def test_requeue_and_rekey_move_entries_to_new_places(redis_server: RedisServer) -> None:
    frontier = make(redis_server, "a")
    frontier.push([item("u1", score=0.9), item("u2", score=0.5), item("u3", score=0.4)])
    taken = frontier.lease(1).entries[0]
    new = frontier.requeue(taken, 0.1)
    assert new is not None and new != taken.key
    assert frontier.requeue(taken, 0.2) is None  # its lease is gone
    queued = frontier.iter_host("h", 10)
    assert [payload for _, payload in queued] == [b"u2", b"u3", b"u1"]
    assert frontier.iter_host("h", 0) == [] and len(frontier.iter_host("h", 2)) == 2
    moved = frontier.rekey("h", [(queued[1][0], 0, 0.95), (taken.key, 0, 0.99)])
    assert moved[0] is not None and moved[1] is None
    assert urls(frontier.lease(10).entries) == ["u3", "u2", "u1"]


def test_a_killed_and_restarted_redis_keeps_queue_leases_and_seen_set(
    redis_server: RedisServer,
) -> None:
    frontier = make(redis_server, "a")
    frontier.push([item(f"u{i}") for i in range(4)])
    taken = frontier.lease(2).entries
    redis_server.restart(kill=True)
    assert frontier.push([item("u0"), item("u9")]) == [False, True]  # scripts loaded again
    status = frontier.status()
    assert (status.queued, status.leased) == (3, 2)
    assert urls(frontier.lease(10).entries) == ["u2", "u3", "u9"]
    assert frontier.ack([entry.key for entry in taken]) == 0


def test_an_unreachable_redis_raises_one_exception_and_the_frontier_resumes(
    redis_server: RedisServer,
) -> None:
    frontier = make(redis_server, "a")
    frontier.push([item("u1")])
    redis_server.stop()
    for call in (
        lambda: frontier.push([item("u2")]),
        lambda: frontier.lease(1),
        frontier.status,
        frontier.heartbeat,
    ):
        with pytest.raises(ClusterUnavailable, match="Redis did not answer"):
            call()
    assert frontier.stats["focus/cluster/unavailable"] == 4
    redis_server.start()
    assert frontier.push([item("u2")]) == [True]
    assert urls(frontier.lease(5).entries) == ["u1", "u2"]


class _Touch:
    """Unpickled, this would create a file: what a crafted entry could run."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.path,))


def test_a_crafted_entry_is_quarantined_never_unpickled(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    frontier = make(redis_server, "a")
    valid = dump_entry(Request("http://h/ok").to_dict())
    crafted = pickle.dumps({"url": "http://h/x", "meta": _Touch(marker)})
    frontier.push(
        [
            Push(fp("ok"), "h", 0, 0.9, valid),
            Push(fp("pickle"), "h", 0, 0.5, crafted),
            Push(fp("garbage"), "h", 0, 0.1, b"\x80\x05not a pickle at all"),
        ]
    )
    entries = frontier.lease(3).entries
    read = [frontier.read(entry) for entry in entries]
    assert read[0] is not None and read[0]["url"] == "http://h/ok"
    assert read[1:] == [None, None]
    assert not marker.exists()
    records = frontier.quarantined()
    assert [r["key"] for r in records] == [entries[2].key.hex(), entries[1].key.hex()]
    assert "refused" in records[1]["reason"] and records[1]["host"] == "h"
    assert frontier.stats["focus/cluster/quarantined"] == 2
    assert frontier.status().leased == 1  # the quarantined ones are acknowledged
    assert frontier.ack([entries[1].key, entries[2].key]) == 2


def test_a_payload_over_the_bound_is_refused_before_redis(redis_server: RedisServer) -> None:
    frontier = make(redis_server, "a")
    with pytest.raises(ValueError, match="over the cluster frontier"):
        frontier.push([Push(fp("big"), "h", 0, 0.5, b"x" * (256 * 1024 + 1))])
    with pytest.raises(ValueError, match="not a host"):
        frontier.push([Push(fp("bad"), "a\nb", 0, 0.5, b"x")])
    assert frontier.status().queued == 0


def _memory(client: Any, pattern: str) -> int:
    return sum(
        client.memory_usage(key, samples=0) for key in client.scan_iter(match=pattern, count=1000)
    )


def test_a_seen_url_costs_under_a_quarter_of_scrapy_redis_dupefilter(
    redis_server: RedisServer,
) -> None:
    n = 100_000
    frontier = make(redis_server, "a", FOCUS_CLUSTER_SEEN_EXPECTED=n)
    client = frontier.client
    filter_ = RFPDupeFilter(client, "spider:dupefilter")
    # what its request_seen() adds: a SHA1 in hex (made here without 100k Request objects)
    sample = filter_.request_fingerprint(Request("http://h0.example/page/0"))
    assert len(sample) == 40 and int(sample, 16) >= 0
    hexes = [
        hashlib.sha1(f"http://h{i % 50}.example/page/{i}?q={i * 7}".encode()).hexdigest()
        for i in range(n)
    ]
    base = client.info("memory")["used_memory"]
    for start in range(0, n, 5000):
        pipe = client.pipeline(transaction=False)
        for fingerprint in hexes[start : start + 5000]:
            pipe.sadd(filter_.key, fingerprint)
        pipe.execute()
    theirs_info = client.info("memory")["used_memory"] - base
    theirs = client.memory_usage(filter_.key, samples=0)
    client.delete(filter_.key)
    base = client.info("memory")["used_memory"]
    for start in range(0, n, 2000):
        chunk = hexes[start : start + 2000]
        frontier.push([Push(bytes.fromhex(h), "h", 0, 0.5, b"") for h in chunk])
    ours = _memory(client, frontier.keys.key("seen", "*"))
    for key in client.scan_iter(match=frontier.keys.key("*"), count=1000):
        if b":seen:" not in key:
            client.delete(key)
    ours_info = client.info("memory")["used_memory"] - base
    assert _seen_count(client, frontier.keys) == n
    assert client.object("encoding", frontier.keys.key("seen", "0")) == b"intset"
    print(
        f"bytes per seen URL: ours {ours / n:.1f} (INFO {ours_info / n:.1f}), "
        f"scrapy-redis {theirs / n:.1f} (INFO {theirs_info / n:.1f})"
    )
    assert ours * 4 <= theirs and ours_info * 4 <= theirs_info


class CountingConnection(redis.Connection):
    """Counts what the client sends: one packed command (or pipeline) = one round trip."""

    sent = 0

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountingConnection.sent += 1
        super().send_packed_command(command, check_health)


def test_each_batch_is_one_round_trip(redis_server: RedisServer) -> None:
    client = redis.Redis.from_url(redis_server.url, connection_class=CountingConnection)
    frontier = make(redis_server, "a", client=client, CONCURRENT_REQUESTS_PER_DOMAIN=100)

    def trips(call: Any) -> int:
        CountingConnection.sent = 0
        call()
        return CountingConnection.sent

    # the first call of each script on a server also loads it (NOSCRIPT, SCRIPT LOAD)
    for warm in (
        lambda: frontier.push([item("warm")]),
        lambda: frontier.lease(1),
        lambda: frontier.release([]),
        lambda: frontier.ack([b"x" * 16]),
        lambda: frontier.release([Release("h", b"x" * 16, True)]),
    ):
        warm()
    assert trips(lambda: frontier.push([item(f"u{i}") for i in range(100)])) == 1
    batch: list[Leased] = []
    assert trips(lambda: batch.extend(frontier.lease(50).entries)) == 1
    assert len(batch) == 50
    assert trips(lambda: frontier.release([Release(e.host, e.key, True) for e in batch])) == 1
    assert trips(lambda: frontier.ack([e.key for e in batch])) == 1
    frontier.heartbeat(), frontier.status()
    assert trips(frontier.status) == 1 and trips(frontier.heartbeat) == 1


def test_an_entry_written_into_redis_by_someone_else_is_quarantined(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    frontier = make(redis_server, "a")
    client, keys = frontier.client, frontier.keys
    crafted = pickle.dumps(_Touch(marker))
    for key in (b"\x00" * 16, b"short"):  # a well-formed key, and one no node writes
        client.zadd(keys.key("q", "evil"), {key: 0})
        client.hset(keys.key("payloads"), key, crafted)
        client.zadd(keys.key("ready"), {key + b"evil": 0})
    client.hset(keys.key("host", "evil"), "placed", b"\x00" * 16 + b"evil")
    client.set(keys.key("seen", "buckets"), b"not a number")
    entries = frontier.lease(5).entries
    assert [e.key for e in entries] == [b"\x00" * 16]
    assert frontier.read(entries[0]) is None and not marker.exists()
    assert frontier.stats["focus/cluster/malformed_key"] == 1  # b"short" + "evil" in ready
    # b"short" reached the head of q:evil: set aside when the host was placed again
    assert [r.get("reason") for r in frontier.quarantined()][::-1] == [
        "not an entry key",
        "UnsafePayload: a frontier entry names pathlib.Path.touch: refused",
    ]
    assert frontier.lease(5).entries == []
    assert frontier.push([item("u1")]) == [True]  # the bad bucket count is replaced
    assert frontier.status().leased == 0


def test_flush_deletes_the_crawls_keys_only(redis_server: RedisServer) -> None:
    frontier = make(redis_server, "a")
    frontier.push([item("u1"), item("u2", "h2")])
    frontier.lease(1)
    frontier.client.set(b"focus:{other}:q:h", b"another crawl's")
    assert frontier.flush() >= 8
    assert frontier.client.keys(b"*") == [b"focus:{other}:q:h"]
    assert frontier.push([item("u1")]) == [True]  # a new crawl under the same name


def _ready_at(frontier: RedisFrontier, host: str, record: dict[bytes, bytes]) -> float:
    """When *host* may be leased again, by frontier/politeness.py's rule."""
    dispatched = [
        t
        for _, t in frontier.client.zrange(
            frontier.keys.key("inflight", host), 0, -1, withscores=True
        )
    ]
    if len(dispatched) >= int(record[b"concurrency"]):
        return min(dispatched) + frontier.politeness.in_flight_timeout
    last = float(record.get(b"last", "-inf")) + float(record[b"delay"])
    return max(last, float(record.get(b"backoff_until", "-inf")))


def _invariants(frontier: RedisFrontier) -> None:
    """What every script must leave true, read straight from Redis."""
    client, keys = frontier.client, frontier.keys
    ready = client.zrange(keys.key("ready"), 0, -1)
    waiting = set(client.zrange(keys.key("waiting"), 0, -1))
    leases = client.hgetall(keys.key("leases"))
    seconds, micros = client.time()
    now = seconds + micros / 1e6
    queued = held = 0
    prefix = keys.key("q", "").encode()
    for qkey in client.scan_iter(match=keys.key("q", "*")):
        host = qkey[len(prefix) :]
        members = client.zrange(qkey, 0, -1)
        assert not set(members) & set(leases), "an entry both queued and leased"
        record = client.hgetall(keys.key("host", host.decode()))
        if b"held" in record:
            held += len(members)
            assert host not in waiting and all(not m.endswith(host) for m in ready)
            continue
        queued += len(members)
        placed = [m for m in ready if m[16:] == host]
        if members:  # in exactly one of ready (with its best entry) and waiting
            assert (len(placed), host in waiting) in ((1, False), (0, True)), host
            assert not placed or placed[0][:16] == members[0]
            at = _ready_at(frontier, host.decode(), record)
            if placed:
                assert at <= now, host
            else:
                assert client.zscore(keys.key("waiting"), host) == pytest.approx(at, abs=1e-5)
    counts = client.hgetall(keys.key("counts"))
    assert (int(counts.get(b"queued", 0)), int(counts.get(b"held", 0))) == (queued, held)
    payloads = set(client.hkeys(keys.key("payloads")))
    assert set(leases) <= payloads


def test_random_operations_of_two_nodes_keep_the_frontier_consistent(
    redis_server: RedisServer,
) -> None:
    rng = random.Random(14)
    settings = {"DOWNLOAD_DELAY": 0.002, "CONCURRENT_REQUESTS_PER_DOMAIN": 2}
    nodes = [make(redis_server, "a", **settings), make(redis_server, "b", **settings)]
    taken: dict[str, list[Leased]] = {"a": [], "b": []}
    hosts = ["h1", "h2", "h3", "h4"]
    for _ in range(400):
        node = rng.choice(nodes)
        mine = taken[node.node]
        action = rng.random()
        if action < 0.35:
            node.push(
                [item(f"u{rng.randrange(300)}", rng.choice(hosts), rng.random()) for _ in range(3)]
            )
        elif action < 0.6:
            mine.extend(node.lease(rng.randrange(1, 4)).entries)
        elif action < 0.75 and mine:
            entry = mine.pop(rng.randrange(len(mine)))
            node.release([Release(entry.host, entry.key, rng.random() < 0.5)])
            node.ack([entry.key])
        elif action < 0.8 and mine:
            node.requeue(mine.pop(), rng.random())
        elif action < 0.85:
            node.backoff(rng.choice(hosts), 0.01)
        elif action < 0.88:
            node.set_policy(rng.choice(hosts), rng.choice([0.0, 0.003]), rng.choice([1, 2, 3]))
        elif action < 0.9:
            node.hold(rng.choice(hosts), "test")
        elif action < 0.95:
            host = rng.choice(hosts)
            queued = node.iter_host(host, 3)
            node.rekey(host, [(key, 0, rng.random()) for key, _ in queued])
        else:
            time.sleep(0.003)
        _invariants(node)
    assert sum(node.stats["focus/cluster/leased"] for node in nodes) > 20


def test_the_cluster_key_orders_as_the_local_key_without_its_host_id() -> None:
    for priority, score in ((0, 0.5), (3, 0.0), (-2, 1.0), (0, 0.123456)):
        assert encode_key(7, priority, score, 99)[4:12] == encode_rank(priority, score)
        assert decode_rank(encode_rank(priority, score)) == (priority, pytest.approx(score))
    ranks = [encode_rank(1, 0.1), encode_rank(0, 0.9), encode_rank(0, 0.5)]
    assert sorted(ranks) == ranks


def test_the_first_node_fixes_the_seen_sets_buckets_for_all(redis_server: RedisServer) -> None:
    small = make(redis_server, "a", FOCUS_CLUSTER_SEEN_EXPECTED=1000)  # 4 buckets
    large = make(redis_server, "b")  # a million expected: 3907 buckets
    assert small.push([item(f"u{i}") for i in range(100)]) == [True] * 100
    assert large.push([item(f"u{i}") for i in range(120)]) == [False] * 100 + [True] * 20
    client = large.client
    assert client.get(large.keys.key("seen", "buckets")) == b"4"
    assert _seen_count(client, large.keys) == 120
    assert len(list(client.scan_iter(match=large.keys.key("seen", "*")))) == 4 + 1


def test_unlease_gives_unused_leases_back_in_their_places(redis_server: RedisServer) -> None:
    a = make(redis_server, "a", DOWNLOAD_DELAY=30.0)
    b = make(redis_server, "b", DOWNLOAD_DELAY=30.0)
    a.push([item("u1", score=0.9), item("u2", score=0.5), item("x1", "h2")])
    taken = a.lease(10).entries
    assert urls(taken) == ["u1", "x1"] and b.lease(10).entries == []
    assert b.unlease([e.key for e in taken]) == 0  # not b's leases
    assert a.unlease([e.key for e in taken]) == 2
    assert urls(b.lease(10).entries) == ["u1", "x1"]  # their places, and their turns
    assert a.ack([e.key for e in taken]) == 2
