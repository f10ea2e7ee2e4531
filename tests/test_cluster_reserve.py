"""A host's next turn leased ahead, and parked nodes (cluster/scripts.py LEASE, parking.py).

On a real redis-server, two ``RedisFrontier`` instances stand for two nodes: a lease
with ``reserve`` takes the next turn of a host waiting only for its delay, marked
with when that turn comes (never earlier than the delay after the request ended, as
the release said it); a reserved turn is the host's one turn, so no other node gets
it; a release nobody's lease follows leaves a token that ends a parked node's wait.
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

from scrapy.settings import Settings

from harness.redis_server import RedisServer
from scrapy_focus.cluster.entries import Leased, Release
from scrapy_focus.cluster.node import NodeHostQueues, NodeStore
from scrapy_focus.cluster.pacing import Pacing
from scrapy_focus.cluster.parking import Parking
from scrapy_focus.cluster.politeness import ClusterPoliteness
from scrapy_focus.config import FocusConfig
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


def two_nodes_on_two_hosts(server: RedisServer) -> tuple[Any, Any]:
    """Nodes a and b of one crawl; hosts h and g with a 1 s delay, two pages each."""
    a, b = make(server, "a", DOWNLOAD_DELAY=1.0), make(server, "b", DOWNLOAD_DELAY=1.0)
    for host in ("h", "g"):
        a.set_policy(host, 1.0, 1)
    a.push([item("u1"), item("u2"), item("v1", "g"), item("v2", "g")])
    return a, b


def test_a_node_holding_its_share_of_the_hosts_leaves_the_next_turn_to_another(
    redis_server: RedisServer,
) -> None:
    a, b = two_nodes_on_two_hosts(redis_server)
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
    moves: Any = None  # no re-scoring here
    hosts = NodeHostQueues(link, moves, lambda: 4, lambda: None)  # type: ignore[arg-type]
    store = NodeStore(link, moves, lambda name: None, "test")  # type: ignore[arg-type]
    link.inbox.append(Leased("h", b"k" * 16, 0, 0.5, b"u1", 1.0, due=101.0))
    assert hosts.pop_ready() is None and store.pop("h") is None
    assert link.wanted == []  # an entry waits in the buffer: no lease asked for
    link.inbox.append(Leased("g", b"j" * 16, 0, 0.5, b"v1", 0.0, due=100.0))
    assert hosts.pop_ready() == "g"
    link.now = 101.0
    assert hosts.pop_ready() == "h"
    entry = store.pop("h")
    assert entry is not None and entry.payload == b"u1"


def test_a_reserved_host_comes_with_its_turns_up_to_the_horizon_and_stays_the_nodes(
    redis_server: RedisServer,
) -> None:
    a, b = make(redis_server, "a", DOWNLOAD_DELAY=0.5), make(redis_server, "b", DOWNLOAD_DELAY=0.5)
    a.set_policy("h", 0.5, 1)
    a.push([item(f"u{i}", score=1 - i / 10) for i in range(1, 8)])
    (first,) = a.lease(4).entries
    ended = time.monotonic()
    a.release([Release("h", first.key, True, ended)])
    a.ack([first.key])
    kept = a.lease(8, reserve=0.0, horizon=1.6).entries
    # The next turn a delay after the end, then one a delay after each: up to 1.6 s ahead.
    assert urls(kept) == ["u2", "u3", "u4"]
    waits = [entry.wait for entry in kept]
    assert 0.3 < waits[0] <= 0.5 and all(
        abs(later - earlier - 0.5) < 1e-3 for earlier, later in itertools.pairwise(waits)
    )
    # The host is this node's while they are out: no other node gets it.
    assert b.lease(4, reserve=0.0, horizon=1.6).entries == [] and b.lease(4).entries == []
    time.sleep(1.6)  # past the last one's turn: the node sent them all
    a.release([Release("h", e.key, True, time.monotonic() - 0.1) for e in kept[:2]])
    assert b.lease(4, reserve=0.0).entries == []  # one still out
    a.release([Release("h", kept[2].key, True, time.monotonic())])
    a.ack([e.key for e in kept])
    (nxt,) = b.lease(4, reserve=0.0).entries  # then whoever asks: a delay after the last end
    assert nxt.payload == b"u5" and 0.4 < nxt.wait <= 0.5


def test_the_share_counts_hosts_so_a_node_keeps_its_host_while_its_page_is_unacknowledged(
    redis_server: RedisServer,
) -> None:
    a, b = two_nodes_on_two_hosts(redis_server)
    (taken,) = a.lease(1).entries  # a takes one host, b the other
    (other,) = b.lease(1).entries
    assert {taken.host, other.host} == {"h", "g"}
    a.release([Release(taken.host, taken.key, True, time.monotonic())])
    # Its page is not acknowledged yet: still one host of a's, its own, within a share of 1.
    (kept,) = a.lease(4, reserve=0.0).entries
    assert kept.host == taken.host


def test_a_node_times_the_turns_it_keeps_one_at_a_time_a_delay_after_each_end() -> None:
    said: list[tuple[str, Any]] = []
    link: Any = _Link()
    link.send = lambda kind, message: said.append((kind, message))
    link.pacing = Pacing(heartbeat=2.0)
    config = FocusConfig.from_settings(Settings({"DOWNLOAD_DELAY": 0.5})).politeness
    politeness = ClusterPoliteness(config, link, lambda: b"k" * 16)
    politeness.clock = link.clock
    hosts = NodeHostQueues(link, None, lambda: 4, lambda: None, politeness.ready_at)  # type: ignore[arg-type]
    store = NodeStore(link, None, lambda name: None, "test")  # type: ignore[arg-type]
    for i, due in enumerate((100.0, 100.5, 101.0)):  # Redis's plan: a delay apart
        link.inbox.append(Leased("h", b"%d" % i * 16, 0, 0.5, b"u%d" % i, due - 100, due=due))
    assert hosts.pop_ready() == "h" and store.pop("h").payload == b"u0"  # type: ignore[union-attr]
    politeness.dispatched("h", 1)
    link.now = 100.7  # the next turn by Redis's plan, but the first request is still out
    assert hosts.pop_ready() is None
    politeness.finished("h", 1)
    kind, release = said[-1]
    # more turns kept: no round for it; the last one's round takes it (the patience)
    assert kind == "release" and release.hold == link.pacing.patience == 4.0
    assert hosts.pop_ready() is None  # a delay after the end, not after the plan
    link.now = 101.2
    assert hosts.pop_ready() == "h" and store.pop("h").payload == b"u1"  # type: ignore[union-attr]
    politeness.dispatched("h", 2)
    politeness.backoff("h", 5.0)  # a 429: the kept turns wait for it too
    politeness.finished("h", 2)
    link.now = 102.0
    assert hosts.pop_ready() is None and politeness.ready_at("h") == 106.2
    link.now = 106.2
    assert hosts.pop_ready() == "h" and store.pop("h").payload == b"u2"  # type: ignore[union-attr]
    politeness.dispatched("h", 3)
    politeness.finished("h", 3)
    assert said[-1][1].hold == 0.25  # the last kept turn: its round leases the next ones
    politeness.dispatched("h", 4)  # one that never ends (no signal came): bounded, as in Redis
    assert politeness.ready_at("h") == link.now + config.in_flight_timeout


def test_a_hold_gives_back_the_turns_a_node_kept_and_they_stay_with_the_held_host(
    redis_server: RedisServer,
) -> None:
    said: list[tuple[str, Any]] = []
    link: Any = _Link()
    link.send = lambda kind, message: said.append((kind, message))
    settings = Settings({"DOWNLOAD_DELAY": 0.5, "FOCUS_MAX_HOST_DELAY": 60})
    config = FocusConfig.from_settings(settings).politeness
    politeness = ClusterPoliteness(config, link, lambda: b"k" * 16)
    politeness.clock = link.clock
    a, b = make(redis_server, "a", DOWNLOAD_DELAY=0.5), make(redis_server, "b", DOWNLOAD_DELAY=0.5)
    a.set_policy("h", 0.5, 1)
    a.push([item(f"u{i}") for i in range(5)])
    (first,) = a.lease(4).entries
    a.release([Release("h", first.key, True, time.monotonic())])
    a.ack([first.key])
    link.inbox.extend(a.lease(8, reserve=0.0, horizon=1.6).entries)  # three turns kept
    assert len(link.inbox) == 3
    # One of them answers 429 with a Retry-After far above FOCUS_MAX_HOST_DELAY.
    assert politeness.retry_after("h", 3600) == float("inf")
    assert politeness.ready_at("h") == float("inf") and not link.inbox
    kinds = [kind for kind, _ in said]
    assert kinds == ["hold", "unlease", "unlease", "unlease"]  # the hold first
    a.hold("h", said[0][1][1])
    a.unlease([key for kind, key in said if kind == "unlease"])
    assert b.lease(8, reserve=0.0, horizon=1.6).entries == []  # held, for every node
    assert a.status().held == 4 and a.status().leased == 0


def test_the_crawls_last_acknowledgement_wakes_every_node(redis_server: RedisServer) -> None:
    """Resting nodes (link.py) poll the cluster's status rarely; the acknowledgement
    that leaves nothing queued and nothing leased leaves one token per node, so each
    parked node looks at once and finds the crawl done."""
    a, b, c = (make(redis_server, name) for name in "abc")
    a.push([item("u1"), item("u2")])
    for node in (b, c):  # two nodes known to the cluster, holding nothing
        node.heartbeat()
    wake = a.keys.key("wake")
    first, second = a.lease(4).entries
    a.client.delete(wake)
    a.ack([first.key])  # one lease still out: nobody is done
    assert a.client.llen(wake) == 0
    a.ack([second.key])
    assert a.client.llen(wake) == 3  # a, b and c
    parking = Parking(b)
    assert b.run([b.lease_call(4, 0.0, park=True), parking.call(5)])[1] is True
    assert b.status().leased == 0 and b.status().queued == 0


def test_a_last_lease_quarantined_wakes_every_node_too(redis_server: RedisServer) -> None:
    """The crawl's last lease may end in the quarantine (its entry is not data): that
    ends it as an acknowledgement does, so resting nodes hear of it as well."""
    a, b = make(redis_server, "a"), make(redis_server, "b")
    a.push([item("u1")])
    b.heartbeat()
    (entry,) = a.lease(4).entries
    wake = a.keys.key("wake")
    a.client.delete(wake)
    assert a.read(entry) is None  # b"u1" is not a request as data: quarantined
    assert a.client.llen(wake) == 2  # a and b
    assert (a.status().leased, a.status().queued) == (0, 0)
