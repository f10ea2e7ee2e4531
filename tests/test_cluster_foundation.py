"""Cluster mode's foundation: its settings, its keys and a real redis-server."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from harness.redis_server import RedisServer
from scrapy_focus.cluster.connection import node_name, redis_client
from scrapy_focus.cluster.keys import ClusterKeys
from scrapy_focus.config import FocusConfig


def cluster(**settings: object):
    return FocusConfig.from_settings(Settings(settings)).cluster


def test_cluster_mode_is_off_without_a_redis_setting() -> None:
    assert not cluster().enabled


def test_scrapy_redis_settings_turn_cluster_mode_on() -> None:
    config = cluster(REDIS_URL="redis://example:6380/2")
    assert (config.enabled, config.url, config.source) == (
        True,
        "redis://example:6380/2",
        "REDIS_URL",
    )
    assert cluster(REDIS_HOST="h", REDIS_PORT=7000).url == "redis://h:7000/0"
    ours = cluster(FOCUS_CLUSTER_REDIS_URL="unix:///run/r.sock", REDIS_URL="redis://x")
    assert (ours.url, ours.source) == ("unix:///run/r.sock", "FOCUS_CLUSTER_REDIS_URL")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"FOCUS_CLUSTER_REDIS_URL": "http://x"}, "redis://"),
        ({"FOCUS_CLUSTER_KEY_PREFIX": "focus"}, "%(crawl)s"),
        ({"FOCUS_CLUSTER_LEASE_TIMEOUT": 1.0}, "LEASE_TIMEOUT"),
        ({"FOCUS_CLUSTER_HEARTBEAT": 0}, "HEARTBEAT"),
    ],
)
def test_bad_cluster_settings_fail_at_start_up(settings: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        cluster(**settings)


def test_a_crawls_keys_share_one_hash_tag() -> None:
    keys = ClusterKeys.for_crawl("focus:{%(crawl)s}", "docs")
    assert keys.key("q", "example.com") == "focus:{docs}:q:example.com"
    assert keys.hash_tag == "docs"
    with pytest.raises(ValueError, match="hash tag"):
        ClusterKeys.for_crawl("focus:%(crawl)s", "docs")
    with pytest.raises(ValueError, match="braces"):
        ClusterKeys.for_crawl("focus:{%(crawl)s}", "a}b")
    with pytest.raises(ValueError, match="name"):
        ClusterKeys.for_crawl("focus:{%(crawl)s}", "")


def test_the_client_speaks_bytes_and_aof_survives_a_kill(redis_server: RedisServer) -> None:
    config = cluster(
        FOCUS_CLUSTER_REDIS_URL=redis_server.url,
        REDIS_PARAMS={"encoding": "utf-8", "decode_responses": True, "socket_timeout": 5},
    )
    client = redis_client(config)
    client.set(b"k", b"\x00\xff")
    assert client.get(b"k") == b"\x00\xff"  # decode_responses is ours to decide
    redis_server.restart(kill=True)
    assert redis_client(config).get(b"k") == b"\x00\xff"
    assert node_name(config).endswith(str(__import__("os").getpid()))
