"""A host's next turn leased ahead, and parked nodes (cluster/scripts.py LEASE, parking.py).

On a real redis-server, two ``RedisFrontier`` instances stand for two nodes: a lease
with ``reserve`` takes the next turn of a host waiting only for its delay, marked
with when that turn comes (never earlier than the delay after the request ended, as
the release said it); a reserved turn is the host's one turn, so no other node gets
it; a release nobody's lease follows leaves a token that ends a parked node's wait.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from harness.redis_server import RedisServer
from scrapy_focus.cluster.entries import Leased, Release
from scrapy_focus.cluster.node import NodeHostQueues, NodeStore
from scrapy_focus.cluster.parking import Parking
from tests.test_cluster_frontier import dispatch_time, item, make, urls


def test_the_release_round_leases_the_hosts_next_turn_a_delay_after_the_request_ended(
    redis_server: RedisServer,
) -> None:
    a, b = make(redis_server, "a", DOWNLOAD_DELAY=2.0), make(redis_server, "b", DOWNLOAD_DELAY=2.0)
    a.set_policy("h", 2.0, 1)  # as a node says it: one at a time to a host with a delay
    a.push([item("u1"), item("u2"), item("u3")])
    first = a.lease(4, reserve=0.0)
    assert urls(first.entries) == ["u1"] and first.entries[0].wait == 0.0
    assert b.lease(4, reserve=0.0).entries == []  # u1 in flight: no turn to reserve
    a.release([Release("h", b"x" * 16, True)])  # RELEASE and ACK loaded: a NOSCRIPT
    a.ack([b"x" * 16])  # in a round runs its script again after the round
    time.sleep(0.6)
    ended = time.monotonic() - 0.5  # the request ended half a second ago
    release, ack, lease = a.run(  # as a node's round says them: the page is done too
        [
            a.release_call([Release("h", first.entries[0].key, True, ended)], alone=False),
            a.ack_call([first.entries[0].key], alone=False),
            a.lease_call(4, reserve=0.0),
        ]
    )
    assert release == 0 and ack == 0
    (reserved,) = lease.entries
    assert reserved.payload == b"u2"
    assert 1.3 < reserved.wait <= 1.55  # its turn: 2 s after the end, not after the release
    now = float(b"%d.%06d" % tuple(a.client.time()))
    assert abs(dispatch_time(a, reserved.key) - (now + reserved.wait)) < 0.1
    # The host's one turn is out: another node gets nothing, reserved or not.
    assert b.lease(4, reserve=0.0).entries == [] and b.lease(4).entries == []
    assert not a.lease(4).entries  # a plain lease takes only what is ready now


def test_a_turn_closer_than_the_minimum_is_not_reserved(redis_server: RedisServer) -> None:
    a = make(redis_server, "a", DOWNLOAD_DELAY=0.5)
    a.set_policy("h", 0.5, 1)
    a.push([item("u1"), item("u2")])
    (first,) = a.lease(4).entries
    a.release([Release("h", first.key, True, time.monotonic())])
    a.ack([first.key])
    assert a.lease(4, reserve=1.0).entries == []  # its turn is ready within a second
    assert urls(a.lease(4, reserve=0.0).entries) == ["u2"]


def test_a_node_holding_its_share_of_the_hosts_leaves_the_next_turn_to_another(
    redis_server: RedisServer,
) -> None:
    a, b = make(redis_server, "a", DOWNLOAD_DELAY=1.0), make(redis_server, "b", DOWNLOAD_DELAY=1.0)
    for host in ("h", "g"):
        a.set_policy(host, 1.0, 1)
    a.push([item("u1"), item("u2"), item("v1", "g"), item("v2", "g")])
    b.heartbeat()  # two live nodes, two hosts with work: one host each
    taken = a.lease(4).entries
    assert sorted(e.host for e in taken) == ["g", "h"]
    a.client.delete(a.keys.key("wake"))
    done = taken[0]
    a.run(
        [
            a.release_call([Release(done.host, done.key, True, time.monotonic())], False),
            a.ack_call([done.key], alone=False),
        ]
    )
    assert a.lease(4, reserve=0.0).entries == []  # a still holds the other host: its share
    assert a.client.llen(a.keys.key("wake")) == 1  # so a parked node hears of the turn
    assert [e.host for e in b.lease(4, reserve=0.0).entries] == [done.host]


def test_a_turn_behind_a_backoff_or_a_hold_is_not_reserved(redis_server: RedisServer) -> None:
    a = make(redis_server, "a", DOWNLOAD_DELAY=1.0)
    a.set_policy("h", 1.0, 1)
    a.set_policy("g", 1.0, 1)
    a.push([item("u1"), item("u2"), item("v1", "g"), item("v2", "g")])
    taken = {e.host: e for e in a.lease(4).entries}
    a.backoff("h", 30.0)
    a.hold("g", "a test")
    a.release([Release(e.host, e.key, True, time.monotonic()) for e in taken.values()])
    assert a.lease(4, reserve=0.0).entries == []


def test_a_release_no_lease_follows_wakes_a_parked_node(redis_server: RedisServer) -> None:
    a, b = make(redis_server, "a", DOWNLOAD_DELAY=1.0), make(redis_server, "b", DOWNLOAD_DELAY=1.0)
    a.set_policy("h", 1.0, 1)
    a.push([item("u1"), item("u2")])
    taken = a.lease(1).entries
    assert a.client.lpop(a.keys.key("wake")) == b"1"  # the push's: a host became ready
    parking = Parking(b)
    assert b.run([b.lease_call(4, 0.0, park=True), parking.call(0.2)])[1] is False  # timed out
    woke: list[Any] = []
    waiting = threading.Thread(
        target=lambda: woke.append(b.run([b.lease_call(4, 0.0, park=True), parking.call(10)]))
    )
    started = time.monotonic()
    waiting.start()
    time.sleep(0.3)
    a.run([a.release_call([Release("h", taken[0].key, True, time.monotonic())], alone=True)])
    waiting.join(5)
    assert woke and woke[0][1] is True and time.monotonic() - started < 3
    # The woken node's next lease reserves the turn the release freed.
    assert urls(b.lease(4, reserve=0.0).entries) == ["u2"]
    # A release whose own node leases in the same round leaves no token.
    assert a.client.llen(a.keys.key("wake")) == 0


def test_a_lease_that_brought_entries_ends_its_rounds_wait_at_once(
    redis_server: RedisServer,
) -> None:
    a = make(redis_server, "a")
    a.push([item("u1")])
    started = time.monotonic()
    lease, woken = a.run([a.lease_call(4, 0.0, park=True), Parking(a).call(10)])
    assert urls(lease.entries) == ["u1"] and woken is True
    assert time.monotonic() - started < 2


def test_the_nodes_engine_ends_its_parked_wait(redis_server: RedisServer) -> None:
    a = make(redis_server, "a")
    parking = Parking(a)
    results: list[Any] = []

    def parked() -> None:
        with parking.parked(True):
            results.append(a.run([parking.call(10)]))

    thread = threading.Thread(target=parked)
    started = time.monotonic()
    thread.start()
    time.sleep(0.3)
    parking.interrupt()
    thread.join(5)
    assert results == [[True]] and time.monotonic() - started < 3
    parking.interrupt()  # not parked: nothing to end, no token left behind
    time.sleep(0.2)
    assert a.client.llen(a.keys.key("wake", a.node)) == 0


class _Link:
    """What NodeHostQueues and NodeStore read of the link: its inbox and clock."""

    def __init__(self) -> None:
        import collections

        self.inbox: collections.deque[Leased] = collections.deque()
        self.now = 100.0
        self.wanted: list[int] = []

    def clock(self) -> float:
        return self.now

    def want(self, room: int) -> None:
        self.wanted.append(room)

    def took(self) -> None:
        return None


def test_a_reserved_entry_is_not_handed_out_before_its_turn() -> None:
    link = _Link()
    hosts = NodeHostQueues(link, lambda: 4, lambda: None)  # type: ignore[arg-type]
    store = NodeStore(link, lambda name: None, "test")  # type: ignore[arg-type]
    link.inbox.append(Leased("h", b"k" * 16, 0, 0.5, b"u1", 1.0, due=101.0))
    assert hosts.pop_ready() is None and store.pop("h") is None
    assert link.wanted == []  # an entry waits in the buffer: no lease asked for
    link.inbox.append(Leased("g", b"j" * 16, 0, 0.5, b"v1", 0.0, due=100.0))
    assert hosts.pop_ready() == "g"
    link.now = 101.0
    assert hosts.pop_ready() == "h"
    entry = store.pop("h")
    assert entry is not None and entry.payload == b"u1"
