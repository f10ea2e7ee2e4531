"""The crawl's Redis client, made from its :class:`~scrapy_focus.config.sections.ClusterConfig`.

:func:`redis_client` gives a client of the ``redis`` library (the ``cluster``
extra) that speaks bytes (``decode_responses`` off: payloads are binary data),
with scrapy-redis's connection defaults (timeouts, ``retry_on_timeout``) and the
project's ``REDIS_PARAMS`` on top.  :func:`node_name` is this process's name in
leases and heartbeats.
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured

if TYPE_CHECKING:
    from scrapy_focus.config.sections import ClusterConfig

# As scrapy-redis's defaults.REDIS_PARAMS, so a project moving over keeps its behaviour.
DEFAULT_PARAMS: dict[str, Any] = {
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
    params = {**DEFAULT_PARAMS, **config.params}
    for name in _TEXT_PARAMS:
        params.pop(name, None)
    return redis.Redis.from_url(config.url, decode_responses=False, **params)


def node_name(config: ClusterConfig) -> str:
    return config.node or f"{socket.gethostname()}-{os.getpid()}"
