"""An extension that counts a node's round trips to Redis, for the cluster benchmark.

``EXTENSIONS = {"harness.redis_trips.RedisRoundTrips": 0}``: from the crawler's
construction on, every ``send_packed_command`` of redis-py in this process is one
round trip (a single command, or a whole pipeline, which redis-py sends at once;
a script call is one), whoever makes it: scrapy-redis's scheduler, dupefilter and
spider, or scrapy-focus's cluster seams.  At spider close the count is the stat
``harness/redis_round_trips``; the server's own ``INFO commandstats`` cannot tell
a pipeline, or the commands a script ran, from separate calls.
"""

from __future__ import annotations

import threading
from typing import Any

from redis.connection import AbstractConnection
from scrapy import signals
from scrapy.crawler import Crawler

_count = 0
_lock = threading.Lock()
_original = AbstractConnection.send_packed_command


def _counting(self: AbstractConnection, command: Any, check_health: bool = True) -> None:
    global _count
    with _lock:
        _count += 1
    return _original(self, command, check_health)


class RedisRoundTrips:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        AbstractConnection.send_packed_command = _counting  # type: ignore[method-assign]
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisRoundTrips:
        return cls(crawler)

    def spider_closed(self, spider: Any) -> None:
        self.crawler.stats.set_value("harness/redis_round_trips", _count)
