"""``FocusScheduler``: the single place that decides what is fetched next.

Every request the engine schedules passes through :meth:`enqueue_request` (seeds, links,
redirect targets, retries, escalations; links to pages it is done with are dropped where a page
yields them, :mod:`.known`): its fingerprint and the seen set (:mod:`.dupes`); the
scope and crawler-trap guards (:mod:`.admission`, :mod:`.traps`), which check a redirect target
like any link, so a redirect never widens the crawl; a score in [0, 1] from the link's context
(:mod:`.relevance`; a ``Request.priority`` set by the user wins over it); then the store
(:mod:`.seams`, :mod:`.store_local`), ordered per host, its seen mark and its entry in one
commit.

:meth:`next_request` returns the best-scoring request among the hosts that are *ready*
(:mod:`.politeness`, :mod:`.hosts`), best-first across hosts, or ``None`` while no host is
ready; it then asks the engine to call again when the first host becomes ready, so waiting costs
no CPU. What a taken request leads to is tracked by :mod:`.leases`; its page's lease is
acknowledged once everything it yielded is in the frontier.

What a user yields that is not a web page to rank (a start request or a signal handler's request
with a scheme other than http/https: ``data:``, ``file:``, ``ftp:``...) goes to the downloader
as in Scrapy; links found on pages are limited to ``FOCUS_SCHEMES``. The frontier orders
requests, not Scrapy's queue settings (``SCHEDULER_PRIORITY_QUEUE``, ``SCHEDULER_*_QUEUE``: a
start-up warning names any set); Scrapy's ``scheduler/*`` stats are kept. The crawl stops by
itself on the conditions of :mod:`.stopping`, and when the store cannot write
(``focus_storage_error``, :mod:`scrapy_focus.faults`)."""

from __future__ import annotations

import contextlib
import functools
import logging
from typing import TYPE_CHECKING, Any

from scrapy.core.scheduler import BaseScheduler

from scrapy_focus.faults import StorageError, storage_failed
from scrapy_focus.frontier import job
from scrapy_focus.frontier.admission import (
    CrawlScope,
    Guards,
    arrival_of,
    link_score,
    link_state,
    queue_host,
)
from scrapy_focus.frontier.backlog import ProcessingBacklog
from scrapy_focus.frontier.codec import RequestCodec
from scrapy_focus.frontier.dupes import Duplicates
from scrapy_focus.frontier.leases import Leases
from scrapy_focus.frontier.opening import log_seed_scope, open_frontier, warn_ignored_queue_settings
from scrapy_focus.frontier.ordering import announce_order, dispatched, next_host, stalled
from scrapy_focus.frontier.rescoring import Rescorer
from scrapy_focus.frontier.stopping import NO_SCOPE, StopConditions, close_crawl, log_no_scope
from scrapy_focus.frontier.traps import TrapDetector
from scrapy_focus.frontier.watch import SignalWatch
from scrapy_focus.runtime import FocusRuntime
from scrapy_focus.signals import PageOutput
from scrapy_focus.state import FocusState, LinkContext, state_of

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from scrapy_focus.config import FrontierConfig
    from scrapy_focus.frontier.relevance import FocusModel
    from scrapy_focus.frontier.seams import CrawlCounters, FrontierStore, PolitenessState
    from scrapy_focus.urls import Scope

logger = logging.getLogger(__name__)


class FocusScheduler(BaseScheduler):
    """The focused frontier as Scrapy's scheduler (see the module docstring)."""

    def __init__(self, crawler: Crawler, config: FrontierConfig) -> None:
        runtime = FocusRuntime.of(crawler)
        self.crawler = crawler
        self.config = config
        self.stats = crawler.stats
        self.model: FocusModel = runtime.model
        self.politeness: PolitenessState = runtime.politeness
        self.outputs = runtime.page_outputs
        self.counters: CrawlCounters = runtime.counters
        self.stop_conditions = StopConditions(config, self.counters, crawler=crawler)
        self.crawl_scope = CrawlScope(config.scope, config.seed_scope)
        self.traps = TrapDetector(config.trap_pages) if config.trap_pages else None
        self.leases = Leases()
        self.backlog = ProcessingBacklog(config, runtime.config.extract, crawler)
        self.duplicates = Duplicates(crawler, config)
        self.known_links = runtime.known_links  # dropped before they get here (:mod:`.known`)
        self.store: FrontierStore | None = None
        self.spider: Spider | None = None
        self._closing = False
        self.order = runtime.order  # None unless the order (or the start's) is kept
        if self.order is not None:  # a response it holds frees its host (a cached one too)
            self.order.release = self.request_finished
        # Kept on the scheduler: signals hold their handlers by weak reference.
        self.watch = SignalWatch(self)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        scheduler = cls(crawler, FocusRuntime.of(crawler).config.frontier)
        scheduler.watch.connect(crawler.signals)
        return scheduler

    @property
    def scope(self) -> Scope:
        """The crawl's scope now (seeds widen it; browser engines check navigations by it)."""
        return self.crawl_scope.scope

    # -- BaseScheduler

    def open(self, spider: Spider) -> Any:
        self.spider = spider
        self.duplicates.open(spider)
        warn_ignored_queue_settings(self.config)
        self.crawl_scope.open(getattr(spider, "allowed_domains", None) or ())
        store, self.hosts = open_frontier(
            self.crawler, self.config, self._storage_failed, self.backlog
        )
        self.store = store
        self.known_links.bind(store, self.duplicates, self.crawl_scope)
        self.codec = RequestCodec(spider, self.stats, self.config)
        self.guards = Guards(self.config, store.variant_add, self.traps)
        self.rescorer = Rescorer(
            self.config, store, self.codec, self.hosts, self.duplicates.fingerprint, self.stats
        )
        job.restore(store, self.model, self.counters, self.traps)
        self.crawl_scope.restore(store.get_state(job.SCOPE), str(store.path))
        for host in store.hosts():
            self.hosts.place(host)
        if len(store):
            logger.info("Resuming frontier: %d pending requests in %s", len(store), store.path)
        self.stats.set_value("focus/frontier/size", len(store))
        announce_order(self.order)
        self.backlog.announce()
        if self.crawl_scope.seeds_widen:
            log_seed_scope(self.config.seed_scope)
        return self.duplicates.open_filter()

    def close(self, reason: str) -> Any:
        self._closing = True
        self.known_links.unbind()
        if self.store is not None:
            self.hosts.cancel_wake()
            self.stats.set_value("focus/frontier/size", len(self.store))
            with contextlib.suppress(StorageError):  # reported: the store keeps its last commit
                job.persist(self.store, self.model, self.counters, self.traps)
            with contextlib.suppress(StorageError):
                self.store.close()
            self.store = None
        return self.duplicates.close(reason)

    def _storage_failed(self, error: StorageError) -> None:
        self._closing = True  # nothing more is handed out
        storage_failed(self.crawler, error)

    def has_pending_requests(self) -> bool:
        return len(self) > 0

    def __len__(self) -> int:
        # Entries of held-back hosts wait for no one: the crawl may end without them.
        held = len(self.order) if self.order is not None else 0
        return len(self.store) - self.hosts.held_total + held if self.store is not None else 0

    def _store(self) -> FrontierStore:
        if self.store is None:
            raise RuntimeError("FocusScheduler used before open() or after close()")
        return self.store

    # -- enqueue

    def enqueue_request(self, request: Request) -> bool:
        output = self.outputs.take(request)
        try:
            enqueued = self._enqueue(request)
            if output is not None:
                self.output_received(output)
        except StorageError:  # reported; the crawl is stopping
            return False
        return enqueued

    def _enqueue(self, request: Request) -> bool:
        if self.order is not None and not self._closing:
            # a retry, redirect or escalation of a page in flight waits for its turn
            queued = self.order.came_back(request, functools.partial(self._admit, request))
            if queued is not None:
                return queued
        return self._admit(request)

    def _admit(self, request: Request) -> bool:
        with self._store().atomic():  # the seen mark is durable only with the entry
            return self._admit_in(request)

    def _admit_in(self, request: Request) -> bool:
        store = self._store()
        state = link_state(request)
        arrival = arrival_of(request, state, self.crawl_scope.empty)
        # The scope grows before the duplicate check: a seed seen before (a resumed
        # crawl) still says what the crawl may fetch.
        if arrival.seed and arrival.web:
            scope = self.crawl_scope.widen(request.url)
            if scope is not None:
                # In the transaction the seed's own push commits in: never one without the other.
                store.put_state(job.SCOPE, scope)
        elif arrival.web and self.crawl_scope.empty and not arrival.example:
            return self._no_scope(request)
        fingerprint = self.duplicates.fingerprint(request)
        # Only a request that skips the duplicate check (a retry, an escalation, a breaker
        # hold) is the page's own coming back; a link to it found meanwhile is not.
        came_back = self.leases.came_back(fingerprint) if request.dont_filter else None
        if came_back is not None:  # back without a response: its host's slot is free again
            self._release(came_back, network=False)
        if not self.duplicates.admit(request, store.seen_add(fingerprint)):
            self.rescorer.rediscovered(request, fingerprint, self.scope, self.model.scorer)
            return False
        host = queue_host(request.url)
        if not arrival.trusted:
            reason = self.guards.rejection(self.scope, request, host, arrival.uncounted)
            if reason is not None:
                return self._reject(reason, arrival.kind)
        score = link_score(state, arrival.seed or arrival.example, self.config, self.model.scorer)
        if score is None:  # hard focus: links of irrelevant pages are not followed
            return self._reject("hard-focus", arrival.kind)
        # A shared store queues a (dont_filter) seed once for all nodes, a retry again.
        filtered = not request.dont_filter or (arrival.seed and came_back is None)
        self._push(request, state_of(request), fingerprint, host, score, filtered)
        return True

    def _push(
        self,
        request: Request,
        state: FocusState,
        fingerprint: bytes,
        host: str,
        score: float,
        filtered: bool,
    ) -> None:
        if state.link is None:
            state.link = LinkContext(url=request.url)
        state.link.score = score
        store = self._store()
        payload = self.codec.encode(request, fingerprint)
        key = store.push(host, request.priority, score, payload, fingerprint, filtered)
        store.seen_pending(fingerprint, key)
        if (superseded := self.leases.queued_again(fingerprint)) is not None:
            store.ack(superseded)  # a retry's entry holds its page, whichever node takes it
        self.codec.count_scheduled("enqueued", payload)
        self.guards.admitted(host)
        if self.hosts.pushed(host, key):
            self.stats.inc_value("focus/frontier/held_back")
        # focus/frontier/size is set at dequeues and close: stats per enqueue cost CPU.
        self.stats.inc_value("focus/frontier/enqueued")

    def _reject(self, reason: str, kind: str) -> bool:
        self.stats.inc_value(f"focus/frontier/rejected/{reason}")
        self.stats.inc_value(f"focus/frontier/rejected_{kind}")
        return False

    def _no_scope(self, request: Request) -> bool:
        """No seed gave the crawl a scope yet: it stops rather than wander the web."""
        self.stats.inc_value("focus/frontier/rejected/no-scope")
        if not self._closing:
            log_no_scope(request.url)
            self.stop(NO_SCOPE)
        return False

    # -- dequeue

    def next_request(self) -> Request | None:
        try:
            return self._next_request()
        except StorageError:  # reported; the crawl is stopping
            return None

    def _next_request(self) -> Request | None:
        store, order = self._store(), self.order
        ordering = order is not None and order.order.ordering
        if order is not None and not order.may_dispatch():
            return None  # the evidence this dispatch is to see is not all in yet
        if self._closing or not len(store):
            return stalled(order)
        if self.backlog.full() and not ordering:  # (the gate bounds those it orders)
            return None  # the pages read so far choose the next: the engine asks again
        in_flight = order.order.in_flight if ordering else len(self.leases)
        if not self.stop_conditions.budget_left(in_flight):
            self._check_stop()  # spent already (by other nodes, by a resumed run): stop
            return stalled(order)  # else enough in flight to reach FOCUS_MAX_PAGES: no overshoot
        while (host := next_host(self.hosts, order)) is not None:
            request = self._take(host)
            if request is not None:
                return dispatched(order, request)
        if not self._closing:
            self.hosts.schedule_wake()
        return stalled(order) if len(store) == self.hosts.held_total else None

    def _take(self, host: str) -> Request | None:
        store = self._store()
        entry = store.pop(host)
        if entry is not None:
            entry = self.rescorer.taken(self.model.scorer, entry)
        if entry is None:
            self.hosts.place(host)
            return None
        request = self.codec.readable(entry, store, self.guards.trapped)
        if request is None:
            store.ack(entry.lease)
            self.hosts.place(host)
            return None
        superseded = self.leases.take(
            id(request), host, entry.lease, self.duplicates.fingerprint(request)
        )
        if superseded is not None:
            store.ack(superseded)  # an earlier request for this page came back as this one
        self.politeness.dispatched(host, id(request))
        self.hosts.place(host)
        self.stats.inc_value("focus/frontier/dequeued")
        self.codec.count_scheduled("dequeued", entry.payload)
        self.stats.set_value("focus/frontier/size", len(store))
        reason = self.stop_conditions.dequeued(entry.score)
        if reason is not None:
            self.stop(reason)
        return request

    # -- after dispatch (called by the signal handlers of :mod:`.watch`)

    def _release(self, request_id: int, network: bool = True) -> None:
        dispatch = self.leases.release(request_id)
        if dispatch is None:
            return
        if self.politeness.finished(dispatch.host, request_id, network) and self.store is not None:
            self.hosts.place(dispatch.host)

    def request_finished(self, request: Request, network: bool = True) -> None:
        self._release(id(request), network)

    def dispatched_host(self, request: Request) -> str | None:
        return self.leases.host_of(id(request))

    def page_done(self, request: Request, output: PageOutput | None) -> None:
        """A page's callback has finished (:mod:`.leases` says when its lease goes)."""
        if self.order is not None and (output is None or output.pending <= 0):
            self.order.settle(request)  # its links are all in
        if self.store is None:
            return
        lease = self.leases.page_done(self.duplicates.fingerprint(request), output)
        if lease is not None:
            with contextlib.suppress(StorageError):  # reported; the crawl is stopping
                self.store.ack(lease)

    def output_received(self, output: PageOutput) -> None:
        """One request or item of a page's output reached the frontier or its end."""
        output.pending -= 1
        if not (output.complete and output.pending <= 0) or self.store is None:
            return
        if self.order is not None:
            self.order.settle(output.request)
        fingerprint = self.duplicates.fingerprint(output.request)
        lease = self.leases.output_finished(fingerprint, output)
        if lease is not None:
            self.store.ack(lease)

    def page_fetched(self) -> None:
        self.stats.set_value("focus/pages_fetched", self.counters.add_fetched())
        self._check_stop()

    def page_scored(self, relevance: float | None) -> None:
        if relevance is not None and relevance >= self.config.relevance_threshold:
            self.counters.add_relevant()
        fetched, relevant = self.counters.fetched, self.counters.relevant
        self.stats.set_value("focus/relevant_pages", relevant)
        if fetched:
            self.stats.set_value("focus/harvest_rate", round(relevant / fetched, 4))
        scorer = self.model.scorer
        if scorer is not None and self.store is not None:
            with contextlib.suppress(StorageError):  # reported; the crawl is stopping
                self.rescorer.drifted(scorer)
        self._check_stop()

    # -- stopping

    def _check_stop(self) -> None:
        reason = self.stop_conditions.page_counted()
        if reason is not None:
            self.stop(reason)

    def stop(self, reason: str) -> None:
        if self._closing:
            return
        self._closing = True
        if self.order is not None:
            self.order.flush()
        logger.info("Stopping the crawl: %s", reason)
        close_crawl(self.crawler, self.spider, reason)
