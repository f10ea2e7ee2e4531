"""``EngineLadderMiddleware``: start with the cheapest engine that works, escalate when not.

A downloader middleware placed below ``ExtractionMiddleware`` (it reads the
extraction to judge thin pages; blocks and shells are judged before extraction:
:class:`~scrapy_focus.engines.judge.ResponseJudge` owns that sequence).  What it
knows of a request is in the request's :class:`~scrapy_focus.state.FocusState`
(``meta["focus"]``); its shared parts (the engines, DomainHistory, the breaker, the
politeness it limits) are the crawl's :class:`~scrapy_focus.runtime.FocusRuntime`'s:

* **start engine** (``process_request``): the spider's ``meta["focus_engine"]`` if
  set, else ``FOCUS_ENGINE_DOMAINS`` for the domain, else :class:`~.history.DomainHistory`'s
  choice (which now and then probes a cheaper engine), else ``http``.  With
  ``FOCUS_HISTORY_ENABLED = False`` the history is neither read nor written:
  requests start on the first engine of ``FOCUS_ENGINES``;
* **escalate** (``process_response`` / ``process_exception``): a block, a
  challenge or a denial, an SPA shell, thin content where the next engine could
  help (the page runs scripts, or the next engine is another browser: a server
  may answer each browser differently), a network error or a timeout re-issue
  the request with the next engine, through the
  scheduler (``dont_filter``, same fingerprint, ``state.refresh`` so the corpus
  fetches it anew, and ``state.supersede`` so the corpus keeps only the final
  rendition), its state's next attempt begun with
  :meth:`~scrapy_focus.state.FocusState.next_attempt`.  404/410 and other
  genuine answers are final; so is a hub (a navigation page: its links are its
  content, ``state.hub``), and so is the last engine.
  Exceptions raised before the attempt began (robots.txt, ``IgnoreRequest``),
  hosts that do not resolve or refuse connections, and downloads cancelled by
  ``DOWNLOAD_MAXSIZE`` never escalate;
* **transient answers** (429, 503 with ``Retry-After``, other 5xx) do not
  escalate: the host is backed off in the frontier (``Retry-After`` honoured,
  see :mod:`scrapy_focus.frontier.politeness`) and ``RetryMiddleware`` re-issues
  the request on the same engine, past the corpus (``state.refresh``), the
  retry's answer replacing the stored one (``state.supersede``); a request
  judged already that comes back (a retry) begins another attempt on its engine;
* **provenance**: ``meta["focus"].engine`` is the engine that produced the final
  response, ``.start_reason`` why it started there, and ``.attempts`` every
  attempt (:class:`~scrapy_focus.state.Attempt`: engine, browser, status, verdict,
  seconds, extracted characters; ``.trace()`` as records).  The corpus stores the
  final rendition with its engine; its ``meta["focus"]["trace"]`` lists the attempts
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
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy.exceptions import DownloadCancelledError, IgnoreRequest, NotConfigured
from scrapy.http import Request, Response
from twisted.internet.error import ConnectionRefusedError, DNSLookupError

from scrapy_focus.engines.discovery import engines_or_not_configured
from scrapy_focus.engines.judge import ResponseJudge
from scrapy_focus.engines.playwright_meta import USER_BROWSER, without_attempt_keys
from scrapy_focus.runtime import FocusRuntime
from scrapy_focus.state import FocusState, peek, state_of
from scrapy_focus.urls import WEB_SCHEMES

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from scrapy_focus.engines.detect import Verdict

logger = logging.getLogger(__name__)

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
        runtime = FocusRuntime.of(crawler)
        self.config = config = runtime.config.ladder
        if not config.enabled:
            raise NotConfigured
        self.crawler = crawler
        self.stats = crawler.stats
        self.engines = engines_or_not_configured(runtime.engines)
        self.order = list(self.engines)
        self.learn = config.history_enabled
        self.history = runtime.history
        self.breaker = runtime.breaker
        self.politeness = runtime.politeness
        self.judge = ResponseJudge(config.min_content_chars)
        self._streak: dict[str, int] = {}  # pages in a row that started on their final engine
        if self.learn and config.history_learning_concurrency > 0:
            self.politeness.add_limit(self._learning_limit)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

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
        state = state_of(request)
        if not state.attempts:
            self._start(request, state)
        elif state.attempt is not None and state.attempt.verdict is not None:
            # Judged already and sent again (a retry): another attempt, same engine.
            engine = str(state.engine)
            state.next_attempt(engine, self._browser(engine))
        engine = str(state.engine)
        # Whether a block or a shell would be escalated: then the extraction
        # middleware leaves it unextracted and the verdict comes at once.
        following = self._next_engine(state, engine)
        self.judge.expect(state, following is not None, self._other_browser(engine, following))
        if self.breaker.state(domain_of(request.url)) == "open":
            # Hold it: back to the frontier, which keeps the domain waiting.
            self.stats.inc_value("focus/breaker/held")
            return request.replace(dont_filter=True)
        state.begin_download()
        return None

    def _start(self, request: Request, state: FocusState) -> None:
        engine, why = self.choose(request)
        if engine not in self.engines:
            logger.warning("Engine %r is not available for %s; using http", engine, request.url)
            engine, why = "http", "unavailable"
        state.start(engine, why, self._browser(engine))
        self.stats.inc_value(f"focus/ladder/start/{engine}")
        if why == "probe":
            self.stats.inc_value("focus/ladder/probe")

    # -- judging and escalating

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Request | Response:
        state = peek(request)
        if state is None or state.attempt is None:
            return response  # not a request this ladder saw (another scheme)
        started = state.end_download()
        if "cached" in response.flags:
            # It was the final rendition when it was stored.  The corpus answers
            # without touching the host, so holding the domain back gains nothing.
            self._streak.setdefault(domain_of(request.url), _SETTLED)
            return response
        if started is None:
            return response  # not an attempt this ladder started (another middleware's answer)
        attempt = state.attempt
        seconds = attempt.seconds or time.monotonic() - started
        verdict = self.judge.verdict(state, response)
        extraction = state.extraction
        self._record(state, response.status, verdict.kind, verdict.reason, seconds)
        attempt.chars = extraction.text_chars if extraction is not None else None
        self.stats.inc_value(f"focus/ladder/verdict/{verdict.kind}")
        return self._answer(request, response, state, verdict, seconds)

    def _answer(
        self,
        request: Request,
        response: Response,
        state: FocusState,
        verdict: Verdict,
        seconds: float,
    ) -> Request | Response:
        """What the verdict on the current attempt makes of *response*."""
        domain, engine = domain_of(request.url), str(state.engine)
        # Backoff for 429/503 is the scheduler's (on response_downloaded, which sees
        # every network answer, retried or escalated or not): one place, one level.
        if verdict.kind == "transient":
            # The host said "not now": RetryMiddleware re-issues the request on
            # this engine.  The retry must reach the network, not the corpus
            # that just stored this answer, and replace it there.
            self._refetch(state)
            self.stats.inc_value(f"focus/ladder/transient/{engine}")
            return response
        if not verdict.escalate:
            self._settle(state, domain)
            self._observe(domain, engine, "success", seconds)
            self.breaker.success(domain)
            self.stats.inc_value(f"focus/ladder/final/{engine}")
            return response
        outcome = "blocked" if verdict.kind == "blocked" else "failure"
        self._observe(domain, engine, outcome, seconds)
        escalated = self._escalate(request, state, verdict.reason)
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
        state = peek(request)
        started = state.end_download() if state is not None else None
        if state is None or started is None or isinstance(exception, IgnoreRequest):
            # Raised before this ladder's attempt began (robots.txt, a filter...)
            # or a deliberate drop: no engine changes that.
            return None
        engine = str(state.engine)
        seconds = time.monotonic() - started
        reason = type(exception).__name__
        self._record(state, None, "error", reason, seconds)
        if isinstance(exception, _NO_ESCALATION_ERRORS):
            return None  # no engine reaches a host that does not resolve or refuses us
        domain = domain_of(request.url)
        self._observe(domain, engine, "failure", seconds)
        escalated = self._escalate(request, state, reason)
        if escalated is None:
            self._final_failure(domain)
        return escalated

    def _override(self, domain: str) -> str | None:
        for suffix, engine in self.config.engine_domains.items():
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
        return self.config.history_learning_concurrency << streak

    def _settle(self, state: FocusState, domain: str) -> None:
        """A page got its final answer: was its start engine the right one?"""
        reason = state.start_reason
        if reason == "probe":
            return  # a probe starts lower on purpose: it says nothing of the choice
        if reason not in {"history", "first"}:
            # The request said where to start (its meta, scrapy-playwright's): no
            # history choice to check, and no reason to hold the domain back.
            self._streak.setdefault(domain, _SETTLED)
            return
        if state.attempts[0].engine == state.engine:
            self._streak[domain] = min(self._streak.get(domain, 0) + 1, _SETTLED)
        else:
            self._streak[domain] = 0

    def _observe(self, domain: str, engine: str, outcome: str, seconds: float) -> None:
        if self.learn:
            self.history.observe(domain, engine, outcome, seconds)

    def _record(
        self, state: FocusState, status: int | None, verdict: str, reason: str, seconds: float
    ) -> None:
        """The current attempt's outcome: it joins the trace."""
        attempt = state.attempt
        assert attempt is not None
        attempt.status, attempt.verdict, attempt.reason = status, verdict, reason
        attempt.seconds = seconds

    def _browser(self, engine: str) -> str:
        return self.engines[engine].browser if engine in self.engines else engine

    def _next_engine(self, state: FocusState, engine: str) -> str | None:
        if state.start_reason == USER_BROWSER:
            return None  # the user chose the browser, as with scrapy-playwright alone
        position = self.order.index(engine) if engine in self.order else len(self.order)
        return self.order[position + 1] if position + 1 < len(self.order) else None

    def _other_browser(self, engine: str, following: str | None) -> bool:
        """Whether *following* is a browser other than *engine*'s: a server may
        answer each browser differently, so a thin page is worth its try.  From
        HTTP it is not: there only scripts make a browser's page differ."""
        if following is None or engine not in self.engines or engine == "http":
            return False
        return self._browser(following) != self._browser(engine)

    def _refetch(self, state: FocusState) -> None:
        """The next fetch goes to the network, not the corpus, and its answer
        replaces the version stored for this one."""
        state.refresh = True
        if state.corpus_version is not None:
            state.supersede = state.corpus_version

    def _escalate(self, request: Request, state: FocusState, reason: str) -> Request | None:
        engine = str(state.engine)
        following = self._next_engine(state, engine)
        if following is None:
            self.stats.inc_value("focus/ladder/exhausted")
            return None
        self._refetch(state)
        state.next_attempt(following, self._browser(following))
        self.stats.inc_value(f"focus/ladder/escalate/{engine}-{following}")
        logger.debug("Escalating %s from %s to %s: %s", request.url, engine, following, reason)
        # The page's next attempt goes before its host's other pages: while the
        # domain is held to one request in flight, that is what teaches history.
        return request.replace(
            dont_filter=True,
            meta=without_attempt_keys(request.meta),
            priority=request.priority + self.config.priority_adjust,
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
