"""The crawl's Redis client, made from its :class:`~scrapy_focus.config.sections.ClusterConfig`.

:func:`redis_client` gives a client of the ``redis`` library (the ``cluster``
extra) that speaks bytes (``decode_responses`` off: payloads are binary data),
with scrapy-redis's connection defaults (timeouts, ``retry_on_timeout``) and the
project's ``REDIS_PARAMS`` on top.  :func:`node_name` is this process's name in
leases and heartbeats.
"""

from __future__ import annotations

import inspect
import os
import socket
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured

if TYPE_CHECKING:
    from scrapy_focus.config.sections import ClusterConfig

# As scrapy-redis's defaults.REDIS_PARAMS, so a project moving over keeps its behaviour.
DEFAULT_PARAMS: dict[str, Any] = {
    # RESP2, what redis-py spoke by default before version 8 and every Redis server
    # speaks: a connection opens without a HELLO round trip (the scripts' replies
    # are the same in both).  ``REDIS_PARAMS = {"protocol": 3}`` asks for RESP3.
    "protocol": 2,
    "socket_timeout": 30,
    "socket_connect_timeout": 30,
    "retry_on_timeout": True,
}
_TEXT_PARAMS = ("encoding", "decode_responses", "redis_cls")  # ours speak bytes


def redis_client(config: ClusterConfig) -> Any:
    """A ``redis.Redis`` for *config*'s server (NotConfigured without the library)."""
    try:
        import redis
    except ImportError:
        raise NotConfigured(
            f"{config.source} is set, but the redis library is not installed: "
            "pip install 'scrapy-focus[cluster]'"
        ) from None
    params = {**DEFAULT_PARAMS, **_quiet_handshake(redis), **config.params}
    for name in _TEXT_PARAMS:
        params.pop(name, None)
    return redis.Redis.from_url(config.url, decode_responses=False, **params)


def _quiet_handshake(redis: Any) -> dict[str, Any]:
    """A new connection says only what the crawl needs: redis-py 8 would also send
    ``CLIENT SETINFO`` twice and opt in to Redis Enterprise's maintenance
    notifications, each a round trip of its own, on every connection of every node.
    ``REDIS_PARAMS`` (``driver_info``, ``maint_notifications_config``) turns them on."""
    quiet: dict[str, Any] = {}
    accepted = inspect.signature(redis.Redis.__init__).parameters
    if "driver_info" in accepted:
        quiet["driver_info"] = None
    if "maint_notifications_config" in accepted:
        from redis.maint_notifications import MaintNotificationsConfig

        quiet["maint_notifications_config"] = MaintNotificationsConfig(enabled=False)
    return quiet


def node_name(config: ClusterConfig) -> str:
    return config.node or f"{socket.gethostname()}-{os.getpid()}"
