"""``unavailable``: a frontier call that Redis did not answer raises ``ClusterUnavailable``.

The one exception the link's thread backs off on (:mod:`.link`): a connection
refused or lost, a timeout, Redis still loading its data (``BusyLoadingError`` is
a ``ConnectionError``), or a replica answering read-only while a failover
promotes another.  Anything else a call raises is a bug or bad data, not an
outage, and goes through as it is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ReadOnlyError
from redis.exceptions import TimeoutError as RedisTimeoutError

from scrapy_focus.cluster.entries import ClusterUnavailable


def unavailable(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (RedisConnectionError, RedisTimeoutError, ReadOnlyError) as error:
            self.stats["focus/cluster/unavailable"] += 1
            raise ClusterUnavailable(f"Redis did not answer {method.__name__}: {error}") from error

    return call
