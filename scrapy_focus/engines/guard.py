"""What one browser download may do, enforced on its page while it runs: :class:`DownloadGuard`.

The contract (the same for every browser engine):

* scope: every navigation of the main frame (a redirect, a script, a refresh)
  must pass the crawl's scope (:func:`crawl_rejection`, the frontier's
  :class:`~scrapy_focus.urls.Scope`).  The first that does not ends the download
  as a bodiless 302 to it, which RedirectMiddleware and the scheduler then judge
  as they judge a plain HTTP redirect; a routed navigation is aborted before it
  leaves the browser;
* headers: the crawl's headers go to main-frame navigations of the requested
  origin only (:mod:`scrapy_focus.engines.headers`).  Playwright repeats a
  route's header overrides on every redirect the browser follows, so a
  navigation that gets them is fetched without following redirects: a 3xx ends
  the download, and the redirect goes through Scrapy like any other;
* size: DOWNLOAD_MAXSIZE and DOWNLOAD_WARNSIZE (:class:`SizeLimit`) apply as in
  Scrapy's HTTP handler, with its messages and DownloadCancelledError.

The browser pool routes every request of the download's page through
:meth:`DownloadGuard.route`; the handler turns the page's answer into the
download's with :meth:`DownloadGuard.outcome`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from scrapy.exceptions import DownloadCancelledError
from scrapy.http import Response as ScrapyResponse

from scrapy_focus.engines.headers import (
    REQUEST_DATA_KEYS,
    awaited,
    carries_crawl_headers,
    crawl_headers,
    main_frame_navigation,
)
from scrapy_focus.urls import Scope

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from scrapy_focus.config import BrowserConfig

logger = logging.getLogger(__name__)

#: Main-frame URLs that fetch nothing: a new page's, a document written by script,
#: the browser's own error page.
NOT_NAVIGATIONS = ("about:", "data:", "blob:", "chrome-error:")
#: Headers of the crawl that go with a redirect to anywhere, as a browser sends them.
_HARMLESS_HEADERS = frozenset({"referer"})


@dataclass
class SizeLimit:
    """DOWNLOAD_MAXSIZE / DOWNLOAD_WARNSIZE of one download, as Scrapy's HTTP
    handler reads them: request meta, else the spider's attribute, else the
    setting; 0 is no limit."""

    maxsize: int
    warnsize: int

    @classmethod
    def of(cls, request: Request, spider: Any, browser: BrowserConfig) -> SizeLimit:
        maxsize = getattr(spider, "download_maxsize", browser.download_maxsize)
        warnsize = getattr(spider, "download_warnsize", browser.download_warnsize)
        return cls(
            int(request.meta.get("download_maxsize", maxsize) or 0),
            int(request.meta.get("download_warnsize", warnsize) or 0),
        )


class DownloadGuard:
    """The scope, headers and size rules of one browser download (see the module
    docstring), bound to the page it runs in."""

    def __init__(
        self,
        engine: str,
        request: Request,
        rejection: Callable[[str], str | None],
        limit: SizeLimit,
        stats: Any,
    ) -> None:
        self.engine = engine
        self.request = request
        self.rejection = rejection
        self.limit = limit
        self.stats = stats
        self.page: Any = None
        self.left_scope: str | None = None  # the first main-frame URL off scope
        self.redirect: tuple[int, dict[str, str], str] | None = None  # status, headers, url
        self.cancelled: str | None = None  # why DOWNLOAD_MAXSIZE cancelled it
        self.warned = False
        self.changed: asyncio.Event | None = None  # set when the download must end
        self.finished = False  # the download returned; its page may live on

    @property
    def ended(self) -> bool:
        """Whether the page's answer is decided whatever it does next."""
        return bool(self.left_scope or self.redirect or self.cancelled)

    # -- the page's events

    def bind(self, page: Any) -> None:
        if self.page is page:
            return
        self.detach()
        self.page = page
        page.on("request", self._on_request)
        page.on("response", self._on_response)

    def detach(self) -> None:
        if self.page is not None:
            with contextlib.suppress(Exception):
                self.page.remove_listener("request", self._on_request)
                self.page.remove_listener("response", self._on_response)
            self.page = None

    def _on_request(self, playwright_request: Any) -> None:
        # Redirects the browser follows never reach the route: judged here, once sent.
        if main_frame_navigation(playwright_request):
            self.judge(playwright_request.url)

    def _on_response(self, response: Any) -> None:
        if not main_frame_navigation(response.request):
            return
        length = response.headers.get("content-length", "")
        if length.isdigit():
            self.check_size(int(length), expected=True)

    # -- decisions

    def judge(self, url: str) -> bool:
        """Whether the main frame may go to *url*; the first URL off scope ends
        the download."""
        if url == self.request.url or url.startswith(NOT_NAVIGATIONS):
            return True
        reason = self.rejection(url)
        if reason is None:
            return True
        if self.left_scope is None:
            self.left_scope = url
            self.stats.inc_value(f"focus/engine/{self.engine}/left_scope")
            logger.info(
                "The page of %s navigated out of the crawl's scope (%s) to %s: "
                "handed to the scheduler as a redirect",
                self.request.url,
                reason,
                url,
            )
            self._end()
        return False

    def check_size(self, size: int, *, expected: bool) -> None:
        from scrapy.utils._download_handlers import get_maxsize_msg, get_warnsize_msg

        if self.cancelled:
            return
        if self.limit.maxsize and size > self.limit.maxsize:
            self.cancelled = get_maxsize_msg(
                size, self.limit.maxsize, self.request, expected=expected
            )
            logger.warning(self.cancelled)
            self.stats.inc_value(f"focus/engine/{self.engine}/maxsize_cancelled")
            # Not stopped mid-navigation: closing the page or cancelling the goto
            # then can wait on the browser for good.  The download ends once the
            # page has loaded, and its requests meanwhile are aborted.
            self._end()
        elif self.limit.warnsize and size > self.limit.warnsize and not self.warned:
            self.warned = True
            logger.warning(
                get_warnsize_msg(size, self.limit.warnsize, self.request, expected=expected)
            )
            self.stats.inc_value(f"focus/engine/{self.engine}/warnsize")

    def _end(self) -> None:
        if self.changed is not None:
            self.changed.set()

    # -- the route of every request of the page

    async def route(self, route: Any, playwright_request: Any, inner: Any, data: dict) -> None:
        if self.finished:
            await self._route_idle(route, playwright_request, inner)
            return
        with contextlib.suppress(Exception):
            self.bind(playwright_request.frame.page)
        if self.cancelled:
            await route.abort()
            return
        if not main_frame_navigation(playwright_request):
            await inner(route, playwright_request)
            return
        if not self.judge(playwright_request.url):
            self.stats.inc_value(f"focus/engine/{self.engine}/navigation_aborted")
            await route.abort()
            return
        crawl = (
            crawl_headers(data["headers"])
            if carries_crawl_headers(playwright_request, data["url"])
            else {}
        )
        if not set(crawl) - _HARMLESS_HEADERS:
            await inner(route, playwright_request)
            return
        await self._fetch_unfollowed(route, playwright_request, data)

    async def _route_idle(self, route: Any, playwright_request: Any, inner: Any) -> None:
        """A request of the page after its download returned (a page kept for the
        next one still runs): its main frame stays in scope, without the crawl's
        headers."""
        if not main_frame_navigation(playwright_request):
            await inner(route, playwright_request)
        elif self.rejection(playwright_request.url) is not None:
            self.stats.inc_value(f"focus/engine/{self.engine}/navigation_aborted")
            await route.abort()
        else:
            await route.continue_()

    async def _fetch_unfollowed(self, route: Any, playwright_request: Any, data: dict) -> None:
        """The navigation with the crawl's headers, its redirects not followed."""
        process = data["process_headers"]
        if process is None:
            headers = dict(await playwright_request.all_headers())
        else:
            headers = await awaited(
                process(
                    browser_type_name=data["browser_type_name"],
                    playwright_request=playwright_request,
                    scrapy_request_data={key: data[key] for key in REQUEST_DATA_KEYS},
                )
            )
        kwargs: dict[str, Any] = {"headers": headers, "max_redirects": 0}
        if playwright_request.url.rstrip("/") == data["url"].rstrip("/"):
            kwargs["method"] = data["method"]
            if data["body"]:
                kwargs["post_data"] = data["body"]
        try:
            answer = await route.fetch(**kwargs)
        except Exception:
            with contextlib.suppress(Exception):
                await route.abort()
            raise
        location = answer.headers.get("location")
        if 300 <= answer.status < 400 and location:
            self.redirect = (
                answer.status,
                dict(answer.headers),
                urljoin(playwright_request.url, location),
            )
            self.stats.inc_value(f"focus/engine/{self.engine}/redirect_unfollowed")
            # The browser must not follow it: the same answer without its Location.
            kept = {k: v for k, v in answer.headers.items() if k.lower() != "location"}
            await route.fulfill(status=answer.status, headers=kept, body=b"")
            self._end()
            return
        await route.fulfill(response=answer)

    # -- the download's result

    def outcome(self, response: Response) -> Response:
        """The response the download returns: what the page answered, or a
        redirect for the scheduler to judge; DownloadCancelledError over
        DOWNLOAD_MAXSIZE."""
        if self.cancelled:
            raise DownloadCancelledError(self.cancelled)
        if self.redirect is not None:
            status, headers, location = self.redirect
            return redirect_response(response, status, {**headers, "location": location})
        if self.left_scope is None:
            self.judge(response.url)  # pushState, or a navigation seen too late
        if self.left_scope is not None:
            return redirect_response(response, 302, {"location": self.left_scope})
        self.check_size(len(response.body), expected=False)
        if self.cancelled:
            raise DownloadCancelledError(self.cancelled)
        return response


def redirect_response(response: Response, status: int, headers: dict[str, str]) -> Response:
    """A bodiless redirect, answered for the requested URL (the browser may have
    reached the target already: that page is not this download's answer)."""
    dropped = ("content-encoding", "content-length", "content-type")
    kept = {k: v for k, v in headers.items() if k.lower() not in dropped}
    return ScrapyResponse(
        url=response.request.url if response.request is not None else response.url,
        status=status,
        headers=kept,
        body=b"",
        request=response.request,
        flags=[*response.flags, "focus-redirect"],
    )


def crawl_rejection(crawler: Crawler) -> Callable[[str, int], str | None]:
    """The crawl's scope as the frontier applies it to redirect targets: the
    FocusScheduler's :class:`~scrapy_focus.urls.Scope` as it stands now (seeds
    widen it), else the spider's ``allowed_domains``, else any http(s) URL."""
    scheduler = getattr(getattr(crawler.engine, "_slot", None), "scheduler", None)
    scope = getattr(scheduler, "scope", None)
    if not isinstance(scope, Scope):
        domains = tuple(d.lower() for d in getattr(crawler.spider, "allowed_domains", None) or ())
        scope = Scope(allowed_domains=domains)
    return scope.rejection
