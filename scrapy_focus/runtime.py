"""One crawl's shared parts, owned in one place: :class:`FocusRuntime`.

The contract:

* a crawler has exactly one runtime, reached with ``FocusRuntime.of(crawler)``
  from any component's ``from_crawler`` (it is kept on the crawler itself, so
  it lives and dies with it; there is no module-level table);
* it holds the crawl's :class:`~scrapy_focus.config.FocusConfig`, read from the
  crawler's settings once;
* it owns what several components share, each made on first use so that a
  component switched off costs nothing: the corpus handle, the per-host
  politeness, the engine history, the link model and the browser pool.  A
  component never builds its own copy of one of these;
* each shared part is typed by the protocol of its seam
  (:mod:`scrapy_focus.seams`), so a cluster can put shared implementations in
  their place before the components ask for them (:meth:`provide`);
* it closes what it opened when the engine stops.
"""

from __future__ import annotations

import logging
import random
from functools import cached_property
from typing import TYPE_CHECKING, Any

from scrapy import signals

from scrapy_focus.config import FocusConfig
from scrapy_focus.engines.headers import awaited

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from scrapy_focus.cluster.assembly import ClusterNode
    from scrapy_focus.cluster.setup import ClusterParts
    from scrapy_focus.corpus.db import CorpusDB
    from scrapy_focus.engines.breaker import CircuitBreaker
    from scrapy_focus.engines.discovery import EngineInfo
    from scrapy_focus.engines.history import DomainHistory
    from scrapy_focus.engines.pool import BrowserPool
    from scrapy_focus.frontier.known import KnownLinks
    from scrapy_focus.frontier.ordering import OrderGate
    from scrapy_focus.frontier.relevance import FocusModel
    from scrapy_focus.frontier.seams import CrawlCounters, PolitenessState
    from scrapy_focus.frontier.semantic import Semantic
    from scrapy_focus.report.observer import CrawlObserver
    from scrapy_focus.signals import PageOutputs

logger = logging.getLogger(__name__)

_ATTRIBUTE = "focus_runtime"
_STORE_OF = {"history_store": "history", "breaker_states": "breaker"}  # store -> its part


class FocusRuntime:
    """The shared state of one crawl (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.config = FocusConfig.from_settings(crawler.settings)
        self._corpus: CorpusDB | None = None
        self._closers: list[Any] = []
        crawler.signals.connect(self._on_engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def of(cls, crawler: Crawler) -> FocusRuntime:
        runtime = crawler.__dict__.get(_ATTRIBUTE)
        if runtime is None:
            runtime = cls(crawler)
            setattr(crawler, _ATTRIBUTE, runtime)
        return runtime

    def provide(self, name: str, implementation: Any) -> None:
        """Put *implementation* in place of the shared part *name* (``politeness``,
        ``history``, ``model``...) before any component asks for it.  Two parts are
        the stores of others: ``history_store`` (a ``HistoryStore`` for
        ``history``) and ``breaker_states`` (``BreakerStates`` for ``breaker``)."""
        for part in (name, _STORE_OF.get(name)):
            if part is not None and part in self.__dict__:
                raise RuntimeError(f"the crawl's {part} is already in use; provide it earlier")
        self.__dict__[name] = implementation

    # -- the shared parts

    @cached_property
    def politeness(self) -> PolitenessState:
        """Per-host readiness: decided in Redis for every node in cluster mode."""
        if self.cluster is not None:
            return self.cluster.politeness
        from scrapy_focus.frontier.politeness import Politeness, robots_crawl_delay

        return Politeness(self.config.politeness, robots_crawl_delay(self.crawler))

    @cached_property
    def cluster(self) -> ClusterNode | None:
        """This node's cluster parts when cluster mode is on (:mod:`scrapy_focus.cluster`)."""
        if not self.config.cluster.enabled:
            return None
        from scrapy_focus.cluster.assembly import ClusterNode

        return ClusterNode(self.crawler, self.config)

    @cached_property
    def cluster_seams(self) -> ClusterParts | None:
        """In cluster mode, the Redis implementations of the counters, the engine
        history's store, the breaker states and the link model's state
        (:func:`scrapy_focus.cluster.setup.install`), put in place the first time
        any of them is asked for; None on one machine."""
        if not self.config.cluster.enabled:
            return None
        from scrapy_focus.cluster.setup import install

        return install(self.crawler)

    @cached_property
    def model(self) -> FocusModel:
        from scrapy_focus.frontier.relevance import FocusModel

        spider = getattr(self.crawler, "spider", None)
        return FocusModel.from_config(self.config.topic, spider, semantic=lambda: self.semantic)

    @cached_property
    def semantic(self) -> Semantic | None:
        """The embedding model of FOCUS_SEMANTIC (:mod:`scrapy_focus.frontier.semantic`),
        loaded the first time a focused model asks for it; None when off or absent."""
        from scrapy_focus.frontier.semantic import load_semantic

        return load_semantic(self.config.topic.semantic)

    # -- engines

    @cached_property
    def engines(self) -> dict[str, EngineInfo]:
        """The engines this machine runs, in ladder order (found once per crawl)."""
        from scrapy_focus.engines.discovery import available_engines

        return available_engines(self.config.browser, self.config.ladder.engines)

    @cached_property
    def browsers(self) -> BrowserPool:
        """The engines' handlers, browser contexts and pages, closed with the engine
        (or by the last download handler that uses them, if that comes first)."""
        from scrapy_focus.engines.pool import BrowserPool

        pool = BrowserPool(self.crawler, self.config.browser, self.engines)
        self.on_close(pool.close)
        return pool

    @cached_property
    def history(self) -> DomainHistory:
        """Per domain and engine, what happened: kept in the corpus when
        FOCUS_HISTORY_ENABLED (a later crawl starts where this one learnt), in
        memory otherwise or for a crawler without a spider."""
        from scrapy_focus.engines.history import (
            CorpusHistoryStore,
            DomainHistory,
            HistoryStore,
            MemoryHistoryStore,
        )

        ladder = self.config.ladder
        self.cluster_seams  # noqa: B018 (in cluster mode, it provides the store)
        store: HistoryStore | None = self.__dict__.get("history_store")
        if store is None:
            store = MemoryHistoryStore()
            if ladder.history_enabled and getattr(self.crawler, "spider", None) is not None:
                store = CorpusHistoryStore(self.corpus)
        return DomainHistory(
            store,
            engines=tuple(self.engines),
            half_life=ladder.history_half_life,
            probe_rate=ladder.history_probe_rate,
            rng=random.Random(ladder.seed).random if ladder.seed else random.random,
        )

    @cached_property
    def breaker(self) -> CircuitBreaker:
        """The per-domain circuit breaker (its states behind ``BreakerStates``:
        ``provide("breaker_states", ...)`` puts a shared one in place, with its
        ``clock`` when it has one, so that nodes' times compare)."""
        import time

        from scrapy_focus.engines.breaker import CircuitBreaker

        ladder = self.config.ladder
        self.cluster_seams  # noqa: B018 (in cluster mode, it provides the states)
        states = self.__dict__.get("breaker_states")
        return CircuitBreaker(
            threshold=ladder.breaker_threshold,
            cooldown=ladder.breaker_cooldown,
            max_cooldown=ladder.breaker_max_cooldown,
            clock=getattr(states, "clock", time.monotonic),
            states=states,
        )

    # -- frontier

    @cached_property
    def counters(self) -> CrawlCounters:
        """The pages the crawl counts towards its stop conditions (the cluster's
        totals in cluster mode)."""
        seams = self.cluster_seams
        if seams is not None:
            return seams.counters
        from scrapy_focus.frontier.stopping import LocalCounters

        return LocalCounters()

    @cached_property
    def page_outputs(self) -> PageOutputs:
        """What each page yielded that the frontier has yet to receive (its lease waits)."""
        from scrapy_focus.signals import PageOutputs

        return PageOutputs()

    @cached_property
    def known_links(self) -> KnownLinks:
        """Which links the scheduler would drop as duplicates (it binds it when it opens)."""
        from scrapy_focus.frontier.known import KnownLinks

        return KnownLinks(self.crawler.stats)

    @cached_property
    def order(self) -> OrderGate | None:
        """The gate that makes the crawl's order reproducible (``FOCUS_REPRODUCIBLE_ORDER``,
        :mod:`scrapy_focus.frontier.ordering`), or its first requests' order
        (``FOCUS_ORDERED_START``); None when both are off, and in a cluster."""
        config = self.config.frontier
        if not (config.enabled and (config.reproducible_order or config.ordered_start)):
            return None
        if self.config.cluster.enabled:  # nodes interleave: no one order to keep
            if config.reproducible_order:
                logger.warning("FOCUS_REPRODUCIBLE_ORDER has no effect in cluster mode")
            return None
        from twisted.internet import reactor

        from scrapy_focus import signals as focus_signals
        from scrapy_focus.frontier.hosts import engine_waker
        from scrapy_focus.frontier.ordering import OrderGate

        crawler = self.crawler

        def engine_closing() -> bool:
            slot = getattr(crawler.engine, "_slot", None)
            return slot is None or slot.closing is not None

        def engine_starting() -> bool:  # Scrapy's engine iterates the start requests
            return getattr(crawler.engine, "_start", None) is not None

        def engine_holds(request: Request) -> bool:  # till the scrape of its answer ends
            # No engine's set (none runs, or a test's stand-in): nothing is in progress.
            inprogress = getattr(getattr(crawler.engine, "_slot", None), "inprogress", None)
            return isinstance(inprogress, set) and request in inprogress

        def on_ordered(request: Request) -> None:
            crawler.signals.send_catch_log(focus_signals.ordered_dispatch, request=request)

        whole = config.reproducible_order
        return OrderGate(
            config.concurrency if whole else min(config.concurrency, config.ordered_window),
            config.order_wait,
            engine_waker(crawler),
            engine_closing,
            crawler.stats,
            reactor,
            engine_starting,
            limit=0 if whole else config.ordered_start,
            engine_holds=engine_holds,
            on_ordered=on_ordered,
        )

    # -- corpus

    @cached_property
    def corpus(self) -> CorpusDB:
        """The crawl's corpus, opened on first use (once the spider exists) and
        closed when the engine stops.  Every component that reads or writes the
        corpus uses this one handle; a write fault on it stops this crawl
        (:func:`~scrapy_focus.faults.storage_failed`)."""
        from functools import partial

        from scrapy_focus.corpus.db import CorpusDB
        from scrapy_focus.corpus.storage import db_options
        from scrapy_focus.faults import storage_failed

        config = self.config.corpus
        db = CorpusDB(config.corpus_path(self.crawler.spider.name), **db_options(config))
        db.fault_handlers.append(partial(storage_failed, self.crawler))
        self.on_close(db.close)
        return db

    # -- seeing the crawl

    @cached_property
    def observer(self) -> CrawlObserver:
        """What the crawl's signals say that no stat holds (queue age, extraction
        and render times, engines per host), for the series, the log line and
        the Prometheus endpoint."""
        from scrapy_focus.report.observer import CrawlObserver

        return CrawlObserver(self.crawler)

    # -- closing

    def on_close(self, closer: Any) -> None:
        """Call *closer* (a function, maybe async) when the engine stops."""
        self._closers.append(closer)

    async def _on_engine_stopped(self) -> None:
        closers, self._closers = self._closers[::-1], []
        for closer in closers:
            try:
                await awaited(closer())
            except Exception:  # one part failing to close must not keep the others open
                logger.exception("Closing a part of the crawl failed: %r", closer)
