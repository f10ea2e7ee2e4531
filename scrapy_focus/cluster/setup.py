"""Cluster mode switched on for one crawler: :func:`install`.

``install(crawler)`` is the one call that puts the Redis implementations of the
shared seams in place (the frontier store and politeness are added by the
scheduler's wiring).  The contract:

* it returns None, doing nothing, when ``config.cluster.enabled`` is off, and
  raises ``NotConfigured`` when it is on but the ``redis`` library is missing;
* the runtime calls it the first time a component asks for ``counters``,
  ``history`` or ``breaker`` in cluster mode (``FocusRuntime.cluster_seams``); it
  may be called earlier (an extension's ``from_crawler``), once per crawler (a
  second call returns the first call's parts); it makes no round trip to Redis
  itself, and shares the cluster frontier's client when that exists already;
* the crawl's name is ``FOCUS_CLUSTER_NAME``, else the spider's name, taken when a
  key is first needed (the spider may not exist yet when ``install`` runs; it does
  by ``spider_opened``, before any key is used); when the engine starts, the line
  "Cluster mode: crawl <name> on <url> (from <setting>) as node <node>" is logged,
  with the URL's password left out, unless the cluster frontier's node logged it;
* a malformed value a part reads back is counted in the crawler's stats as
  ``focus/cluster/malformed`` (and quarantined: :mod:`~.values`);
* the link model's shared state replaces the link scorer's model when the crawl
  has a topic (``FocusRuntime.of(crawler).model.scorer.model``);
* on a node whose cluster frontier's link runs, the parts' exchanges ride the
  link's rounds (:func:`ride_link`): the reactor never waits on Redis for them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from scrapy import signals

from scrapy_focus.cluster.breaker import RedisBreakerStates
from scrapy_focus.cluster.connection import node_name, redis_client
from scrapy_focus.cluster.counters import RedisCounters
from scrapy_focus.cluster.history import RedisHistoryStore
from scrapy_focus.cluster.keys import ClusterKeys
from scrapy_focus.cluster.model import RedisLinkModel, RedisNamedState
from scrapy_focus.runtime import FocusRuntime

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_focus.config.sections import ClusterConfig

logger = logging.getLogger(__name__)

_ATTRIBUTE = "focus_cluster_parts"


def public_url(url: str) -> str:
    """*url* without its password (for logs)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit((parts.scheme, user + host, parts.path, parts.query, parts.fragment))


class CrawlKeys:
    """The crawl's :class:`~.keys.ClusterKeys`, made when a key is first needed
    (the crawl's name may be the spider's, which comes later); logs the start-up
    line then."""

    def __init__(self, crawler: Crawler, config: ClusterConfig, node: str) -> None:
        self.crawler = crawler
        self.config = config
        self.node = node
        self._keys: ClusterKeys | None = None

    @property
    def name(self) -> str:
        spider = getattr(self.crawler, "spider", None)
        name = self.config.name or getattr(spider, "name", "")
        if not name:
            raise RuntimeError(
                "cluster mode needs the crawl's name before the spider exists: "
                "set FOCUS_CLUSTER_NAME"
            )
        return name

    @property
    def keys(self) -> ClusterKeys:
        if self._keys is None:
            self._keys = ClusterKeys.for_crawl(self.config.key_prefix, self.name)
        return self._keys

    def started(self) -> None:
        """The engine started: say where the crawl's shared state is, unless the
        cluster frontier's node said it already (it does when it runs)."""
        keys = self.keys  # a bad key prefix fails here, at start-up
        if FocusRuntime.of(self.crawler).__dict__.get("cluster") is not None:
            return
        logger.info(
            "Cluster mode: crawl %s on %s (from %s) as node %s",
            self.name,
            public_url(self.config.url),
            self.config.source,
            self.node,
        )
        logger.debug("The crawl's shared state is under %s", keys.prefix)

    def key(self, *parts: str) -> str:
        return self.keys.key(*parts)


@dataclass
class ClusterParts:
    """What :func:`install` put in place, for the scheduler's wiring and for tests."""

    client: Any
    keys: CrawlKeys
    node: str
    counters: RedisCounters
    history: RedisHistoryStore
    breaker_states: RedisBreakerStates
    model: RedisLinkModel | None
    state: RedisNamedState

    def owned_keys(self) -> list[str]:
        """The Redis keys these parts write (for ``FOCUS_CLUSTER_FLUSH_ON_CLOSE``:
        nothing here deletes them by itself)."""
        names = ("counters", "history", "breaker", "model", "state", "quarantine:seams")
        return [self.keys.key(*name.split(":")) for name in names]

    def riders(self) -> list[Any]:
        parts = (self.counters, self.history, self.breaker_states, self.model)
        return [part for part in parts if part is not None and hasattr(part, "ride")]

    def flush(self) -> None:
        """Write what the parts hold back (history, link model sums)."""
        self.history.flush()
        if self.model is not None:
            self.model.flush()


def _share_link_model(runtime: FocusRuntime, parts: ClusterParts) -> None:
    scorer = runtime.model.scorer
    if scorer is not None and parts.model is None:
        model = RedisLinkModel(
            parts.client, parts.keys, pseudo=getattr(scorer.model, "pseudo", 3.0)
        )
        model.stats = runtime.crawler.stats
        scorer.model = parts.model = model
        ride_link(runtime.crawler)


def ride_link(crawler: Crawler) -> None:
    """On a node whose link runs (the cluster frontier's), the parts' exchanges
    ride the link's rounds, off the reactor (:mod:`~.riders`); called when the
    link starts and when a part is made later.  Elsewhere (these seams without the
    cluster frontier) they stay the parts' own calls."""
    parts = crawler.__dict__.get(_ATTRIBUTE)
    node = FocusRuntime.of(crawler).__dict__.get("cluster")
    link = getattr(node, "link", None)
    if parts is None or link is None or not link.started:
        return
    for part in parts.riders():
        part.ride(link)


def install(crawler: Crawler) -> ClusterParts | None:
    """Put the cluster's shared state in place of the local one (see the module
    docstring); None when cluster mode is off."""
    existing = crawler.__dict__.get(_ATTRIBUTE)
    if existing is not None:
        return existing
    runtime = FocusRuntime.of(crawler)
    config = runtime.config.cluster
    if not config.enabled:
        return None
    frontier_node = runtime.__dict__.get("cluster")  # the frontier's, if made already
    client = frontier_node.client if frontier_node is not None else redis_client(config)
    node = node_name(config)
    keys = CrawlKeys(crawler, config, node)
    counters = RedisCounters(client, keys)
    history = RedisHistoryStore(client, keys, engines=tuple(runtime.engines))
    breaker_states = RedisBreakerStates(client, keys)
    for part in (counters, history, breaker_states):
        part.stats = crawler.stats
    runtime.provide("counters", counters)
    runtime.provide("history_store", history)
    runtime.provide("breaker_states", breaker_states)
    parts = ClusterParts(
        client, keys, node, counters, history, breaker_states, None, RedisNamedState(client, keys)
    )
    if getattr(crawler, "spider", None) is not None:
        _share_link_model(runtime, parts)
    else:  # the topic may be the spider's own (focus_topic): build the model with it
        crawler.signals.connect(
            lambda: _share_link_model(runtime, parts), signal=signals.spider_opened, weak=False
        )
    runtime.on_close(parts.flush)
    setattr(crawler, _ATTRIBUTE, parts)
    ride_link(crawler)
    crawler.signals.connect(keys.started, signal=signals.engine_started, weak=False)
    return parts
