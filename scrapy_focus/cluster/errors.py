"""``unavailable``: a frontier call that Redis did not answer raises ``ClusterUnavailable``.

The one exception the link's thread backs off on (:mod:`.link`): a connection
refused or lost, a timeout, Redis still loading its data (``BusyLoadingError`` is
a ``ConnectionError``), or a replica answering read-only while a failover
promotes another.  Anything else a call raises is a bug or bad data, not an
outage, and goes through as it is.  :class:`Outage` says when the link lost
Redis and when it got it back.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ReadOnlyError
from redis.exceptions import TimeoutError as RedisTimeoutError

from scrapy_focus.cluster.entries import ClusterUnavailable

logger = logging.getLogger(__name__)


def unavailable(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (RedisConnectionError, RedisTimeoutError, ReadOnlyError) as error:
            self.stats["focus/cluster/unavailable"] += 1
            raise ClusterUnavailable(f"Redis did not answer {method.__name__}: {error}") from error

    return call


class Outage:
    """When Redis stopped answering the link, said once per outage and once it is back."""

    def __init__(self, clock: Callable[[], float], max_backoff: float) -> None:
        self.clock, self.max_backoff = clock, max_backoff
        self.since: float | None = None

    def failed(self, error: Exception, backoff: float) -> float:
        """A round failed: the next backoff (doubling from *backoff*)."""
        if self.since is None:
            self.since = self.clock()
            logger.error(
                "Cluster: Redis does not answer (%s); retrying with a backoff up to %gs, "
                "nothing is lost meanwhile",
                error,
                self.max_backoff,
            )
        return min(self.max_backoff, max(0.1, backoff * 2))

    def answered(self) -> None:
        if self.since is not None:
            logger.warning(
                "Cluster: Redis is back after %.1fs; nothing was lost", self.clock() - self.since
            )
            self.since = None
