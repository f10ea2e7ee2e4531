"""``FocusDownloadHandler``: one download handler, three engines.

The contract: each request is fetched by the engine of its current attempt
(``meta["focus"].engine``, as the engine ladder set it), else by the engine its
spider named (``meta["focus_engine"]``), else by Chromium when it carries
scrapy-playwright's ``meta["playwright"]``, else by plain HTTP:

``http``      Scrapy's own HTTP handler (``FOCUS_HTTP_HANDLER`` to replace it);
``chromium``  headless Chromium through scrapy-playwright;
``stealth``   Firefox through scrapy-playwright: Camoufox when its browser is
              installed, else a configured Firefox
              (:mod:`scrapy_focus.engines.discovery` says which runs).

An engine this machine cannot run fails the download with :class:`EngineError`.
Browser fetches stay inside Scrapy's download slots, so per-host politeness
applies to them too.  A browser download takes a page slot and a context of the
crawl's :class:`~scrapy_focus.engines.pool.BrowserPool` (a page of its own when the
user drives the page, else an idle page of its context when
``FOCUS_BROWSER_REUSE_PAGES``), runs under its
:class:`~scrapy_focus.engines.guard.DownloadGuard` and, unless the user drives the
page, the :class:`~scrapy_focus.engines.waits.ChallengeWait`.  The scrapy-playwright
meta keys it needs are set through one
:class:`~scrapy_focus.engines.playwright_meta.DownloadMeta` and put back after.
The attempt's ``seconds`` is the engine's own time for the page (DomainHistory's
latency), not the time spent waiting for a free browser page.
"""

from __future__ import annotations

import functools
import inspect
import time
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import maybe_deferred_to_future

from scrapy_focus.engines.discovery import EngineError
from scrapy_focus.engines.guard import DownloadGuard, SizeLimit, crawl_rejection
from scrapy_focus.engines.headers import awaited
from scrapy_focus.engines.playwright_meta import USER_BROWSER, USER_PAGE_KEYS, DownloadMeta
from scrapy_focus.engines.render import RenderWait
from scrapy_focus.engines.waits import ChallengeWait
from scrapy_focus.runtime import FocusRuntime
from scrapy_focus.state import peek

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["EngineError", "FocusDownloadHandler"]


class FocusDownloadHandler:
    lazy = False

    def __init__(self, crawler: Crawler) -> None:
        runtime = FocusRuntime.of(crawler)
        self.crawler = crawler
        self.stats = crawler.stats
        self.config = runtime.config.browser
        self.pool = runtime.browsers
        self.pool.users += 1
        self.engines = self.pool.info

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FocusDownloadHandler:
        return cls(crawler)

    def engine_for(self, request: Request) -> str:
        state = peek(request)
        if state is not None and state.engine:
            return state.engine
        engine = request.meta.get("focus_engine")
        if engine:
            return str(engine)
        return "chromium" if request.meta.get("playwright") else "http"

    async def download_request(self, request: Request, spider: Any = None) -> Response:
        engine = self.engine_for(request)
        handler = await self.pool.handler(engine)
        if handler is None:
            raise EngineError(
                f"engine {engine!r} is not available for {request.url}: available are "
                f"{', '.join(self.engines)} (see FOCUS_ENGINES and the browser settings)"
            )
        self.stats.inc_value(f"focus/engine/{engine}/requests")
        if engine == "http":
            started = time.monotonic()
            response = await self._fetch(handler, request, spider)
        else:
            try:
                async with self.pool.page_slots(engine):
                    started = time.monotonic()
                    response = await self._browse(engine, handler, request, spider)
            finally:
                await self.pool.recycle(engine, handler)
        state = peek(request)
        if state is not None and state.attempt is not None:
            state.attempt.seconds = time.monotonic() - started
        return response

    async def _fetch(self, handler: Any, request: Request, spider: Any) -> Response:
        return await awaited(
            _call(handler.download_request, request, spider or self.crawler.spider)
        )

    async def _browse(self, engine: str, handler: Any, request: Request, spider: Any) -> Response:
        """One browser page: scrapy-playwright's download, in our context."""
        meta = DownloadMeta(request.meta)
        meta.set("playwright", True)
        context = meta.get("playwright_context")
        taken = None
        if not context or str(context).startswith("focus-"):
            # Ours: the current generation, held until this download ends, so that no
            # other download closes it before this page exists.
            taken = self.pool.take_context(engine)
            meta.set("playwright_context", taken)
            if meta.get("playwright_context_kwargs") is None and self.pool.default_context:
                # Where scrapy-playwright would use the user's "default" context, ours
                # are made like it (user agent, proxy, storage state...).
                meta.set("playwright_context_kwargs", self.pool.default_context)
        state = peek(request)
        user_driven = state is not None and state.start_reason == USER_BROWSER
        own_page = user_driven or any(meta.get(key) for key in USER_PAGE_KEYS)
        watch = not (user_driven or meta.get("playwright_include_page"))
        try:
            if taken is None or not self.pool.reuse_pages or own_page:
                if taken is not None:
                    # Pages kept idle for reuse count against the context's
                    # PLAYWRIGHT_MAX_PAGES_PER_CONTEXT: a page of its own must not
                    # wait for them.
                    await self.pool.close_idle_pages(taken)
                return await self._browse_in(engine, handler, request, spider, meta, watch)
            return await self._browse_reusing(engine, handler, request, spider, meta, taken)
        finally:
            if taken is not None:
                self.pool.release_context(taken)
            meta.restore()

    async def _browse_reusing(
        self,
        engine: str,
        handler: Any,
        request: Request,
        spider: Any,
        meta: DownloadMeta,
        context: str,
    ) -> Response:
        """The download in an idle page of *context* (or a new one), kept open after
        it for the next download if it answered, closed if anything failed."""
        page = await self.pool.take_page(engine, context)
        # Set even when None (a new page): what scrapy-playwright leaves there is
        # this download's page, which must not stay in the request.
        meta.set("playwright_page", page)
        if page is not None:
            self.stats.inc_value(f"focus/engine/{engine}/pages_reused")
        meta.set("playwright_include_page", True)  # scrapy-playwright leaves it open
        try:
            response = await self._browse_in(engine, handler, request, spider, meta, True)
        except BaseException:
            page = meta.get("playwright_page")
            if page is not None:
                await self.pool.close_page(page)
            raise
        page = meta.get("playwright_page")  # restored away: not for the spider
        if page is not None and not page.is_closed():
            self.pool.keep_page(context, page)
        return response

    async def _browse_in(
        self,
        engine: str,
        handler: Any,
        request: Request,
        spider: Any,
        meta: DownloadMeta,
        watch: bool,
    ) -> Response:
        """The page in its context: the download's guard and, when *watch* (not
        for a page the user drives), the challenge wait around scrapy-playwright's
        download."""
        spider = spider or self.crawler.spider
        guard = self._guard(engine, request, spider)
        render = self._render_wait(guard, request) if watch else None
        if render is not None:
            meta.set("playwright_page_init_callback", render.init)
            meta.set(
                "playwright_page_methods", render.page_methods(meta.get("playwright_page_methods"))
            )
        wait = None
        if self.config.challenge_wait > 0 and watch:
            wait = ChallengeWait(
                guard, self.config.challenge_wait, meta.get("playwright_page_init_callback")
            )
            meta.set("playwright_page_init_callback", wait.init)
            meta.set(
                "playwright_page_methods", wait.page_methods(meta.get("playwright_page_methods"))
            )
        state = peek(request)
        if state is not None:
            state.guard = guard
        try:
            response = await self._fetch(handler, request, spider)
        finally:
            if state is not None:
                state.guard = None
            guard.finished = True
            guard.detach()
            if wait is not None:
                wait.detach()
            if render is not None:
                render.record(state.attempt if state is not None else None, self.stats)
        if not guard.ended and wait is not None:
            passed = wait.final_response(response)
            if passed is not None:
                self.stats.inc_value(f"focus/engine/{engine}/challenge_passed")
                response = passed
        return guard.outcome(response)

    def _render_wait(self, guard: DownloadGuard, request: Request) -> RenderWait | None:
        """The render wait of a download (the challenge wait's, then the user's
        init callback and PageMethods after it), or None with FOCUS_BROWSER_RENDER
        "never"."""
        config = self.config
        if config.render == "never":
            return None
        cap = config.navigation_timeout
        timeout = request.meta.get("download_timeout")
        if timeout:
            cap = min(cap, float(timeout))
        return RenderWait(
            guard,
            config.render,
            config.render_wait,
            config.render_quiet,
            cap,
            self.pool.render_pages,
            request.meta.get("playwright_page_init_callback"),
        )

    def _guard(self, engine: str, request: Request, spider: Any) -> DownloadGuard:
        depth = request.meta.get("depth", 0)
        rejection = crawl_rejection(self.crawler)
        return DownloadGuard(
            engine,
            request,
            lambda url: rejection(url, depth),
            SizeLimit.of(request, spider, self.config),
            self.stats,
        )

    async def close(self) -> None:
        self.pool.users -= 1
        if self.pool.users == 0:
            await self.pool.close()


def _call(method: Any, request: Request, spider: Any) -> Any:
    """Call a handler's download_request, old (Deferred, spider) or new (async) style."""
    result = method(request, spider) if _takes_spider(method) else method(request)
    if hasattr(result, "addCallback"):  # a Deferred
        return maybe_deferred_to_future(result)
    return result


@functools.lru_cache(maxsize=64)
def _takes_spider(method: Any) -> bool:
    """Whether *method* (a handler's bound download_request) takes ``spider``: asked
    once per handler, not once per request (``inspect.signature`` is not cheap)."""
    return "spider" in inspect.signature(method).parameters
