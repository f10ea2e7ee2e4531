"""The crawl's engine handlers and browser pages: :class:`BrowserPool`.

The contract:

* one pool per crawl (``FocusRuntime.of(crawler).browsers``), shared by the
  download handler of every scheme, as the browsers are;
* :meth:`BrowserPool.handler` answers the handler of an engine: Scrapy's HTTP
  handler (or ``FOCUS_HTTP_HANDLER``) for ``http``, a scrapy-playwright handler
  per browser engine, started on first use (a crawl that never escalates never
  starts a browser or a Playwright driver).  An engine that fails to start is
  said once and skipped from then on (:class:`EngineError`);
* hygiene: at most ``FOCUS_BROWSER_MAX_PAGES`` pages open per browser, all
  contexts (:meth:`page_slots`); contexts are named by generation,
  ``focus-<engine>-<n>``, a new one every ``FOCUS_BROWSER_CONTEXT_PAGES`` pages
  (:meth:`take_context`), and an old one is closed once no download holds it and no
  page is open in it (:meth:`recycle`); a page that answered is kept idle for the
  next download of its context (:meth:`keep_page`, :meth:`take_page`), idle pages
  close with the spider, handlers and browsers with the pool;
* this is the only module that touches scrapy-playwright's private internals:
  its handler's ``_launch``/``_maybe_launch_browser`` (started after its
  engine_started signal), its ``context_wrappers`` table, and the three private
  methods overridden so that every request of a download's page goes through
  its :class:`~scrapy_focus.engines.guard.DownloadGuard` and popups close as they
  open (:func:`playwright_handler_class`).  A scrapy-playwright without them
  stops the browser engines rather than running them unguarded.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import importlib.metadata
import logging
import weakref
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import DownloadCancelledError
from scrapy.utils.misc import build_from_crawler, load_object

from scrapy_focus.engines.browser_settings import EngineCrawler, user_context_kwargs
from scrapy_focus.engines.discovery import EngineError, EngineInfo
from scrapy_focus.engines.headers import awaited
from scrapy_focus.state import peek

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from scrapy_focus.config import BrowserConfig
    from scrapy_focus.engines.guard import DownloadGuard

logger = logging.getLogger(__name__)


class BrowserPool:
    """The crawl's engine handlers, browser contexts and idle pages (see the
    module docstring)."""

    def __init__(
        self, crawler: Crawler, config: BrowserConfig, engines: dict[str, EngineInfo]
    ) -> None:
        self.crawler = crawler
        self.info = engines
        self.handlers: dict[str, Any] = {
            "http": build_from_crawler(load_object(config.http_handler), crawler)
        }
        self._lock: Any = None
        self.users = 0  # download handlers using the pool: the last closes it
        self.closed = False
        self.failed: dict[str, str] = {}  # engine → why it could not start
        self.max_pages = config.max_pages
        self.context_pages = config.context_pages
        self.reuse_pages = config.reuse_pages
        self._page_slots: dict[str, asyncio.Semaphore] = {}
        self._pages: dict[str, int] = {}  # engine → pages given a context so far
        self._in_use: dict[str, int] = {}  # context name → downloads using it now
        self._idle: dict[str, list[Any]] = {}  # context name → open pages between downloads
        self.render_pages: weakref.WeakSet[Any] = weakref.WeakSet()  # pages with the render tracker
        self.default_context = user_context_kwargs(crawler.settings)
        # Idle pages close with the spider, so that its final stats count them closed
        # (the handlers, and the browsers, close later, with the engine).
        crawler.signals.connect(self.on_spider_closed, signal=signals.spider_closed)
        self._announce()

    def _announce(self) -> None:
        stats = self.crawler.stats
        for engine, info in self.info.items():
            stats.set_value(f"focus/engine/{engine}/browser", info.browser)
            if info.warning:
                logger.warning("%s", info.warning)
            args = info.settings.get("PLAYWRIGHT_LAUNCH_OPTIONS", {}).get("args")
            if engine == "chromium" and args is not None:
                stats.set_value(f"focus/engine/{engine}/sandbox", "--no-sandbox" not in args)
        logger.info("Engines: %s", ", ".join(f"{e} ({i.browser})" for e, i in self.info.items()))

    # -- handlers

    async def handler(self, engine: str) -> Any:
        if engine in self.handlers:
            return self.handlers[engine]
        if engine not in self.info:
            return None
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if engine in self.failed:
                raise EngineError(f"the {engine} engine could not start: {self.failed[engine]}")
            if engine not in self.handlers:
                self.handlers[engine] = await self._start(engine)
                logger.info("Started the %s engine (%s)", engine, self.info[engine].browser)
        return self.handlers[engine]

    async def _start(self, engine: str) -> Any:
        info = self.info[engine]
        try:
            handler_class = playwright_handler_class()
        except EngineError as exc:
            self._failed(engine, exc)
            raise
        handler = handler_class(EngineCrawler(self.crawler, info.settings))
        handler.focus_engine = engine
        try:
            # scrapy-playwright starts its driver on engine_started, which has
            # passed: start it the way that signal handler would.
            launch = getattr(handler, "_maybe_launch_in_thread", None) or handler._launch
            await launch()
            # Launch the browser now rather than inside the first page's download,
            # so that page's time is the page's (DomainHistory learns from it).
            browser = getattr(handler, "_maybe_launch_browser", None)
            if browser is not None and not handler.config.use_threaded_loop:
                await browser()
        except Exception as exc:
            # Once, not at every request; and no driver left running behind it.
            self._failed(engine, exc)
            await _close_handler(engine, handler)
            raise EngineError(
                f"the {engine} engine could not start: {self.failed[engine]}"
            ) from exc
        return handler

    def _failed(self, engine: str, exc: Exception) -> None:
        self.failed[engine] = f"{type(exc).__name__}: {exc}".strip()
        self.crawler.stats.set_value(f"focus/engine/{engine}/failed", self.failed[engine])
        logger.error(
            "The %s engine (%s) could not start; it is skipped from now on: %s",
            engine,
            self.info[engine].browser,
            self.failed[engine],
        )

    def page_slots(self, engine: str) -> asyncio.Semaphore:
        """At most FOCUS_BROWSER_MAX_PAGES pages open in *engine*'s browser, all contexts."""
        if engine not in self._page_slots:
            self._page_slots[engine] = asyncio.Semaphore(self.max_pages)
        return self._page_slots[engine]

    def take_context(self, engine: str) -> str:
        """The context of *engine*'s next page (a new generation every
        FOCUS_BROWSER_CONTEXT_PAGES pages), held until :meth:`release_context`."""
        count = self._pages.get(engine, 0)
        self._pages[engine] = count + 1
        name = f"focus-{engine}-{count // self.context_pages}"
        self._in_use[name] = self._in_use.get(name, 0) + 1
        return name

    def release_context(self, name: str) -> None:
        left = self._in_use.get(name, 0) - 1
        if left > 0:
            self._in_use[name] = left
        else:
            self._in_use.pop(name, None)

    def recyclable(self, engine: str, name: str) -> bool:
        """Whether *name* is one of *engine*'s earlier generations that no download holds."""

        current = f"focus-{engine}-{max(0, self._pages.get(engine, 0) - 1) // self.context_pages}"
        return name.startswith(f"focus-{engine}-") and name != current and name not in self._in_use

    async def take_page(self, engine: str, context: str) -> Any | None:
        """An open page of *context* that no download uses, or None.  The idle pages
        of *engine*'s earlier contexts are closed first: a new page must not take
        the browser past FOCUS_BROWSER_MAX_PAGES."""
        for name in list(self._idle):
            if name != context and name.startswith(f"focus-{engine}-"):
                await self.close_idle_pages(name)
        idle = self._idle.get(context)
        while idle:
            page = idle.pop()
            if not page.is_closed():
                return page
        return None

    def keep_page(self, context: str, page: Any) -> None:
        self._idle.setdefault(context, []).append(page)

    async def close_page(self, page: Any) -> None:
        if not page.is_closed():
            with contextlib.suppress(Exception):  # crashed, or closed with its browser
                await page.close()
            # scrapy-playwright's own count, so that it still adds up to its page_count
            self.crawler.stats.inc_value("playwright/page_count/closed")

    async def close_idle_pages(self, context: str) -> None:
        for page in self._idle.pop(context, ()):
            await self.close_page(page)

    async def on_spider_closed(self) -> None:
        await self.close_all_idle_pages()

    async def close_all_idle_pages(self) -> None:
        for context in list(self._idle):
            await self.close_idle_pages(context)

    async def recycle(self, engine: str, handler: Any) -> None:
        """Close contexts of earlier generations once no download holds them and no
        page is open in them.  Several downloads end at once: each takes a context
        out of scrapy-playwright's table before closing it, and skips those gone."""
        wrappers = getattr(handler, "context_wrappers", {})
        for name in list(wrappers):
            if not self.recyclable(engine, name):
                continue
            wrapper = wrappers.get(name)
            await self.close_idle_pages(name)
            if wrapper is None or wrapper.context.pages:
                continue  # closed by another download meanwhile, or a page kept open
            wrappers.pop(name, None)
            with contextlib.suppress(Exception):  # closed with its browser already
                await wrapper.context.close()
            self.crawler.stats.inc_value(f"focus/engine/{engine}/contexts_recycled")

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        await self.close_all_idle_pages()
        for engine, handler in self.handlers.items():
            await _close_handler(engine, handler)


async def _close_handler(engine: str, handler: Any) -> None:
    try:
        await awaited(handler.close())
    except Exception:
        logger.exception("Closing the %s engine failed", engine)


async def _close_quietly(page: Any) -> None:
    with contextlib.suppress(Exception):  # crashed, or closed with its browser
        await page.close()


_CLOSING: set[asyncio.Future[None]] = set()  # held until done: the loop keeps weak refs


def _close_later(page: Any) -> None:
    """Close *page* from an event callback, which cannot await."""
    task = asyncio.ensure_future(_close_quietly(page))
    _CLOSING.add(task)
    task.add_done_callback(_CLOSING.discard)


#: The guard of the download running in this task (or scrapy-playwright's thread).
_GUARD: contextvars.ContextVar[DownloadGuard | None] = contextvars.ContextVar(
    "focus_guard", default=None
)


class _GuardedPages:
    """The overrides of :func:`playwright_handler_class`, put before
    scrapy-playwright's handler in its subclass's bases."""

    focus_engine = "chromium"
    config: Any
    stats: Any
    process_request_headers: Any

    def _make_request_handler(self, *args: Any, **kwargs: Any) -> Callable:
        inner = super()._make_request_handler(*args, **kwargs)  # type: ignore[misc]
        guard = _GUARD.get()  # set by _download_request_with_retry, which calls this
        if guard is None:
            return inner
        data = {
            "method": kwargs["method"],
            "url": kwargs["url"],
            "headers": kwargs["headers"],
            "body": kwargs["body"],
            "encoding": kwargs["encoding"],
            "browser_type_name": self.config.browser_type_name,
            "process_headers": self.process_request_headers,
        }

        async def handle(route: Any, playwright_request: Any) -> None:
            await guard.route(route, playwright_request, inner, data)

        return handle

    async def _download_request_with_retry(self, request: Request, spider: Any) -> Response:
        # Set here, in whatever task and thread scrapy-playwright runs the
        # download (its threaded loop too), for _make_request_handler to find.
        state = peek(request)
        guard = state.guard if state is not None else None
        _GUARD.set(guard)
        # scrapy-playwright retries a download whose page closed under it: not
        # one DOWNLOAD_MAXSIZE has cancelled already.
        if guard is not None and guard.cancelled:
            raise DownloadCancelledError(guard.cancelled)
        return await super()._download_request_with_retry(request, spider)  # type: ignore[misc]

    async def _create_page(self, request: Request, spider: Any) -> Any:
        page = await super()._create_page(request, spider)  # type: ignore[misc]
        page.on("popup", self._close_popup)
        return page

    def _close_popup(self, popup: Any) -> None:
        # A window the page opened is owned by no download: it would run and
        # fetch unseen, outside resource blocking, and hold its context open.
        popup.on("popup", self._close_popup)
        self.stats.inc_value(f"focus/engine/{self.focus_engine}/popups_closed")
        _close_later(popup)


_OVERRIDDEN = ("_make_request_handler", "_download_request_with_retry", "_create_page")


@cache
def playwright_handler_class() -> type:
    """scrapy-playwright's handler, with every request of a download's page
    routed through its :class:`~scrapy_focus.engines.guard.DownloadGuard` and
    popups closed as they open.

    Overrides three of its private methods (scrapy-playwright 0.0.4x): the
    public settings hook that sees each request (``PLAYWRIGHT_ABORT_REQUEST``)
    knows neither the download nor how to answer a request itself."""
    from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

    missing = [name for name in _OVERRIDDEN if not hasattr(ScrapyPlaywrightDownloadHandler, name)]
    if missing:
        # Unguarded, a browser would leave the scope and hand out the crawl's headers.
        raise EngineError(
            f"scrapy-playwright {importlib.metadata.version('scrapy-playwright')} has no "
            f"{', '.join(missing)}: the browser engines need scrapy-playwright 0.0.4x"
        )

    class FocusPlaywrightHandler(_GuardedPages, ScrapyPlaywrightDownloadHandler):  # type: ignore[misc]
        pass

    return FocusPlaywrightHandler
