"""``EngineLadderMiddleware``: start with the cheapest engine that works, escalate when not.

A downloader middleware placed below ``ExtractionMiddleware`` (it reads the
extraction to judge thin pages; blocks and shells are judged before extraction,
see :mod:`scrapy_focus.extract.middleware`):

* **start engine** (``process_request``): ``meta["focus_engine"]`` if set, else
  ``FOCUS_ENGINE_DOMAINS`` for the domain, else :class:`~.history.DomainHistory`'s
  choice (which now and then probes a cheaper engine), else ``http``.  With
  ``FOCUS_HISTORY_ENABLED = False`` the history is neither read nor written:
  requests start on the first engine of ``FOCUS_ENGINES``;
* **escalate** (``process_response`` / ``process_exception``): a block or a
  challenge, an SPA shell, thin content where a browser could help, a network
  error or a timeout re-issue the request with the next engine, through the
  scheduler (``dont_filter``, same fingerprint, ``focus_refresh`` so the corpus
  fetches it anew, and ``focus_supersede`` so the corpus keeps only the final
  rendition).  404/410 and other genuine answers are final; so is the last engine.
  Exceptions raised before the attempt began (robots.txt, ``IgnoreRequest``),
  hosts that do not resolve or refuse connections, and downloads cancelled by
  ``DOWNLOAD_MAXSIZE`` never escalate;
* **transient answers** (429, 503 with ``Retry-After``, other 5xx) do not
  escalate: the host is backed off in the frontier (``Retry-After`` honoured,
  see :mod:`scrapy_focus.frontier.politeness`) and ``RetryMiddleware`` re-issues
  the request on the same engine, past the corpus (``focus_refresh``), the
  retry's answer replacing the stored one (``focus_supersede``);
* **provenance**: ``meta["focus_engine"]`` is the engine that produced the final
  response and ``meta["focus_trace"]`` lists every attempt (engine, browser,
  status, verdict, seconds, extracted characters).  The corpus stores the
  final rendition with its engine; its ``focus_trace`` meta lists the attempts
  before it (the version itself is the last one);
* **learning**: a slow start per domain.  The scheduler keeps
  ``FOCUS_HISTORY_LEARNING_CONCURRENCY`` requests in flight to a new domain (a
  limit on the shared politeness), doubled by each page that got its final
  answer on the engine it started on, and back to the start after a page that
  had to escalate; an escalated request goes before its host's other pages
  (``FOCUS_LADDER_PRIORITY_ADJUST``).  Each verdict thus teaches DomainHistory
  before the next pages leave;
* **breaker**: a domain blocked on every engine, or failing with network errors
  on every engine, ``FOCUS_BREAKER_THRESHOLD`` times in a row is held for a
  cool-down (its requests wait in the frontier), then probed.  Thin or shell
  pages on the last engine are what those pages are: they do not count.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.exceptions import DownloadCancelledError, IgnoreRequest, NotConfigured
from scrapy.http import Request, Response
from twisted.internet.error import ConnectionRefusedError, DNSLookupError

from scrapy_focus.corpus.db import acquire, release
from scrapy_focus.corpus.storage import db_options
from scrapy_focus.engines.breaker import CircuitBreaker
from scrapy_focus.engines.detect import judge, page_of
from scrapy_focus.engines.handler import USER_BROWSER, EngineInfo, engines_or_not_configured
from scrapy_focus.engines.history import CorpusHistoryStore, DomainHistory, MemoryHistoryStore
from scrapy_focus.frontier.politeness import politeness_for
from scrapy_focus.runtime import FocusRuntime
from scrapy_focus.urls import WEB_SCHEMES

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from typing_extensions import Self

logger = logging.getLogger(__name__)

_DROP_ON_ESCALATION = (
    "focus_extraction",
    "focus_extraction_failure",
    "focus_extraction_error",
    "focus_extraction_worker",
    "playwright",
    "playwright_context",
    "playwright_page",
    "download_latency",
    "cached_response",
    "_dont_cache",
    "focus_attempt_started",
    "focus_fetch_seconds",
    "focus_prejudged",
    "retry_times",
)
# No engine reaches a host whose name does not resolve or whose port is closed,
# nor makes a page smaller than DOWNLOAD_MAXSIZE (DownloadCancelledError); timeouts
# and dropped connections (a common anti-bot answer) do escalate.
_NO_ESCALATION_ERRORS: tuple[type[BaseException], ...] = (
    DNSLookupError,
    ConnectionRefusedError,
    DownloadCancelledError,
)
try:  # Scrapy >= 2.14 wraps them in its own exceptions
    from scrapy.exceptions import CannotResolveHostError, DownloadConnectionRefusedError

    _NO_ESCALATION_ERRORS += (CannotResolveHostError, DownloadConnectionRefusedError)
except ImportError:  # pragma: no cover
    pass


#: A streak of right start engines past which a domain is no longer held back.
_SETTLED = 16


def domain_of(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


class EngineLadderMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("FOCUS_LADDER_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self.stats = crawler.stats
        self.engines: dict[str, EngineInfo] = engines_or_not_configured(settings)
        self.order = list(self.engines)
        self.overrides = {d.lower(): e for d, e in settings.getdict("FOCUS_ENGINE_DOMAINS").items()}
        self.min_chars = settings.getint("FOCUS_MIN_CONTENT_CHARS", 100)
        self.learn = settings.getbool("FOCUS_HISTORY_ENABLED", True)
        self.history = DomainHistory(
            MemoryHistoryStore(),
            engines=self.order,
            half_life=settings.getfloat("FOCUS_HISTORY_HALF_LIFE", 6 * 3600.0),
            probe_rate=settings.getfloat("FOCUS_HISTORY_PROBE_RATE", 0.05),
        )
        self.breaker = CircuitBreaker(
            threshold=settings.getint("FOCUS_BREAKER_THRESHOLD", 5),
            cooldown=settings.getfloat("FOCUS_BREAKER_COOLDOWN", 60.0),
            max_cooldown=settings.getfloat("FOCUS_BREAKER_MAX_COOLDOWN", 3600.0),
        )
        self.politeness = politeness_for(crawler)
        # Domains whose start engine is not settled yet: see _learning_limit.
        self.learning_concurrency = settings.getint("FOCUS_HISTORY_LEARNING_CONCURRENCY", 1)
        self.priority_adjust = settings.getint("FOCUS_LADDER_PRIORITY_ADJUST", 1)
        self._streak: dict[str, int] = {}  # pages in a row that started on their final engine
        if self.learn and self.learning_concurrency > 0:
            self.politeness.add_limit(self._learning_limit)
        self.corpus = FocusRuntime.of(crawler).config.corpus
        self._db: Any = None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def spider_opened(self, spider: Spider) -> None:
        if not self.learn:
            return
        # History persists next to the corpus, so a later crawl starts where this one learnt.
        self._db = acquire(self.corpus.corpus_path(spider.name), **db_options(self.corpus))
        self.history.store = CorpusHistoryStore(self._db)

    def spider_closed(self, spider: Spider) -> None:
        if self._db is not None:
            release(self._db)
            self._db = None

    # -- start engine

    def choose(self, request: Request) -> tuple[str, str]:
        """The engine a new request starts with, and why."""
        meta = request.meta
        if meta.get("focus_engine"):
            return str(meta["focus_engine"]), "meta"
        if meta.get("playwright"):
            return "chromium", USER_BROWSER
        domain = domain_of(request.url)
        engine = self._override(domain)
        if engine is not None:
            return engine, "override"
        if not self.learn:
            return self.order[0], "first"
        engine, probe = self.history.start_engine(domain)
        return engine, ("probe" if probe else "history")

    def process_request(self, request: Request, spider: Spider | None = None) -> Request | None:
        if urlsplit(request.url).scheme not in WEB_SCHEMES:
            # data:, file:, ftp:, an unknown scheme: Scrapy's own handler fetches it or
            # fails with NotSupported; no browser is the better engine for it.
            return None
        meta = request.meta
        if "focus_trace" not in meta:
            engine, why = self.choose(request)
            if engine not in self.engines:
                logger.warning("Engine %r is not available for %s; using http", engine, request.url)
                engine, why = "http", "unavailable"
            meta["focus_engine"] = engine
            meta["focus_start_reason"] = why
            meta["focus_trace"] = []
            self.stats.inc_value(f"focus/ladder/start/{engine}")
            if why == "probe":
                self.stats.inc_value("focus/ladder/probe")
        # Whether a block or a shell would be escalated: then the extraction
        # middleware leaves it unextracted and the verdict comes at once.
        meta["focus_escalable"] = self._next_engine(request, str(meta["focus_engine"])) is not None
        domain = domain_of(request.url)
        if self.breaker.state(domain) == "open":
            # Hold it: back to the frontier, which keeps the domain waiting.
            self.stats.inc_value("focus/breaker/held")
            return request.replace(dont_filter=True)
        meta["focus_attempt_started"] = time.monotonic()
        return None

    # -- judging and escalating

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Request | Response:
        meta = request.meta
        engine = str(meta.get("focus_engine") or "http")
        started = meta.pop("focus_attempt_started", None)
        if "cached" in response.flags:
            # It was the final rendition when it was stored.  The corpus answers
            # without touching the host, so holding the domain back gains nothing.
            self._streak.setdefault(domain_of(request.url), _SETTLED)
            return response
        if started is None:
            return response  # not an attempt this ladder started (another middleware's answer)
        seconds = meta.pop("focus_fetch_seconds", None) or time.monotonic() - started
        extraction = meta.get("focus_extraction")
        text_chars = extraction.text_chars if extraction is not None else None
        prejudged = meta.pop("focus_prejudged", None)  # the page, decoded once, and its verdict
        if prejudged is not None:
            page, before = replace(prejudged[0], text_chars=text_chars), prejudged[1]
        else:
            page, before = page_of(response, text_chars), None
        verdict = judge(page, self.min_chars, before)
        domain = domain_of(request.url)
        self._trace(
            request,
            engine,
            status=response.status,
            verdict=verdict.kind,
            reason=verdict.reason,
            seconds=seconds,
            chars=extraction.text_chars if extraction is not None else None,
        )
        self.stats.inc_value(f"focus/ladder/verdict/{verdict.kind}")
        # Backoff for 429/503 is the scheduler's (on response_downloaded, which sees
        # every network answer, retried or escalated or not): one place, one level.
        if not verdict.escalate and verdict.kind != "transient":
            self._settle(request, domain, engine)
        if verdict.kind == "transient":
            # The host said "not now": RetryMiddleware re-issues the request on
            # this engine.  The retry must reach the network, not the corpus
            # that just stored this answer, and replace it there.
            meta["focus_refresh"] = True
            if meta.get("focus_corpus_version") is not None:
                meta["focus_supersede"] = meta["focus_corpus_version"]
            self.stats.inc_value(f"focus/ladder/transient/{engine}")
            return response
        if not verdict.escalate:
            self._observe(domain, engine, "success", seconds)
            self.breaker.success(domain)
            self.stats.inc_value(f"focus/ladder/final/{engine}")
            return response
        outcome = "blocked" if verdict.kind == "blocked" else "failure"
        self._observe(domain, engine, outcome, seconds)
        escalated = self._escalate(request, engine, verdict.reason)
        if escalated is not None:
            return escalated
        self.stats.inc_value(f"focus/ladder/final/{engine}")
        if verdict.kind == "blocked":
            # Thin or shell on the last engine is what the page is, not a failing site.
            self._final_failure(domain)
        return response

    def process_exception(
        self, request: Request, exception: Exception, spider: Spider | None = None
    ) -> Request | None:
        meta = request.meta
        started = meta.pop("focus_attempt_started", None)
        if started is None or isinstance(exception, IgnoreRequest):
            # Raised before this ladder's attempt began (robots.txt, a filter...)
            # or a deliberate drop: no engine changes that.
            return None
        engine = str(meta.get("focus_engine") or "http")
        seconds = time.monotonic() - started
        reason = type(exception).__name__
        self._trace(request, engine, status=None, verdict="error", reason=reason, seconds=seconds)
        if isinstance(exception, _NO_ESCALATION_ERRORS):
            return None  # no engine reaches a host that does not resolve or refuses us
        domain = domain_of(request.url)
        self._observe(domain, engine, "failure", seconds)
        escalated = self._escalate(request, engine, reason)
        if escalated is None:
            self._final_failure(domain)
        return escalated

    def _override(self, domain: str) -> str | None:
        for suffix, engine in self.overrides.items():
            if domain == suffix or domain.endswith("." + suffix):
                return engine
        return None

    def _learning_limit(self, domain: str) -> int | None:
        """Requests in flight a domain may have while its start engine settles: a
        slow start.  FOCUS_HISTORY_LEARNING_CONCURRENCY at first, doubled by each
        page that got its final answer on the engine it started on, and back to
        the start after a page that had to escalate.  Otherwise a domain's first
        pages all leave on HTTP before any verdict can teach DomainHistory."""
        streak = self._streak.get(domain, 0)
        if streak >= _SETTLED or self._override(domain) is not None:
            return None  # settled, or FOCUS_ENGINE_DOMAINS says where to start
        return self.learning_concurrency << streak

    def _settle(self, request: Request, domain: str, final_engine: str) -> None:
        """A page got its final answer: was its start engine the right one?"""
        meta = request.meta
        reason = meta.get("focus_start_reason")
        if reason == "probe":
            return  # a probe starts lower on purpose: it says nothing of the choice
        if reason not in {"history", "first"}:
            # The request said where to start (its meta, scrapy-playwright's): no
            # history choice to check, and no reason to hold the domain back.
            self._streak.setdefault(domain, _SETTLED)
            return
        trace = meta.get("focus_trace") or []
        started = trace[0]["engine"] if trace else final_engine
        if started == final_engine:
            self._streak[domain] = min(self._streak.get(domain, 0) + 1, _SETTLED)
        else:
            self._streak[domain] = 0

    def _observe(self, domain: str, engine: str, outcome: str, seconds: float) -> None:
        if self.learn:
            self.history.observe(domain, engine, outcome, seconds)

    def _trace(self, request: Request, engine: str, **attempt: Any) -> None:
        """Append one attempt to ``meta["focus_trace"]`` (a new list: a stored copy stays)."""
        entry = {
            "engine": engine,
            "browser": self.engines[engine].browser if engine in self.engines else engine,
            "status": attempt["status"],
            "verdict": attempt["verdict"],
            "reason": attempt["reason"],
            "seconds": round(attempt["seconds"], 3),
            "chars": attempt.get("chars"),
        }
        request.meta["focus_trace"] = [*request.meta.get("focus_trace", []), entry]

    def _next_engine(self, request: Request, engine: str) -> str | None:
        if request.meta.get("focus_start_reason") == USER_BROWSER:
            return None  # the user chose the browser, as with scrapy-playwright alone
        position = self.order.index(engine) if engine in self.order else len(self.order)
        return self.order[position + 1] if position + 1 < len(self.order) else None

    def _escalate(self, request: Request, engine: str, reason: str) -> Request | None:
        following = self._next_engine(request, engine)
        if following is None:
            self.stats.inc_value("focus/ladder/exhausted")
            return None
        meta = {k: v for k, v in request.meta.items() if k not in _DROP_ON_ESCALATION}
        meta["focus_engine"] = following
        meta["focus_refresh"] = True  # the corpus must fetch it, not serve the failed attempt
        if request.meta.get("focus_corpus_version") is not None:
            meta["focus_supersede"] = request.meta["focus_corpus_version"]
        self.stats.inc_value(f"focus/ladder/escalate/{engine}-{following}")
        logger.debug("Escalating %s from %s to %s: %s", request.url, engine, following, reason)
        # The page's next attempt goes before its host's other pages: while the
        # domain is held to one request in flight, that is what teaches history.
        return request.replace(
            dont_filter=True, meta=meta, priority=request.priority + self.priority_adjust
        )

    def _final_failure(self, domain: str) -> None:
        cooldown = self.breaker.failure(domain)
        if cooldown is not None:
            self.politeness.backoff(domain, cooldown)
            self.stats.inc_value("focus/breaker/opened")
            logger.warning(
                "Circuit breaker open for %s: every engine failed; holding its requests for %.0fs",
                domain,
                cooldown,
            )
