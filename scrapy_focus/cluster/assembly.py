"""``ClusterNode``: one node's cluster parts, made once per crawl and owned by its runtime.

``FocusRuntime.of(crawler).cluster`` is a :class:`ClusterNode` when cluster mode
is on (``FOCUS_CLUSTER_REDIS_URL``, or scrapy-redis's ``REDIS_URL``), None
otherwise.  It connects to Redis, names the crawl's keys (``FOCUS_CLUSTER_NAME``,
else the spider's name) and this node, and makes the shared frontier
(:class:`~.frontier.RedisFrontier`), the node's link to it
(:class:`~.link.ClusterLink`), the store and host queues the scheduler uses
(:mod:`.node`) and the politeness every component shares
(:class:`~.politeness.ClusterPoliteness`).  The scheduler starts it at open;
its store's close stops it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from scrapy_focus.cluster.connection import node_name, redis_client
from scrapy_focus.cluster.entries import ClusterUnavailable, Status
from scrapy_focus.cluster.frontier import RedisFrontier
from scrapy_focus.cluster.keys import ClusterKeys
from scrapy_focus.cluster.link import ClusterLink
from scrapy_focus.cluster.node import NodeHostQueues, NodeStore
from scrapy_focus.cluster.politeness import ClusterPoliteness
from scrapy_focus.cluster.rescoring import FrontierMoves
from scrapy_focus.frontier.politeness import robots_crawl_delay

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_focus.config import FocusConfig
    from scrapy_focus.frontier.backlog import ProcessingBacklog

logger = logging.getLogger(__name__)


def redacted(url: str) -> str:
    """*url* without its password, for the log."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username or ''}:***@{parts.hostname or ''}"
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


class ClusterNode:
    """This process's part in a cluster crawl (see the module docstring)."""

    def __init__(self, crawler: Crawler, config: FocusConfig) -> None:
        cluster = config.cluster
        self.crawler = crawler
        self.client = redis_client(cluster)
        spider = getattr(crawler, "spider", None)
        self.name = cluster.name or getattr(spider, "name", "") or ""
        self.keys = ClusterKeys.for_crawl(cluster.key_prefix, self.name)
        self.node = node_name(cluster)
        self.frontier = RedisFrontier(self.client, self.keys, self.node, cluster, config.politeness)
        self.link = ClusterLink(
            self.frontier,
            cluster,
            wake=self._wake,
            buffer=crawler.settings.getint("CONCURRENT_REQUESTS", 16),
            put_state=self._put_state,
            on_pushed=self._pushed,
            on_status=self._status,
            room=self._room,
        )
        self.politeness = ClusterPoliteness(
            config.politeness, self.link, self._taken_key, robots_crawl_delay(crawler)
        )
        where = f"{redacted(cluster.url)} {self.keys.prefix}"
        self.moves = FrontierMoves(self.frontier)  # re-scoring's, riding the link's rounds
        self.link.riders.add(self.moves)
        self.store = NodeStore(
            self.link, self.moves, self._get_state, where, self.politeness.new_host
        )
        self.store.flush_on_close = cluster.flush_on_close
        self.hosts = NodeHostQueues(
            self.link, self.moves, self._room, self._wake, self.politeness.ready_at
        )
        self._engine_wake: Any = None
        logger.info(
            "Cluster mode: crawl %r on %s (from %s) as node %s",
            self.name,
            redacted(cluster.url),
            cluster.source,
            self.node,
        )
        for name in cluster.ignored_redis_settings:
            logger.warning(
                "%s is set, but it is scrapy-redis's scheduler's: a focused cluster keeps "
                "its own frontier under %s (requests as data, never pickled; leased, not "
                "popped) and never deletes it when a node closes unless "
                "FOCUS_CLUSTER_FLUSH_ON_CLOSE = True.  Keep scrapy-redis's Scheduler "
                "(SCHEDULER) to keep its behaviour.",
                name,
                self.keys.prefix,
            )

    def start(self, wake: Any, backlog: ProcessingBacklog) -> None:
        """Start the link; *wake* makes the engine ask for requests again; the link
        leases by the scheduler's *backlog* (:mod:`~scrapy_focus.cluster.pacing`)."""
        self._engine_wake = wake
        self.link.backlog = backlog
        self.link.start()
        from scrapy_focus.cluster.setup import ride_link

        ride_link(self.crawler)  # the other seams' exchanges go with the link's rounds

    # -- what the link calls (on its thread)

    def _wake(self) -> None:
        if self._engine_wake is None:
            return
        from twisted.internet import reactor

        reactor.callFromThread(self._engine_wake)

    def _pushed(self, results: list[bool]) -> None:
        elsewhere = results.count(False)
        if elsewhere:
            # Stats are written from the reactor thread only.
            from twisted.internet import reactor

            reactor.callFromThread(
                self.crawler.stats.inc_value, "focus/cluster/seen_elsewhere", elsewhere
            )

    def _status(self, status: Status, counts: dict[str, int]) -> None:
        from twisted.internet import reactor

        reactor.callFromThread(self._publish, status, counts)

    def _publish(self, status: Status, counts: dict[str, int]) -> None:
        stats = self.crawler.stats
        stats.set_value("focus/cluster/status/queued", status.queued)
        stats.set_value("focus/cluster/status/leased", status.leased)
        stats.set_value("focus/cluster/status/nodes_alive", status.nodes_alive)
        for name, value in counts.items():
            stats.set_value(name, value)

    def _put_state(self, name: str, value: bytes) -> None:
        from redis.exceptions import ConnectionError, TimeoutError

        try:
            self.client.hset(self.keys.key("state"), name, value)
        except (ConnectionError, TimeoutError) as error:
            raise ClusterUnavailable(f"Redis did not answer a state write: {error}") from error

    # -- what the scheduler calls

    def _get_state(self, name: str) -> bytes | None:
        return self.client.hget(self.keys.key("state"), name)

    def _taken_key(self) -> bytes:
        return self.store.last_taken

    def _room(self) -> int:
        """How many more requests this node's downloader takes now."""
        engine = self.crawler.engine
        limit = self.crawler.settings.getint("CONCURRENT_REQUESTS", 16)
        if engine is None:
            return limit
        return max(1, limit - len(engine.downloader.active))
