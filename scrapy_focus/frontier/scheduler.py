"""``FocusScheduler``: the single place that decides what is fetched next.

Every request the engine schedules passes through :meth:`enqueue_request`
(seeds, links, redirect targets, retries, escalations):

1. fingerprint (canonical URL) and the seen set (kept with ``JOBDIR``), or the
   user's own ``DUPEFILTER_CLASS`` when it is not Scrapy's default;
2. scope and crawler-trap guards (:class:`~scrapy_focus.urls.Scope`, pages per
   host, query variants per path, URL patterns whose pages bring nothing new:
   :mod:`.traps`); a redirect target is checked like any link, so a redirect
   never widens the crawl;
3. a score in [0, 1] from the link's context (:mod:`.relevance`); a
   ``Request.priority`` set by the user wins over the score;
4. the store (:mod:`.store_local`), ordered per host.

:meth:`next_request` returns the best-scoring request among the hosts that are
*ready* (:mod:`.politeness`), best-first across hosts, or ``None`` while no
host is ready; it then asks the engine to call again when the first host
becomes ready, so waiting costs no CPU.

What a user yields that is not a web page to rank (a start request or a request
from a signal handler with a scheme other than http/https: ``data:``, ``file:``,
``ftp:``, an unknown one) goes to the downloader like in Scrapy, whose handlers fetch
it or fail with ``NotSupported``; links found on pages are limited to
``FOCUS_SCHEMES``.  Requests are ordered by the frontier, not by Scrapy's queue
settings (``SCHEDULER_PRIORITY_QUEUE``, ``SCHEDULER_*_QUEUE``): a start-up warning
names any the user set.  Scrapy's ``scheduler/*`` stats are kept as well.

Stop conditions (close reason in brackets): ``FOCUS_MAX_PAGES``
(``focus_max_pages``), ``FOCUS_MAX_RELEVANT_PAGES`` (``focus_max_relevant``),
``FOCUS_DEADLINE`` seconds (``focus_deadline``), and saturation: the best
frontier score below ``FOCUS_SATURATION_SCORE`` for ``FOCUS_SATURATION_PAGES``
dequeues in a row (``focus_saturated``).  A write the store cannot make (a full
disk) stops it too (``focus_storage_error``, :mod:`scrapy_focus.faults`).
"""

from __future__ import annotations

import contextlib
import heapq
import inspect
import json
import logging
import math
import pickle
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import Request, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.dupefilters import BaseDupeFilter, RFPDupeFilter
from scrapy.utils.misc import build_from_crawler, load_object

from scrapy_focus import signals as focus_signals
from scrapy_focus.faults import StorageError, storage_failed
from scrapy_focus.frontier.payload import UnsafePayload, dump_entry, load_entry, to_request
from scrapy_focus.frontier.politeness import Politeness, parse_retry_after, politeness_for
from scrapy_focus.frontier.relevance import FocusModel, LinkContext, LinkModel, model_for
from scrapy_focus.frontier.store_local import Entry, LmdbFrontierStore, decode_key, encode_key
from scrapy_focus.frontier.traps import TrapDetector
from scrapy_focus.signals import PAGE_ITEMS_KEY, PAGE_OUTPUT_KEY, PageOutput
from scrapy_focus.urls import WEB_SCHEMES, Scope, host_of, scope_entry, seed_entries

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from scrapy.utils.request import RequestFingerprinterProtocol
    from typing_extensions import Self

logger = logging.getLogger(__name__)

_FINGERPRINT_KEY = "_focus_fingerprint"  # in a stored request's dict
_MEMORY_MARK = b"\x00mem:"  # payload of a request that could not be serialised
# Scrapy's queue settings: the frontier orders requests itself and ignores them.
_QUEUE_SETTINGS = (
    "SCHEDULER_PRIORITY_QUEUE",
    "SCHEDULER_MEMORY_QUEUE",
    "SCHEDULER_DISK_QUEUE",
    "SCHEDULER_START_MEMORY_QUEUE",
    "SCHEDULER_START_DISK_QUEUE",
)
_SCOPE_STATE = "scope"  # the allowed-domain entries the seeds added, as a JSON list
NO_SCOPE = "focus_no_scope"  # the close reason of a crawl that has no scope to keep to
SEED_SCOPES = ("host", "domain", "any")


@dataclass(frozen=True)
class FrontierConfig:
    jobdir: str | None
    scope: Scope
    seed_scope: str  # "host" | "domain" | "any": what a seed adds to the allowed domains
    max_pages: int
    max_relevant_pages: int
    deadline: float
    saturation_score: float
    saturation_pages: int
    max_pages_per_host: int
    max_query_variants: int
    hard_focus: bool
    relevance_threshold: float
    rescore_drift: float
    rescore_window: int
    dupefilter_class: str
    log_unserializable: bool  # SCHEDULER_DEBUG, as Scrapy's scheduler reads it
    ignored_queue_settings: tuple[str, ...]  # Scrapy queue settings the user set
    trap_pages: int

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> FrontierConfig:
        import re

        seed_scope = settings.get("FOCUS_SEED_SCOPE", "host")
        if seed_scope not in SEED_SCOPES:
            raise ValueError(
                f"FOCUS_SEED_SCOPE must be one of {', '.join(SEED_SCOPES)}, not {seed_scope!r}"
            )
        try:
            allowed = Scope(allowed_domains=tuple(settings.getlist("FOCUS_ALLOWED_DOMAINS")))
        except ValueError as exc:
            raise ValueError(f"FOCUS_ALLOWED_DOMAINS: {exc}") from None
        return cls(
            jobdir=settings.get("JOBDIR") or None,
            scope=Scope(
                allowed_domains=allowed.allowed_domains,
                allowed_paths=tuple(settings.getlist("FOCUS_ALLOWED_PATHS")),
                denied=tuple(re.compile(p) for p in settings.getlist("FOCUS_DENY")),
                schemes=tuple(settings.getlist("FOCUS_SCHEMES") or WEB_SCHEMES),
                max_depth=settings.getint("FOCUS_MAX_DEPTH") or settings.getint("DEPTH_LIMIT"),
                max_url_length=settings.getint("FOCUS_MAX_URL_LENGTH", 2048),
                max_repeated_segment=settings.getint("FOCUS_MAX_REPEATED_SEGMENT", 2),
                max_query_params=settings.getint("FOCUS_MAX_QUERY_PARAMS", 12),
            ),
            seed_scope=seed_scope,
            max_pages=settings.getint("FOCUS_MAX_PAGES"),
            max_relevant_pages=settings.getint("FOCUS_MAX_RELEVANT_PAGES"),
            deadline=settings.getfloat("FOCUS_DEADLINE"),
            saturation_score=settings.getfloat("FOCUS_SATURATION_SCORE"),
            saturation_pages=settings.getint("FOCUS_SATURATION_PAGES"),
            max_pages_per_host=settings.getint("FOCUS_MAX_PAGES_PER_HOST"),
            max_query_variants=settings.getint("FOCUS_MAX_QUERY_VARIANTS", 200),
            hard_focus=settings.getbool("FOCUS_HARD_FOCUS"),
            relevance_threshold=settings.getfloat("FOCUS_RELEVANCE_THRESHOLD", 0.5),
            rescore_drift=settings.getfloat("FOCUS_RESCORE_DRIFT", 2.0),
            rescore_window=settings.getint("FOCUS_RESCORE_WINDOW", 2000),
            dupefilter_class=settings.get("DUPEFILTER_CLASS") or "",
            log_unserializable=settings.getbool("SCHEDULER_DEBUG"),
            ignored_queue_settings=tuple(
                name for name in _QUEUE_SETTINGS if (settings.getpriority(name) or 0) > 0
            ),
            trap_pages=settings.getint("FOCUS_TRAP_PAGES", 20),
        )


class FocusScheduler(BaseScheduler):
    def __init__(self, crawler: Crawler, config: FrontierConfig) -> None:
        self.crawler = crawler
        self.config = config
        self.stats = crawler.stats
        self.model: FocusModel = model_for(crawler)
        self.politeness: Politeness = politeness_for(crawler)
        self.scope = config.scope
        self.traps = TrapDetector(config.trap_pages) if config.trap_pages else None
        self.store: LmdbFrontierStore | None = None
        self.spider: Spider | None = None
        self._memory: dict[int, Request] = {}
        # Hosts with pending entries sit in exactly one heap: ready (by their best
        # entry) or waiting (by when they become ready).  Re-placing a host bumps
        # its generation; heap entries of an older generation are skipped.
        self._ready: list[tuple[bytes, int, str]] = []  # (best key sans host, gen, host)
        self._waiting: list[tuple[float, int, str]] = []  # (ready at, gen, host)
        self._gen: dict[str, int] = {}
        self._best: dict[str, bytes | None] = {}
        # id(request) → (host, lease, fingerprint) of the requests handed out and not done
        self._dispatched: dict[int, tuple[str, bytes, bytes]] = {}
        self._dispatched_pages: dict[bytes, int] = {}  # fingerprint → id(request) in flight
        self._leases: dict[bytes, bytes] = {}  # fingerprint → lease key
        # fingerprint → the output of a page whose callback has finished but whose
        # requests have not all reached enqueue_request yet: its lease waits for them
        self._awaiting: dict[bytes, PageOutput] = {}
        self._host_pages: Counter[str] = Counter()
        self._method_names: dict[Any, str] = {}  # spider method function -> its name
        self._fetched = 0
        self._relevant = 0
        self._low_streak = 0
        self._started = time.monotonic()
        self._wake_call: Any = None
        self._closing = False
        self._drift_mark = 0.0
        self._seeds_widen_scope = False
        self.fingerprinter: RequestFingerprinterProtocol | None = None
        # None: the frontier's seen set is the dupefilter (DUPEFILTER_CLASS is Scrapy's
        # RFPDupeFilter); else the user's own, asked about every request.
        self.dupefilter: BaseDupeFilter | None = None
        self._duplicate_log: BaseDupeFilter | None = None  # logs and counts as Scrapy's
        self._log_unserializable = config.log_unserializable
        self._seed_entries: list[str] = []  # what the seeds added to the scope, persisted
        # host → its entries set aside: the host asked for more than FOCUS_MAX_HOST_DELAY
        self._held: dict[str, int] = {}
        self._held_total = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        scheduler = cls(crawler, FrontierConfig.from_settings(crawler.settings))
        crawler.signals.connect(scheduler._page_scored, signal=focus_signals.page_scored)
        crawler.signals.connect(scheduler._page_done, signal=focus_signals.page_done)
        crawler.signals.connect(scheduler._reached, signal=signals.request_reached_downloader)
        crawler.signals.connect(scheduler._left, signal=signals.request_left_downloader)
        crawler.signals.connect(scheduler._response, signal=signals.response_received)
        crawler.signals.connect(scheduler._downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(scheduler._dropped, signal=signals.request_dropped)
        crawler.signals.connect(scheduler._item_done, signal=signals.item_scraped)
        crawler.signals.connect(scheduler._item_done, signal=signals.item_dropped)
        crawler.signals.connect(scheduler._item_failed, signal=signals.item_error)
        return scheduler

    # -- BaseScheduler

    def open(self, spider: Spider) -> Any:
        self.spider = spider
        self.fingerprinter = self._find_fingerprinter()
        self._open_dupefilter()
        for name in self.config.ignored_queue_settings:
            logger.warning(
                "%s is set, but FocusScheduler orders requests itself (best score first, "
                "Request.priority above all): the setting is ignored. Disable the frontier "
                "(FOCUS_FRONTIER_ENABLED = False) to keep Scrapy's queues.",
                name,
            )
        # Scope: FOCUS_ALLOWED_DOMAINS, else the spider's allowed_domains, else
        # the seeds' hosts (FOCUS_SEED_SCOPE = "host" | "domain"; "any": no limit).
        if not self.scope.allowed_domains:
            self.scope = self.scope.with_entries(
                _valid_entries(getattr(spider, "allowed_domains", None) or (), "allowed_domains")
            )
        self._seeds_widen_scope = not self.scope.allowed_domains and self.config.seed_scope != "any"
        directory = Path(self.config.jobdir, "focus-frontier") if self.config.jobdir else None
        self.store = LmdbFrontierStore(directory, on_error=self._storage_failed)
        self._restore()
        # What the seeds of the first run added: a resumed crawl keeps to the same
        # scope whether or not its seeds come again (dropped as duplicates, or none).
        if self._seed_entries:
            self.scope = self.scope.with_entries(self._seed_entries)
        for host in self.store.hosts():
            self._place(host)
        resumed = len(self.store)
        if resumed:
            logger.info("Resuming frontier: %d pending requests in %s", resumed, self.store.path)
        self.stats.set_value("focus/frontier/size", len(self.store))
        if self._seeds_widen_scope:
            logger.info(
                "No allowed domains (FOCUS_ALLOWED_DOMAINS, spider.allowed_domains): the "
                "crawl stays on its seeds' %s (FOCUS_SEED_SCOPE = %r), and links and "
                "redirects to other hosts are dropped, where Scrapy would follow them. "
                'FOCUS_SEED_SCOPE = "any" follows them.',
                "registrable domains" if self.config.seed_scope == "domain" else "hosts",
                self.config.seed_scope,
            )
        return self.dupefilter.open() if self.dupefilter is not None else None

    def _find_fingerprinter(self) -> RequestFingerprinterProtocol:
        """The crawler's fingerprinter; one built from its settings when the crawler
        has none yet (a scheduler opened outside a crawl, as Scrapy's tests do)."""
        try:
            return self.crawler.request_fingerprinter
        except (AttributeError, RuntimeError):
            cls = load_object(self.crawler.settings["REQUEST_FINGERPRINTER_CLASS"])
            return build_from_crawler(cls, self.crawler)

    def _open_dupefilter(self) -> None:
        cls = load_object(self.config.dupefilter_class) if self.config.dupefilter_class else None
        debug = self.crawler.settings.getbool("DUPEFILTER_DEBUG")
        # Scrapy's default dupefilter would hold a second seen set (in memory, and in
        # JOBDIR/requests.seen): the frontier's is the same set, on disk.  One without
        # a path only logs and counts duplicates, as the default does.
        self._duplicate_log = RFPDupeFilter(debug=debug, fingerprinter=self.fingerprinter)
        if cls is None or cls is RFPDupeFilter:
            return
        self.dupefilter = build_from_crawler(cls, self.crawler)
        self._duplicate_log = self.dupefilter

    def _fingerprint(self, request: Request) -> bytes:
        if self.fingerprinter is None:
            raise RuntimeError("FocusScheduler used before open()")
        return self.fingerprinter.fingerprint(request)

    def close(self, reason: str) -> Any:
        self._closing = True
        if self._wake_call is not None and self._wake_call.active():
            self._wake_call.cancel()
        if self.store is not None:
            self.stats.set_value("focus/frontier/size", len(self.store))
            with contextlib.suppress(StorageError):  # reported: the store keeps its last commit
                self._persist()
            with contextlib.suppress(StorageError):
                self.store.close()
            self.store = None
        return self.dupefilter.close(reason) if self.dupefilter is not None else None

    def _storage_failed(self, error: StorageError) -> None:
        self._closing = True  # nothing more is handed out
        storage_failed(self.crawler, error)

    def has_pending_requests(self) -> bool:
        # Entries of held-back hosts wait for no one: the crawl may end without them.
        return len(self) > 0

    def __len__(self) -> int:
        return len(self.store) - self._held_total if self.store is not None else 0

    def enqueue_request(self, request: Request) -> bool:
        output = request.meta.pop(PAGE_OUTPUT_KEY, None)
        request.meta.pop(PAGE_ITEMS_KEY, None)  # the page's own, if it comes back
        try:
            enqueued = self._enqueue(request)
            if output is not None:
                self._received(output)
        except StorageError:  # reported; the crawl is stopping
            return False
        return enqueued

    def _enqueue(self, request: Request) -> bool:
        store = self._store()
        meta = request.meta
        redirected = "redirect_urls" in meta
        example = bool(meta.get("focus_example"))  # a topic example: fetched, never a seed
        # A page the corpus sends back is a seed only of a crawl that has no other
        # (a re-crawl of the corpus alone); else it keeps to this crawl's scope.
        requeued = "focus_requeue" in meta and not redirected
        seed = ("depth" not in meta and "focus" not in meta and not redirected and not example) or (
            requeued and self._seeds_widen_scope and not self.scope.allowed_domains
        )
        # A user's request for something other than a web page (data:, file:, ftp:,
        # an unknown scheme) is the downloader's to fetch or refuse, as in Scrapy.
        web = urlsplit(request.url).scheme in WEB_SCHEMES
        # The scope grows before the duplicate check: a seed seen before (a resumed
        # crawl) still says what the crawl may fetch.
        if seed and web:
            self._widen_scope(request.url)
        elif web and self._seeds_widen_scope and not self.scope.allowed_domains and not example:
            return self._no_scope(request)
        fingerprint = self._fingerprint(request)
        # Every request marks its page seen (seeds and re-fetches too, so a link
        # to them later is a duplicate); only dont_filter skips the check.
        if fingerprint in self._dispatched_pages:
            # The page's dispatched request came back as this one (retry, escalation,
            # breaker hold) without a response: its per-host slot is free again.
            self._release(self._dispatched_pages.pop(fingerprint), network=False)
        new = store.seen_add(fingerprint)
        if self.dupefilter is not None:
            new = request.dont_filter or not self.dupefilter.request_seen(request)
        if not new and not request.dont_filter:
            self.stats.inc_value("focus/frontier/duplicate")
            if self._duplicate_log is not None and self.spider is not None:
                self._duplicate_log.log(request, self.spider)
            self._rediscovered(request, fingerprint)
            return False
        host = _queue_host(request.url)
        # A topic example is the user's own URL; a re-issue of an admitted request
        # (retry, escalation, corpus re-fetch) is checked against the scope again
        # but not counted again by the trap guards.
        uncounted = seed or (bool(meta.get("focus_refresh")) and not redirected)
        trusted = (example and not redirected) or (seed and not web)
        reason = None if trusted else self._rejection(request, host, uncounted)
        if reason is not None:
            return self._reject(reason, redirected)
        score = self._score(request, seed or example)
        if score is None:  # hard focus: links of irrelevant pages are not followed
            return self._reject("hard-focus", redirected)
        focus = dict(meta.get("focus") or {})
        focus["score"] = score
        meta["focus"] = focus
        payload = self._serialize(request, fingerprint)
        key = store.push(host, request.priority, score, payload)
        store.seen_pending(fingerprint, key)
        self._count_scheduled("enqueued", payload)
        self._host_pages[host] += 1
        if host in self._held:
            self._held[host] += 1
            self._held_total += 1
            self.stats.inc_value("focus/frontier/held_back")
            self.stats.inc_value("focus/frontier/enqueued")
            return True
        best = self._best.get(host)
        if best is None or key < best:
            self._place(host)  # new host, or a better best entry: re-rank it
        # focus/frontier/size follows dequeues and close, not every enqueue: in a
        # py-spy profile of enqueue, the two stats calls per request took 10%.
        self.stats.inc_value("focus/frontier/enqueued")
        return True

    def next_request(self) -> Request | None:
        try:
            return self._next_request()
        except StorageError:  # reported; the crawl is stopping
            return None

    def _next_request(self) -> Request | None:
        store = self._store()
        if self._closing or not len(store):
            return None
        if self.config.max_pages and self._fetched + len(self._dispatched) >= (
            self.config.max_pages
        ):
            return None  # enough in flight to reach FOCUS_MAX_PAGES: no overshoot
        now = self.politeness.clock()
        while self._waiting and self._waiting[0][0] <= now:
            _, gen, host = heapq.heappop(self._waiting)
            if gen == self._gen.get(host):
                self._place(host)
        while self._ready:
            _, gen, host = heapq.heappop(self._ready)
            if gen != self._gen.get(host):
                continue  # superseded by a later placement
            if not self.politeness.is_ready(host):
                self._place(host)
                continue
            request = self._take(host)
            if request is not None:
                self._check_stop_on_dequeue()
                return request
        self._schedule_wake()
        return None

    # -- enqueue helpers

    def _reject(self, reason: str, redirected: bool) -> bool:
        kind = "redirect" if redirected else "link"
        self.stats.inc_value(f"focus/frontier/rejected/{reason}")
        self.stats.inc_value(f"focus/frontier/rejected_{kind}")
        return False

    def _widen_scope(self, url: str) -> None:
        if self._seeds_widen_scope:
            entries = seed_entries(url, self.config.seed_scope)
        elif self.scope.allowed_domains and self.scope.admits_host(_default_port(url)):
            entries = seed_entries(url, "port")  # a seed of an allowed host: its port too
        else:
            return
        new = [entry for entry in entries if entry not in self.scope.allowed_domains]
        if new:
            self.scope = self.scope.with_entries(new)
            self._seed_entries.extend(new)
            # In the transaction the seed's own push commits in: never one without the other.
            self._store().put_state(_SCOPE_STATE, json.dumps(self._seed_entries).encode())

    def _no_scope(self, request: Request) -> bool:
        """A request arrived before any seed gave the crawl a scope: everything
        would be in scope.  The crawl stops rather than wander the web."""
        self.stats.inc_value("focus/frontier/rejected/no-scope")
        if not self._closing:
            logger.error(
                "No scope to check %s against: no FOCUS_ALLOWED_DOMAINS, no allowed_domains "
                "on the spider, and no seed (a start request) came first.  Give the crawl a "
                'seed or allowed domains, or set FOCUS_SEED_SCOPE = "any" to crawl any host.',
                request.url,
            )
            self._stop(NO_SCOPE)
        return False

    def _rejection(self, request: Request, host: str, uncounted: bool) -> str | None:
        reason = self.scope.rejection(request.url, request.meta.get("depth", 0))
        if reason is not None or uncounted:
            return reason
        if self.config.max_pages_per_host and (
            self._host_pages[host] >= self.config.max_pages_per_host
        ):
            return "max-pages-per-host"
        parts = urlsplit(request.url)
        # Query strings per path are counted on disk: no set per path in memory.
        if (
            parts.query
            and self.config.max_query_variants
            and not self._store().variant_add(
                f"{host}{parts.path}", parts.query, self.config.max_query_variants
            )
        ):
            return "trap-query-variants"
        if self.traps is not None and self.traps.trapped(request.url):
            return "trap-stale-content"
        return None

    def _rediscovered(self, request: Request, fingerprint: bytes) -> None:
        """A link to a page still waiting in the frontier, found again.  If this
        context scores it higher (a page on the topic links to it, where it was
        first found on an index of everything), the entry moves up, and takes
        this context with it; it never moves down."""
        focus = request.meta.get("focus")
        if not focus or not focus.get("parent_url"):
            return
        if self.scope.rejection(request.url, request.meta.get("depth", 0)) is not None:
            return  # this way to the page is out of scope (too deep): it keeps the other
        store = self._store()
        old_key = store.pending_key(fingerprint)
        if old_key is None:
            return  # fetched already, or taken
        score = self._score(request, seed=False)
        _, old_priority, old_score, _ = decode_key(old_key)
        if score is None or request.priority != old_priority or score <= old_score:
            return
        request.meta["focus"] = {**focus, "score": score}
        host = _queue_host(request.url)
        replaced = store.replace(
            old_key, host, request.priority, score, self._serialize(request, fingerprint)
        )
        if replaced is None:
            return
        key, old_payload = replaced
        if old_payload.startswith(_MEMORY_MARK):
            self._memory.pop(int(old_payload[len(_MEMORY_MARK) :]), None)
        store.seen_pending(fingerprint, key)
        self._place(host)
        self.stats.inc_value("focus/frontier/raised")

    def _count_scheduled(self, direction: str, payload: bytes) -> None:
        """Scrapy's own scheduler stats (``scheduler/enqueued/disk``...), which
        dashboards watch: "disk" is what a resumed JOBDIR crawl gets back."""
        kept = "memory" if payload.startswith(_MEMORY_MARK) or not self.config.jobdir else "disk"
        self.stats.inc_value(f"scheduler/{direction}")
        self.stats.inc_value(f"scheduler/{direction}/{kept}")

    def _score(self, request: Request, seed: bool) -> float | None:
        focus = request.meta.get("focus")
        if seed or not focus:
            return 1.0
        if not focus.get("parent_url"):
            # A seed coming back (retried, escalated, held): it keeps its score.
            return float(focus.get("score", 1.0))
        link = LinkContext.from_meta(focus)
        if (
            self.config.hard_focus
            and link.parent_relevance is not None
            and (link.parent_relevance < self.config.relevance_threshold)
        ):
            return None
        if self.model.scorer is not None:
            return self.model.scorer.score(link).score
        breadth = 1.0 / (1.0 + link.depth)
        if link.parent_relevance is None:
            return breadth  # no topic, no classifier: breadth-first
        # A page classifier without a topic: links inherit their page's relevance.
        return 0.8 * link.parent_relevance + 0.2 * breadth

    def _serialize(self, request: Request, fingerprint: bytes) -> bytes:
        try:
            data = self._to_dict(request)
            # Kept with the entry so that moving it (re-scoring) needs no Request
            # rebuilt to find its fingerprint; request_from_dict ignores the key.
            data[_FINGERPRINT_KEY] = fingerprint
            return dump_entry(data)
        except (ValueError, TypeError, AttributeError, pickle.PicklingError) as error:
            # A callback that is not a spider method cannot go to disk (as with
            # Scrapy's own JOBDIR queues): keep this one request in memory.
            self.stats.inc_value("focus/frontier/unserializable")
            self.stats.inc_value("scheduler/unserializable")
            if self._log_unserializable:  # SCHEDULER_DEBUG: the first one, as Scrapy does
                logger.warning(
                    "Unable to serialize request: %(request)s - reason: %(reason)s - no "
                    "more unserializable requests will be logged (stats being collected)",
                    {"request": request, "reason": error},
                    exc_info=True,
                )
                self._log_unserializable = False
            self._memory[id(request)] = request
            return _MEMORY_MARK + str(id(request)).encode()

    def _to_dict(self, request: Request) -> dict[str, Any]:
        """What ``request.to_dict(spider=self.spider)`` returns, with each callback's
        name looked up once per method: Scrapy searches the spider's members
        (``inspect.getmembers``) for every request, 30% of an enqueue."""
        data = {
            "url": request.url,
            "callback": self._method_name(request.callback),
            "errback": self._method_name(request.errback),
            "headers": dict(request.headers),
        }
        for attr in request.attributes:
            data.setdefault(attr, getattr(request, attr))
        if type(request) is not Request:
            data["_class"] = f"{type(request).__module__}.{type(request).__name__}"
        return data

    def _method_name(self, func: Any) -> Any:
        """The name of the spider method *func* (a ValueError if it is none), as
        Scrapy's ``Request.to_dict`` finds it; anything not callable as it is."""
        if not callable(func):
            return func
        underlying = getattr(func, "__func__", None)
        if underlying is None:
            raise ValueError(f"Function {func} is not an instance method in: {self.spider}")
        name = self._method_names.get(underlying)
        if name is None:
            for member_name, member in inspect.getmembers(self.spider, inspect.ismethod):
                if member.__func__ is underlying:
                    name = self._method_names[underlying] = member_name
                    break
            else:
                raise ValueError(f"Function {func} is not an instance method in: {self.spider}")
        return name

    def _deserialize(self, payload: bytes) -> Request:
        if payload.startswith(_MEMORY_MARK):
            return self._memory.pop(int(payload[len(_MEMORY_MARK) :]))
        return to_request(load_entry(payload), self.spider)

    # -- dequeue helpers

    def _take(self, host: str) -> Request | None:
        store = self._store()
        entry = store.pop(host)
        if entry is None:
            self._place(host)
            return None
        entry = self._lazy_rescore(entry)
        if entry is None:
            return None
        try:
            request = self._deserialize(entry.payload)
        except Exception:
            logger.exception("Frontier dropped an entry of %s it could not read back", host)
            store.ack(entry.lease)
            self.stats.inc_value("focus/frontier/unreadable")
            self._place(host)
            return None
        if self.traps is not None and self.traps.trapped(request.url):
            # queued before its pattern turned out to be a trap
            store.ack(entry.lease)
            self.stats.inc_value("focus/frontier/rejected/trap-stale-content")
            self.stats.inc_value("focus/traps/dropped_queued")
            self._place(host)
            return None
        fingerprint = self._fingerprint(request)
        superseded = self._leases.pop(fingerprint, None)
        if superseded is not None:
            store.ack(superseded)  # an earlier request for this page came back as this one
        self._leases[fingerprint] = entry.lease
        self._dispatched[id(request)] = (host, entry.lease, fingerprint)
        self._dispatched_pages[fingerprint] = id(request)
        self.politeness.dispatched(host, id(request))
        self._place(host)
        self.stats.inc_value("focus/frontier/dequeued")
        self._count_scheduled("dequeued", entry.payload)
        self.stats.set_value("focus/frontier/size", len(store))
        self._observe_best(entry.score)
        return request

    def _lazy_rescore(self, entry: Entry) -> Entry | None:
        """Re-score a dequeued entry with the current link model; if it fell
        below the host's next entry, put it back and take the next one later."""
        scorer = self.model.scorer
        if scorer is None or entry.priority != 0 or scorer.model.updates == 0:
            return entry
        if entry.payload.startswith(_MEMORY_MARK):
            return entry
        try:
            data = load_entry(entry.payload)
        except UnsafePayload:
            return entry  # _take finds it unreadable and drops it
        focus = data.get("meta", {}).get("focus")
        if not focus or not focus.get("parent_url"):
            return entry
        new = scorer.score(LinkContext.from_meta(focus)).score
        following = self._store().best(entry.host)
        if following is not None and new + 0.05 < decode_key(following)[2]:
            key = self._store().requeue(entry, new)
            self._store().seen_pending(self._fingerprint_of(data), key)
            self.stats.inc_value("focus/frontier/rescored")
            self._place(entry.host)
            return None
        return entry

    def _fingerprint_of(self, data: dict[str, Any]) -> bytes:
        """The fingerprint of a stored request (a moved entry's new key is noted under it)."""
        if _FINGERPRINT_KEY in data:
            return data[_FINGERPRINT_KEY]
        request = to_request(data, self.spider)
        return self._fingerprint(request)

    def _place(self, host: str) -> None:
        """(Re-)place *host* in the ready or the waiting heap by its best entry."""
        gen = self._gen.get(host, 0) + 1
        self._gen[host] = gen
        if host in self._held:
            return  # set aside for the rest of the crawl
        best = self._store().best(host)
        self._best[host] = best
        if best is None:
            return  # nothing pending: in no heap until a push places it again
        held = self.politeness.held_back(host)
        if held is not None:
            self._hold(host, held)
            return
        ready_at = self.politeness.ready_at(host)
        if ready_at <= self.politeness.clock():
            heapq.heappush(self._ready, (best[4:], gen, host))
            return
        if ready_at == math.inf:
            # Every slot of the host is busy: a finishing request re-places it;
            # look again after the in-flight timeout in case none reports back.
            ready_at = self.politeness.clock() + self.politeness.config.in_flight_timeout
        heapq.heappush(self._waiting, (ready_at, gen, host))

    def _hold(self, host: str, why: str) -> None:
        """Set *host*'s pending entries aside: they stay in the frontier (with
        JOBDIR, for a later run) but the crawl no longer waits for them."""
        count = self._store().count_host(host)
        self._held[host] = count
        self._held_total += count
        self._best.pop(host, None)
        self.stats.inc_value("focus/politeness/held_back")
        self.stats.inc_value("focus/frontier/held_back", count)
        logger.warning(
            "Holding back %s: %s, over FOCUS_MAX_HOST_DELAY (%gs); its %d pending "
            "request(s) are not fetched in this crawl",
            host,
            why,
            self.politeness.config.max_host_delay,
            count,
        )

    def _schedule_wake(self) -> None:
        """Ask the engine to call next_request() when the first waiting host is ready."""
        if not self._waiting or self._closing:
            return
        delay = max(0.0, self._waiting[0][0] - self.politeness.clock())
        from twisted.internet import reactor

        if self._wake_call is not None and self._wake_call.active():
            if self._wake_call.getTime() <= reactor.seconds() + delay:
                return
            self._wake_call.cancel()
        self._wake_call = reactor.callLater(delay + 0.001, self._wake)

    def _wake(self) -> None:
        engine = self.crawler.engine
        slot = getattr(engine, "_slot", None) if engine is not None else None
        if slot is not None:
            slot.nextcall.schedule()  # the engine's own "try to send more" call

    # -- what happens to requests after dispatch (signals)

    def _finished(self, request: Request, network: bool = True) -> None:
        self._release(id(request), network)

    def _release(self, request_id: int, network: bool = True) -> None:
        dispatched = self._dispatched.pop(request_id, None)
        if dispatched is None:
            return
        host, _, fingerprint = dispatched
        if self._dispatched_pages.get(fingerprint) == request_id:
            del self._dispatched_pages[fingerprint]
        if self.politeness.finished(host, request_id, network) and self.store is not None:
            self._place(host)

    def _reached(self, request: Request, spider: Spider | None = None) -> None:
        if id(request) in self._dispatched:
            self.politeness.reached_downloader(self._dispatched[id(request)][0])

    def _left(self, request: Request, spider: Spider | None = None) -> None:
        dispatched = self._dispatched.get(id(request))
        self.politeness.left_downloader(dispatched[0] if dispatched else host_of(request.url))
        self._finished(request)

    def _dropped(self, request: Request, spider: Spider | None = None) -> None:
        self._finished(request)

    def _downloaded(
        self, response: Response, request: Request, spider: Spider | None = None
    ) -> None:
        """Every network response, before any middleware retries or escalates it:
        the one place that backs a host off (429/503, Retry-After honoured)."""
        host = host_of(request.url)
        if response.status == 429 or (
            response.status == 503 and b"Retry-After" in response.headers
        ):
            wait = self.politeness.retry_after(
                host, parse_retry_after(response.headers.get(b"Retry-After"))
            )
            if wait != math.inf:  # else held back, and _place says so
                self.stats.inc_value("focus/politeness/backoff")
                logger.info("Backing off %s for %.1fs after HTTP %d", host, wait, response.status)
        elif response.status < 400:
            self.politeness.recovered(host)

    def _response(self, response: Response, request: Request, spider: Spider | None = None) -> None:
        self._finished(request, network="cached" not in response.flags)
        host = host_of(request.url)
        if "cached" not in response.flags:
            self.stats.inc_value(f"focus/host/{host}/requests")
        if not 300 <= response.status < 400:
            self._fetched += 1
            self.stats.set_value("focus/pages_fetched", self._fetched)
            self._check_stop()

    def _page_done(self, request: Request, output: PageOutput | None = None) -> None:
        """A page's callback has finished.  Its lease goes when every request it
        yielded is in the frontier, never before: Scrapy's scraper buffers a
        callback's output and enqueues it later, and an acknowledgement committed
        ahead of those pushes would lose them to a kill in between."""
        if self.store is None:
            return
        fingerprint = self._fingerprint(request)
        if output is not None and output.pending > 0:
            self._awaiting[fingerprint] = output  # the last of them to arrive acknowledges
        elif fingerprint not in self._awaiting and not (output is not None and output.failed):
            with contextlib.suppress(StorageError):  # reported; the crawl is stopping
                self._ack(fingerprint)

    def _item_done(self, item: Any, response: Response, spider: Spider | None = None) -> None:
        output = response.meta.get(PAGE_ITEMS_KEY) if response is not None else None
        if output is not None:
            with contextlib.suppress(StorageError):  # reported; the crawl is stopping
                self._received(output)

    def _item_failed(self, item: Any, response: Response, **kwargs: Any) -> None:
        output = response.meta.get(PAGE_ITEMS_KEY) if response is not None else None
        if output is not None:
            output.failed = True  # the page keeps its lease: a resumed crawl reads it again
            with contextlib.suppress(StorageError):  # reported; the crawl is stopping
                self._received(output)

    def _received(self, output: PageOutput) -> None:
        output.pending -= 1
        if output.complete and output.pending <= 0:
            fingerprint = self._fingerprint(output.request)
            if self._awaiting.get(fingerprint) is output:  # not a later response's output
                del self._awaiting[fingerprint]
                if not output.failed:
                    self._ack(fingerprint)

    def _ack(self, fingerprint: bytes) -> None:
        lease = self._leases.pop(fingerprint, None)
        if lease is not None:
            self.store.ack(lease)  # both callers run with the store open

    def _page_scored(self, response: Response, relevance: float | None) -> None:
        self._observe_content(response)
        if relevance is not None and relevance >= self.config.relevance_threshold:
            self._relevant += 1
        self.stats.set_value("focus/relevant_pages", self._relevant)
        if self._fetched:
            self.stats.set_value("focus/harvest_rate", round(self._relevant / self._fetched, 4))
        with contextlib.suppress(StorageError):  # reported; the crawl is stopping
            self._maybe_rescore()
        self._check_stop()

    def _observe_content(self, response: Response) -> None:
        """Teach the trap detector what this page served (its extracted text)."""
        extraction = response.meta.get("focus_extraction")
        if self.traps is None or extraction is None or extraction.skipped:
            return
        text = " ".join((extraction.title or "", *extraction.headings, extraction.text))
        pattern = self.traps.observe(response.url, text)
        if pattern is not None:
            self.stats.inc_value("focus/traps/patterns")
            logger.info(
                "Crawler trap: %d pages of %s in a row brought almost no new text; "
                "no more of its URLs are fetched (FOCUS_TRAP_PAGES = %d)",
                self.config.trap_pages,
                pattern,
                self.config.trap_pages,
            )

    # -- stopping

    def _observe_best(self, score: float) -> None:
        if self.config.saturation_pages and self.config.saturation_score:
            if score < self.config.saturation_score:
                self._low_streak += 1
            else:
                self._low_streak = 0

    def _check_stop_on_dequeue(self) -> None:
        if self.config.saturation_pages and self._low_streak >= self.config.saturation_pages:
            self._stop("focus_saturated")
        if self.config.deadline and time.monotonic() - self._started >= self.config.deadline:
            self._stop("focus_deadline")

    def _check_stop(self) -> None:
        if self.config.max_pages and self._fetched >= self.config.max_pages:
            self._stop("focus_max_pages")
        elif self.config.max_relevant_pages and self._relevant >= self.config.max_relevant_pages:
            self._stop("focus_max_relevant")
        elif self.config.deadline and time.monotonic() - self._started >= self.config.deadline:
            self._stop("focus_deadline")

    def _stop(self, reason: str) -> None:
        if self._closing:
            return
        self._closing = True
        logger.info("Stopping the crawl: %s", reason)
        engine = self.crawler.engine
        if engine is None:
            return
        if hasattr(engine, "close_spider_async"):  # Scrapy >= 2.14
            from scrapy.utils.defer import deferred_from_coro

            deferred_from_coro(engine.close_spider_async(reason=reason))
        else:
            engine.close_spider(self.spider, reason)

    # -- re-scoring and persistence

    def _maybe_rescore(self) -> None:
        scorer = self.model.scorer
        if scorer is None or self.store is None:
            return
        if scorer.model.drift - self._drift_mark < self.config.rescore_drift:
            return
        self._drift_mark = scorer.model.drift
        changed = 0
        store = self.store
        per_host = max(1, self.config.rescore_window // max(1, len(self._best)))
        for host in list(self._best):
            entries = store.iter_host(host, per_host)
            moves: list[tuple[bytes, bytes]] = []
            payloads: dict[bytes, bytes] = {}
            moved: list[tuple[dict[str, Any], bytes]] = []
            for key, payload in entries:
                if payload.startswith(_MEMORY_MARK):
                    continue
                _, priority, old_score, _ = decode_key(key)
                try:
                    data = load_entry(payload)
                except UnsafePayload:
                    continue  # unreadable: dropped when its host's turn comes
                focus = data.get("meta", {}).get("focus")
                if priority != 0 or not focus or not focus.get("parent_url"):
                    continue
                new_score = scorer.score(LinkContext.from_meta(focus)).score
                if abs(new_score - old_score) > 0.02:
                    new_key = encode_key(store.host_id(host), priority, new_score, store.next_seq())
                    moves.append((key, new_key))
                    payloads[key] = payload
                    moved.append((data, new_key))
            if moves:
                store.rekey(moves, payloads)
                for data, new_key in moved:
                    store.seen_pending(self._fingerprint_of(data), new_key)
                changed += len(moves)
                self._place(host)
        self.stats.inc_value("focus/frontier/rescored", changed)

    def _restore(self) -> None:
        raw = self._store().get_state("link_model")
        if raw and self.model.scorer is not None:
            try:
                self.model.scorer.model = LinkModel.from_bytes(raw)
            except ValueError:  # from_bytes says so for anything it cannot read
                logger.warning("Could not restore the link model; starting a new one")
        scope = self._store().get_state(_SCOPE_STATE)
        if scope:
            try:
                entries = json.loads(scope)
            except ValueError:
                entries = None
            if not isinstance(entries, list):
                # Going on would crawl with less scope than the first run had.
                raise ValueError(
                    f"The frontier in {self._store().path} holds a scope it cannot read; "
                    "resume from a copy of the job directory or start a new one"
                )
            self._seed_entries = _valid_entries(entries, "the frontier's stored scope")
        counters = self._store().get_state("counters")
        if counters:
            self._fetched, self._relevant = (int(x) for x in counters.split(b","))
        traps = self._store().get_state("traps")
        if traps and self.traps is not None:
            self.traps.traps.update(json.loads(traps))

    def _persist(self) -> None:
        store = self._store()
        if self.model.scorer is not None and isinstance(self.model.scorer.model, LinkModel):
            store.put_state("link_model", self.model.scorer.model.to_bytes())
        store.put_state("counters", f"{self._fetched},{self._relevant}".encode())
        if self.traps is not None:
            store.put_state("traps", json.dumps(sorted(self.traps.traps)).encode())

    def _store(self) -> LmdbFrontierStore:
        if self.store is None:
            raise RuntimeError("FocusScheduler used before open() or after close()")
        return self.store


def _queue_host(url: str) -> str:
    """The host a request is queued and kept polite under: a URL without one
    (``data:``, ``file:``) shares one per scheme, as Scrapy's downloader slots do."""
    return host_of(url) or urlsplit(url).scheme + ":"


def _valid_entries(entries: Any, where: str) -> list[str]:
    """The entries that are a domain or domain:port, each canonical; a warning for the others."""
    valid = []
    for entry in entries:
        try:
            valid.append(scope_entry(entry))
        except (ValueError, TypeError, AttributeError):
            logger.warning("Ignoring %r in %s: not a domain or domain:port", entry, where)
    return valid


def _default_port(url: str) -> str:
    """*url* without its port: is its host in scope on the default ports?"""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return parts._replace(netloc=f"[{host}]" if ":" in host else host).geturl()
