"""The cluster's shared state besides the frontier: counters, engine history,
breaker states, the link model's sums, and ``install``.

Each test runs against a real redis-server (the ``redis_server`` fixture, AOF on);
two instances of a class on two clients are two nodes.  Time is moved by a
clock given to the instance, never by sleeping, except where Redis's own clock is
what is tested.
"""

from __future__ import annotations

import json
import logging
import random

import pytest
from scrapy import Spider, signals
from scrapy.exceptions import NotConfigured
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from harness.redis_server import RedisServer
from scrapy_focus.cluster.breaker import RedisBreakerStates
from scrapy_focus.cluster.connection import redis_client
from scrapy_focus.cluster.counters import RedisCounters
from scrapy_focus.cluster.history import RedisHistoryStore
from scrapy_focus.cluster.keys import ClusterKeys
from scrapy_focus.cluster.model import RedisLinkModel
from scrapy_focus.cluster.setup import install, public_url
from scrapy_focus.config import FocusConfig
from scrapy_focus.engines.breaker import CircuitBreaker
from scrapy_focus.engines.history import DomainHistory, EngineRecord
from scrapy_focus.frontier.link_model import LinkModel
from scrapy_focus.frontier.stopping import StopConditions
from scrapy_focus.runtime import FocusRuntime

KEYS = ClusterKeys.for_crawl("focus:{%(crawl)s}", "t")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def client_of(server: RedisServer):
    config = FocusConfig.from_settings(Settings({"FOCUS_CLUSTER_REDIS_URL": server.url})).cluster
    return redis_client(config)


def quarantined(client) -> list[dict]:
    return [json.loads(raw) for raw in client.lrange(KEYS.key("quarantine", "seams"), 0, -1)]


# -- counters


def test_counters_are_the_clusters_totals_and_stop_every_node(redis_server) -> None:
    clock = Clock()
    one = RedisCounters(client_of(redis_server), KEYS, clock=clock)
    two = RedisCounters(client_of(redis_server), KEYS, clock=clock)
    assert [one.add_fetched(), two.add_fetched()] == [1, 2]  # a first count goes at once
    assert one.add_fetched() == 2  # counted here, sent with the next exchange
    assert two.fetched == 2  # cached: read within the TTL, no round trip
    clock.now += 1
    assert one.add_fetched() == 4  # the TTL passed: both of its counts went
    two.add_relevant()
    assert (two.fetched, one.relevant) == (4, 0)  # one read its totals just now
    clock.now += 1
    assert (two.fetched, one.relevant) == (4, 1)
    for _ in range(one.batch):  # a full batch goes without waiting for the TTL
        one.add_fetched()
    clock.now += 0.1
    two._read_at = -float("inf")  # two reads again now
    assert two.fetched == 4 + one.batch
    config = FocusConfig.from_settings(Settings({"FOCUS_MAX_PAGES": 5 + one.batch})).frontier
    stop_one, stop_two = StopConditions(config, one), StopConditions(config, two)
    assert stop_two.page_counted() is None
    one.add_fetched()
    clock.now += 1
    assert stop_one.page_counted() == "focus_max_pages"  # its own view, sent as it reads
    assert stop_two.page_counted() == "focus_max_pages"  # the other node's page
    assert not stop_one.budget_left(0)
    assert one.to_bytes() == f"{5 + one.batch},1".encode()


def test_the_deadline_counts_from_the_first_nodes_start(redis_server) -> None:
    client = client_of(redis_server)
    first_clock, late_clock = Clock(), Clock()
    first = RedisCounters(client, KEYS, clock=first_clock)
    assert first.elapsed() < 1
    # Redis's own clock moves on: the late node started 1.2 s after the first one.
    import time

    time.sleep(1.2)
    late = RedisCounters(client_of(redis_server), KEYS, clock=late_clock)
    assert 1.1 < late.elapsed() < 5
    config = FocusConfig.from_settings(Settings({"FOCUS_DEADLINE": 2})).frontier
    stop = StopConditions(config, late, clock=late_clock)
    assert stop.page_counted() is None
    late_clock.now += 1.0
    assert stop.page_counted() == "focus_deadline"  # 2.2 s after the first start


def test_counters_survive_a_redis_restart_and_count_while_it_is_away(redis_server) -> None:
    clock = Clock()
    counters = RedisCounters(client_of(redis_server), KEYS, clock=clock)
    counters.add_fetched()
    counters.add_fetched()
    redis_server.stop()
    clock.now += 1
    assert counters.add_fetched() == 3  # Redis is away: counted here meanwhile
    redis_server.start()
    clock.now += 1
    assert counters.add_fetched() == 4  # every count that waited went
    fresh = RedisCounters(client_of(redis_server), KEYS, clock=clock)
    assert fresh.fetched == 4
    redis_server.restart(kill=True)  # AOF: what was written is kept
    assert RedisCounters(client_of(redis_server), KEYS).fetched == 4


def test_a_counter_that_is_not_a_number_is_quarantined(redis_server) -> None:
    client = client_of(redis_server)
    client.hset(KEYS.key("counters"), "fetched", b"__import__('os')")
    counters = RedisCounters(client, KEYS)
    counters.stats = get_crawler(Spider, {}).stats
    assert counters.fetched == 0
    assert quarantined(client)[0]["value"] == "__import__('os')"
    assert counters.stats.get_value("focus/cluster/malformed") == 1


# -- engine history


def test_history_learnt_on_one_node_starts_the_ladder_on_another(redis_server) -> None:
    clock = Clock()
    engines = ("http", "chromium")
    store_one = RedisHistoryStore(client_of(redis_server), KEYS, engines, clock=clock)
    store_two = RedisHistoryStore(client_of(redis_server), KEYS, engines, clock=clock)
    one = DomainHistory(store_one, engines, probe_rate=0.0)
    two = DomainHistory(store_two, engines, probe_rate=0.0)
    assert two.start_engine("spa.test") == ("http", False)
    for _ in range(4):
        one.observe("spa.test", "http", "blocked", 0.1)
        one.observe("spa.test", "chromium", "success", 1.0)
    assert one.start_engine("spa.test") == ("chromium", False)  # its own writes, at once
    store_one.flush()
    assert two.start_engine("spa.test") == ("http", False)  # node two's cache is fresh
    clock.now += store_two.ttl
    assert two.start_engine("spa.test") == ("chromium", False)
    assert store_two.get("spa.test", "http").blocks == pytest.approx(4, rel=0.01)


def test_two_nodes_learning_one_domain_at_once_keep_each_others_evidence(redis_server) -> None:
    clock = Clock()
    stores = [RedisHistoryStore(client_of(redis_server), KEYS, clock=clock) for _ in range(2)]
    nodes = [DomainHistory(store, ("http",), probe_rate=0.0) for store in stores]
    for history in nodes:
        history.start_engine("busy.test")  # both read the domain before either writes
    for _ in range(3):
        nodes[0].observe("busy.test", "http", "success", 0.1)
    for _ in range(2):
        nodes[1].observe("busy.test", "http", "blocked", 0.1)
    nodes[1].observe("busy.test", "http", "success", 0.1)
    stores[0].flush()
    stores[1].flush()  # built on no record, while node one's is there: added to it
    clock.now += stores[0].ttl
    stored = RedisHistoryStore(client_of(redis_server), KEYS).get("busy.test", "http")
    assert (stored.successes, stored.blocks, stored.samples) == pytest.approx((4, 2, 6), rel=0.01)
    assert stores[1].get("busy.test", "http").successes == pytest.approx(4, rel=0.01)
    nodes[0].observe("busy.test", "http", "success", 0.1)  # built on what it read back
    stores[0].flush()
    assert stores[0].get("busy.test", "http").successes == pytest.approx(5, rel=0.01)


def test_history_writes_are_batched_and_kept_across_a_restart(redis_server) -> None:
    clock = Clock()
    client = client_of(redis_server)
    store = RedisHistoryStore(client, KEYS, clock=clock, flush_every=3)
    store.put("a.test", "http", EngineRecord(successes=1))
    store.put("b.test", "http", EngineRecord(successes=2))
    assert client.hlen(KEYS.key("history")) == 0  # buffered
    store.put("c.test", "http", EngineRecord(successes=3))
    assert client.hlen(KEYS.key("history")) == 3  # one script call for three records
    store.put("d.test", "http", EngineRecord(blocks=1))
    redis_server.stop()
    clock.now += 10
    assert store.get("d.test", "http").blocks == 1  # the cache answers; the write waits
    redis_server.start()
    store.flush()
    redis_server.restart(kill=True)
    fresh = RedisHistoryStore(client_of(redis_server), KEYS)
    assert [fresh.get(d, "http") is not None for d in ("a.test", "d.test")] == [True, True]


def test_a_history_record_that_is_not_data_is_quarantined(redis_server) -> None:
    client = client_of(redis_server)
    field = RedisHistoryStore.field("evil.test", "http")
    client.hset(KEYS.key("history"), field, b'{"successes": "1", "__class__": 1}')
    store = RedisHistoryStore(client, KEYS)
    assert store.get("evil.test", "http") is None
    assert "evil.test" in quarantined(client)[0]["what"]


# -- breaker states


def test_a_breaker_opened_on_one_node_holds_the_domain_on_another(redis_server) -> None:
    local = Clock()
    states_one = RedisBreakerStates(client_of(redis_server), KEYS, local_clock=local)
    states_two = RedisBreakerStates(client_of(redis_server), KEYS, local_clock=local)
    one = CircuitBreaker(threshold=2, cooldown=60, clock=states_one.clock, states=states_one)
    two = CircuitBreaker(threshold=2, cooldown=60, clock=states_two.clock, states=states_two)
    assert two.state("down.test") == "closed"
    one.failure("down.test")
    assert one.failure("down.test") == 60
    assert two.state("down.test") == "closed"  # its cache, younger than the TTL
    local.now += states_two.ttl
    assert two.state("down.test") == "open"
    two.success("down.test")  # a success anywhere closes it everywhere
    local.now += states_one.ttl
    assert one.state("down.test") == "closed"


def test_failures_two_nodes_count_at_once_add_up(redis_server) -> None:
    local = Clock()
    states = [RedisBreakerStates(client_of(redis_server), KEYS, local_clock=local) for _ in "ab"]
    one, two = (CircuitBreaker(threshold=4, cooldown=60, clock=s.clock, states=s) for s in states)
    one.state("flaky.test"), two.state("flaky.test")  # both read it closed
    one.failure("flaky.test")
    two.failure("flaky.test")  # built on no state: node one's failure is added
    one.failure("flaky.test")
    stored = RedisBreakerStates(client_of(redis_server), KEYS).get("flaky.test")
    assert stored.failures == 3
    local.now += states[1].ttl
    assert two.failure("flaky.test") == 60  # the fourth of the crawl opens it
    assert one.failure("flaky.test") is None  # node one reads it open: not news
    assert RedisBreakerStates(client_of(redis_server), KEYS).get("flaky.test").open_until > 0
    redis_server.restart(kill=True)  # what was written survives a restart
    local.now += states[0].ttl
    assert one.state("flaky.test") == "open"


def test_a_breaker_opened_while_redis_is_away_reaches_it_when_it_is_back(redis_server) -> None:
    local = Clock()
    states = RedisBreakerStates(client_of(redis_server), KEYS, local_clock=local)
    states.clock.sync()  # the cluster's clock, read while Redis answers
    breaker = CircuitBreaker(threshold=1, cooldown=60, clock=states.clock, states=states)
    redis_server.stop()
    assert breaker.failure("down.test") == 60  # the node goes on with its cache
    assert breaker.state("down.test") == "open"
    redis_server.start()
    local.now += 1  # the next use after the retry interval sends what waited
    breaker.state("other.test")
    other = RedisBreakerStates(client_of(redis_server), KEYS)
    assert other.get("down.test").open_until > 0


def test_breaker_states_are_read_as_data(redis_server) -> None:
    client = client_of(redis_server)
    client.hset(KEYS.key("breaker"), "x.test", b'{"open_until": "soon"}')
    assert RedisBreakerStates(client, KEYS).get("x.test") is None
    assert quarantined(client)[0]["what"] == "breaker state of x.test"


# -- the link model


def test_the_shared_link_model_estimates_as_one_local_model(redis_server) -> None:
    rng = random.Random(7)
    chains = [["host:a", f"dir:a/{d}/", f"name:a/{d}/{n}"] for d in "xyz" for n in "pq"]
    pages = [(rng.choice(chains), rng.uniform(-1, 1)) for _ in range(200)]
    local = LinkModel()
    for chain, residual in pages:
        local.update(chain, residual)
    clock = Clock()
    nodes = [RedisLinkModel(client_of(redis_server), KEYS, clock=clock) for _ in range(2)]
    for index, (chain, residual) in enumerate(reversed(pages)):  # another order, two nodes
        nodes[index % 2].update(chain, residual)
    for node in nodes:
        node.flush()
    nodes[0].flush()  # node 0 reads node 1's sums
    for chain in chains:
        assert nodes[0].correction(chain) == pytest.approx(local.correction(chain))
    assert nodes[0].updates == local.updates == 200
    assert LinkModel.from_bytes(nodes[0].to_bytes()).correction(chains[0]) == pytest.approx(
        local.correction(chains[0])
    )


def test_link_model_updates_are_flushed_in_batches(redis_server) -> None:
    clock = Clock()
    client = client_of(redis_server)
    model = RedisLinkModel(client, KEYS, flush_every=3, flush_seconds=60, clock=clock)
    model.correction(["host:a"])  # the first reading fetches the shared sums
    model.update(["host:a"], 0.5)
    model.update(["host:a"], 0.5)
    assert client.hget(KEYS.key("model"), "w:host:a") is None
    assert model.correction(["host:a"]) == pytest.approx(1.0 / 5)  # its own, unflushed
    model.update(["host:a"], 0.5)
    assert float(client.hget(KEYS.key("model"), "w:host:a")) == 3
    redis_server.restart(kill=True)
    fresh = RedisLinkModel(client_of(redis_server), KEYS)
    assert fresh.correction(["host:a"]) == pytest.approx(1.5 / 6)


def test_link_model_updates_made_while_redis_is_away_are_sent_later(redis_server) -> None:
    clock = Clock()
    model = RedisLinkModel(client_of(redis_server), KEYS, flush_every=2, clock=clock)
    redis_server.stop()
    for _ in range(3):
        model.update(["host:a"], 1.0)  # flushes fail: the sums stay buffered
    assert model.correction(["host:a"]) == pytest.approx(3 / 6)
    redis_server.start()
    model.flush()
    fresh = RedisLinkModel(client_of(redis_server), KEYS)
    assert fresh.correction(["host:a"]) == pytest.approx(3 / 6)
    assert fresh.updates == 3


def test_a_link_model_field_that_is_not_a_number_is_quarantined(redis_server) -> None:
    client = client_of(redis_server)
    client.hset(KEYS.key("model"), mapping={"w:host:a": b"1", "r:host:a": b"nan?"})
    model = RedisLinkModel(client, KEYS)
    model.flush()
    assert model.correction(["host:a"]) == 0.0
    assert "r:host:a" in quarantined(client)[0]["what"]


# -- install


def test_install_puts_the_shared_state_in_place_and_says_so(redis_server, caplog) -> None:
    url = redis_server.url.replace("redis://", "redis://:secret@")
    redis_server_password = "secret"
    crawler = get_crawler(
        Spider, {"REDIS_URL": url, "FOCUS_TOPIC": "databases", "FOCUS_NODE_NAME": "n1"}
    )
    crawler.spider = Spider.from_crawler(crawler, name="docs")
    client_of(redis_server).config_set("requirepass", redis_server_password)
    with caplog.at_level(logging.INFO, logger="scrapy_focus.cluster.setup"):
        parts = install(crawler)
        crawler.signals.send_catch_log(signal=signals.engine_started)
    assert parts is not None and install(crawler) is parts
    runtime = FocusRuntime.of(crawler)
    assert runtime.counters is parts.counters
    assert runtime.history.store is parts.history
    assert runtime.breaker.states is parts.breaker_states
    assert runtime.breaker.clock is parts.breaker_states.clock
    assert runtime.model.scorer.model is parts.model
    assert parts.counters.add_fetched() == 1
    assert parts.client.hget("focus:{docs}:counters", "fetched") == b"1"
    lines = [r.getMessage() for r in caplog.records if "Cluster mode" in r.getMessage()]
    assert lines == [f"Cluster mode: crawl docs on {redis_server.url} (from REDIS_URL) as node n1"]


def test_install_does_nothing_without_a_redis_setting() -> None:
    crawler = get_crawler(Spider, {})
    assert install(crawler) is None
    assert type(FocusRuntime.of(crawler).counters).__name__ == "LocalCounters"


def test_install_without_the_redis_library_says_what_to_install(monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "redis", None)  # not installable here otherwise
    crawler = get_crawler(Spider, {"FOCUS_CLUSTER_REDIS_URL": "redis://127.0.0.1:1/0"})
    with pytest.raises(NotConfigured, match=r"scrapy-focus\[cluster\]"):
        install(crawler)


def test_the_runtime_installs_the_shared_state_when_a_part_is_first_asked_for(
    redis_server,
) -> None:
    crawler = get_crawler(Spider, {"FOCUS_CLUSTER_REDIS_URL": redis_server.url})
    crawler.spider = Spider.from_crawler(crawler, name="auto")
    runtime = FocusRuntime.of(crawler)
    assert isinstance(runtime.breaker.states, RedisBreakerStates)  # the first part asked
    assert runtime.counters is runtime.cluster_seams.counters
    assert isinstance(runtime.history.store, RedisHistoryStore)
    runtime.counters.add_fetched()
    assert client_of(redis_server).hget("focus:{auto}:counters", "fetched") == b"1"
    with pytest.raises(RuntimeError, match="already in use"):
        runtime.provide("breaker_states", RedisBreakerStates(client_of(redis_server), KEYS))


def test_public_url_leaves_the_password_out() -> None:
    assert public_url("redis://user:pw@h:6379/0") == "redis://user@h:6379/0"
    assert public_url("redis://:pw@h/1") == "redis://h/1"
    assert public_url("unix:///run/r.sock") == "unix:///run/r.sock"
