"""The seams' exchanges that ride a node's rounds (cluster/riders.py), on a real redis-server.

A rider makes a round of its own only for what cannot wait (a domain never read, a
failure other nodes are to count); the rest rides the rounds each page's release and
the heartbeat make anyway.  A rider whose script Redis lost (a restarted server:
redis-py's NoScriptError, whose message does not say NOSCRIPT) loads it again and
says the same thing in its next round.  A push that a lease of its node follows in
the round leaves no wake token (that lease does, when it leaves ready hosts).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from redis.exceptions import NoScriptError
from scrapy.settings import Settings

from harness.redis_server import RedisServer
from scrapy_focus.cluster.breaker import RedisBreakerStates
from scrapy_focus.cluster.counters import RedisCounters
from scrapy_focus.cluster.history import RedisHistoryStore
from scrapy_focus.cluster.politeness import ClusterPoliteness
from scrapy_focus.cluster.riders import Riders, is_noscript
from scrapy_focus.config import FocusConfig
from scrapy_focus.engines.breaker import BreakerState
from scrapy_focus.engines.history import EngineRecord
from tests.test_cluster_frontier import item, make
from tests.test_cluster_seams import KEYS, Clock, client_of


def riding(rider: Any) -> Riders:
    """*rider* on a link of its own (only its riders: the rounds are this test's)."""
    link = SimpleNamespace(riders=Riders())
    rider.ride(link)
    return link.riders


def round_of(riders: Riders, client: Any, now: float) -> list[Any]:
    """One round of the riders' commands, as the link sends them (one pipeline)."""
    calls, spans = riders.calls(now)
    pipe = client.pipeline(transaction=False)
    for call in calls:
        pipe.execute_command(*call.args)
    replies = pipe.execute(raise_on_error=False) if calls else []
    riders.answered(spans, replies)
    return replies


def test_noscript_is_recognised_as_redis_py_raises_it() -> None:
    assert is_noscript(NoScriptError("No matching script. Please use EVAL."))
    assert is_noscript(Exception("NOSCRIPT No matching script"))
    assert not is_noscript(Exception("WRONGTYPE")) and not is_noscript(b"NOSCRIPT")


def test_a_rider_whose_script_redis_lost_loads_it_and_writes_in_its_next_round(
    redis_server: RedisServer,
) -> None:
    client, clock = client_of(redis_server), Clock()
    store = RedisHistoryStore(client, KEYS, ("http",), flush_seconds=0.0, clock=clock)
    riders = riding(store)
    client.script_flush()  # as a restarted Redis: the script loaded at ride() is gone
    store.put("a.test", "http", EngineRecord(successes=3))
    replies = round_of(riders, client, clock())
    assert any(isinstance(reply, NoScriptError) for reply in replies)
    assert client.hget(KEYS.key("history"), store.field("a.test", "http")) is None
    round_of(riders, client, clock())  # loaded again: the same write, said again
    raw = client.hget(KEYS.key("history"), store.field("a.test", "http"))
    assert raw is not None and b'"successes": 3' in raw.replace(b".0", b"")


def test_what_can_wait_rides_and_only_what_cannot_makes_a_round(
    redis_server: RedisServer,
) -> None:
    client, clock = client_of(redis_server), Clock()
    counters = RedisCounters(client, KEYS, clock=clock)
    history = RedisHistoryStore(client, KEYS, ("http",), clock=clock)
    breakers = RedisBreakerStates(client, KEYS, local_clock=clock)
    riders = [riding(rider) for rider in (counters, history, breakers)]
    counters.add_fetched()
    clock.now += 60
    assert not counters.due(clock())  # a count waits for the next round...
    assert round_of(riders[0], client, clock())  # ...and goes with it
    assert client.hget(KEYS.key("counters"), "fetched") == b"1"
    history.get("new.test", "http")
    assert history.due(clock())  # a domain never read: the ladder waits for it
    round_of(riders[1], client, clock())
    history.put("new.test", "http", EngineRecord(successes=1))
    clock.now += 60
    history.get("new.test", "http")  # stale now, and a record waits
    assert not history.due(clock())
    breakers.get("b.test")
    assert breakers.due(clock())
    round_of(riders[2], client, clock())
    breakers.drop("b.test")  # a success: rides
    clock.now += 60
    breakers.get("b.test")  # stale: read when a round goes anyway
    assert not breakers.due(clock())
    breakers.put("b.test", BreakerState(failures=1))  # a failure: the others count it now
    assert breakers.due(clock())


def test_a_push_a_lease_of_its_node_follows_leaves_no_wake_token(
    redis_server: RedisServer,
) -> None:
    a = make(redis_server, "a")
    wake = a.keys.key("wake")
    a.run([a.push_call([item("u1")], alone=False), a.lease_call(1)])
    assert a.client.llen(wake) == 0  # the round's lease took the host's entry
    a.run([a.push_call([item("u2"), item("u3", "g")], alone=False), a.lease_call(1)])
    assert a.client.llen(wake) == 1  # that lease left a ready host: one token
    a.client.delete(wake)
    a.push([item("v1", "k")])  # alone: no lease of its node follows
    assert a.client.llen(wake) == 1


def test_a_nodes_own_concurrency_limits_do_not_cap_the_clusters_host() -> None:
    said: list[tuple[str, Any]] = []
    link = SimpleNamespace(send=lambda kind, message: said.append((kind, message)))
    settings = Settings({"CONCURRENT_REQUESTS_PER_DOMAIN": 6})
    config = FocusConfig.from_settings(settings).politeness
    politeness = ClusterPoliteness(config, link, lambda: b"k" * 16)  # type: ignore[arg-type]
    politeness.add_limit(lambda host: 1)  # a fresh slow start on a node that just joined
    politeness.new_host("h")
    assert said == [("set_policy", ("h", 0.0, 6))]
