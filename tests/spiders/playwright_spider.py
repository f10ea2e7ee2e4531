"""A scrapy-playwright user's spider: the requests and callbacks of scrapy-playwright's
README, for tests/compat/test_playwright_parity.py to run once with scrapy-playwright's
own handler and once with scrapy-focus's.

Arguments: ``-a scenario=NAME`` (which requests: ``start_<NAME>``), ``-a base=URL`` (the
test server), ``-a tls=URL`` (the same server over HTTPS, for the ``meta`` scenario).
Each callback yields one item per request, ``{"id": ..., ...}``: what the spider saw.

The helpers below (a header function, an abort predicate, a page init callback) are
importable as ``tests.spiders.playwright_spider.NAME``, as a user's settings name them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import scrapy
from scrapy_playwright.page import PageMethod

#: Settings whose ``-s NAME=None`` means None (the command line gives the string).
NONE_SETTINGS = ("PLAYWRIGHT_PROCESS_REQUEST_HEADERS",)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


async def parity_headers(
    *, browser_type_name: str, playwright_request: Any, scrapy_request_data: dict
) -> dict[str, str]:
    """PLAYWRIGHT_PROCESS_REQUEST_HEADERS: the browser's headers, plus one of ours on
    every request and the Scrapy request's ``X-From-Scrapy`` (README's example copies
    ``Cookie`` the same way)."""
    headers = dict(await playwright_request.all_headers())
    headers["x-parity"] = "custom"
    scrapy_headers = scrapy_request_data["headers"].to_unicode_dict()
    if scrapy_headers.get("X-From-Scrapy"):
        headers["x-from-scrapy"] = scrapy_headers["X-From-Scrapy"]
    return headers


def abort_blocked_script(request: Any) -> bool:
    """PLAYWRIGHT_ABORT_REQUEST: abort one script, let everything else load."""
    return request.url.endswith("/assets/blocked.js")


async def init_page(page: Any, request: scrapy.Request) -> None:
    """playwright_page_init_callback (README: ``page.add_init_script``)."""
    await page.add_init_script("window.__parity_init = 'ran'")


class PlaywrightParitySpider(scrapy.Spider):
    name = "playwright_parity"

    def __init__(self, scenario: str = "basics", base: str = "", tls: str = "", **kwargs: Any):
        super().__init__(**kwargs)
        self.scenario = scenario
        self.base = base.rstrip("/")
        self.tls = tls.rstrip("/")
        self.pages: dict[str, Any] = {}  # id -> page, for playwright_page chains
        self.events: dict[str, list[str]] = {}  # playwright_page_event_handlers saw

    @classmethod
    def update_settings(cls, settings: Any) -> None:
        super().update_settings(settings)
        for name in NONE_SETTINGS:
            if settings.get(name) == "None":
                # Above the command line's priority: Scrapy applies -s values again later.
                settings.set(name, None, priority=settings.getpriority(name) + 1)

    def url(self, path: str) -> str:
        return self.base + path

    def request(self, path: str, id: str, callback: Any = None, **meta: Any) -> scrapy.Request:
        return scrapy.Request(
            self.url(path) if path.startswith("/") else path,
            meta={"playwright": True, **meta},
            callback=callback or self.parse,
            errback=self.failed,
            cb_kwargs={"id": id},
            dont_filter=True,
        )

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for request in getattr(self, f"start_{self.scenario}")():
            yield request

    # -- scenarios

    def start_basics(self) -> Any:
        """PLAYWRIGHT_BROWSER_TYPE, _LAUNCH_OPTIONS, _CONTEXTS; meta playwright and
        playwright_context ("bare": a context of no options, made while crawling)."""
        yield self.request("/probe?id=default", "default")
        yield self.request("/probe?id=named", "named", playwright_context="named")
        yield self.request("/probe?id=bare", "bare", playwright_context="bare")
        yield self.request("/plain?id=rendered", "rendered", playwright_context="bare")
        yield self.request("/thin?id=thin", "thin", playwright_context="bare")
        # A download that fails (its own goto timeout), for scrapy-playwright's warning.
        yield self.request(
            "/slow?s=3&id=goto-timeout",
            "goto-timeout",
            playwright_context="bare",
            playwright_page_goto_kwargs={"timeout": 1000},
        )
        plain = self.request("/plain?id=unrendered", "unrendered")
        plain.meta.pop("playwright")
        yield plain

    def start_timeout(self) -> Any:
        """PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT: a page slower than it, one faster."""
        yield self.request("/slow?s=4&id=slow", "slow")
        yield self.request("/probe?id=fast", "fast")

    def start_headers(self) -> Any:
        """PLAYWRIGHT_PROCESS_REQUEST_HEADERS: a page and its script, with a Scrapy header."""
        request = self.request("/assets-page?id=headers", "headers")
        request.headers["X-From-Scrapy"] = "yes"
        yield request

    def start_pages(self) -> Any:
        """PLAYWRIGHT_MAX_PAGES_PER_CONTEXT: two slow pages in each of two contexts."""
        for context in ("A", "B"):
            for n in (1, 2):
                id = f"{context}{n}"
                yield self.request(
                    f"/slow?s=1&ctx={context}&id={id}", id, playwright_context=context
                )

    def start_contexts(self) -> Any:
        """PLAYWRIGHT_MAX_CONTEXTS: three contexts, each closed by its callback (README)."""
        for n in (1, 2, 3):
            id = f"c{n}"
            yield self.request(
                f"/slow?s=0.5&ctx={id}&id={id}",
                id,
                self.parse_and_close_context,
                playwright_context=id,
                playwright_include_page=True,
            )

    def start_abort(self) -> Any:
        """PLAYWRIGHT_ABORT_REQUEST: a page with an image and two scripts."""
        yield self.request("/assets-page?id=abort", "abort")

    def start_meta(self) -> Any:
        """The request meta keys, one request (or chain) each, in scrapy-playwright's
        default setup."""
        yield self.request("/probe?id=include", "include", self.parse_include, **_INCLUDE)
        yield self.request("/probe?id=chain1", "chain1", self.parse_chain_first, **_INCLUDE)
        yield self.request(
            "/clicky?id=methods",
            "methods",
            self.parse_methods,
            playwright_page_methods=[
                PageMethod("evaluate", "() => 1 + 2"),
                PageMethod("click", "#go"),
                PageMethod("screenshot", type="png"),
            ],
        )
        yield self.request(
            "/clicky?id=navigate",
            "navigate",
            playwright_page_methods={"click": PageMethod("click", selector="a#nav")},
        )
        yield self.request("/probe?id=init", "init", playwright_page_init_callback=init_page)
        yield from self.start_meta_page()
        yield self.request(
            "/probe?id=kwargs1",
            "kwargs1",
            self.parse_kwargs_first,
            playwright_context="fresh",
            playwright_context_kwargs={"user_agent": "KwargsContext/1.0"},
        )
        yield self.request("/probe?id=security-http", "security-http")
        if self.tls:
            yield self.request(
                self.tls + "/probe?id=security-https",
                "security-https",
                playwright_context="tls",
                playwright_context_kwargs={"ignore_https_errors": True},
            )

    def start_meta_page(self) -> Any:
        """playwright_page_goto_kwargs and playwright_page_event_handlers, on their own
        (the ``meta`` scenario has them too, among the other keys)."""
        yield self.request(
            "/lazy?id=goto",
            "goto",
            playwright_page_goto_kwargs={
                "wait_until": "domcontentloaded",
                "referer": self.url("/from-here"),
            },
        )
        yield self.request("/lazy?id=goto-default", "goto-default")
        yield self.request(
            "/probe?id=events",
            "events",
            self.parse_events,
            playwright_page_event_handlers={
                "console": self.on_console,  # a callable
                "response": "on_response",  # a spider method's name
            },
        )

    # -- callbacks

    def observed(self, response: scrapy.http.Response, id: str) -> dict[str, Any]:
        probe = response.css("#probe::text").get()
        with_json = probe is not None and probe.startswith("{")
        security = response.meta.get("playwright_security_details", "absent")
        return {
            "id": id,
            "url": response.url,
            "status": response.status,
            "flags": list(response.flags),
            "context": response.meta.get("playwright_context"),
            "probe": json.loads(probe) if with_json else probe,
            "rendered": b"rendered-by-js" in response.body,
            "clicked": b"clicked-by-page-method" in response.body,
            "loaded": b'data-loaded="yes"' in response.body,
            "has_page": "playwright_page" in response.meta,
            "security": security if security in (None, "absent") else dict(security),
        }

    def parse(self, response: scrapy.http.Response, id: str) -> Any:
        yield self.observed(response, id)

    async def failed(self, failure: Any) -> AsyncIterator[dict[str, Any]]:
        request = failure.request
        page = request.meta.get("playwright_page")
        if page is not None:
            await page.close()  # README: close the page in the errback
        yield {
            "id": request.cb_kwargs.get("id"),
            "error": type(failure.value).__name__,
            "message": str(failure.value)[:500],
        }

    async def parse_include(self, response: scrapy.http.Response, id: str) -> Any:
        page = response.meta["playwright_page"]
        title = await page.title()
        answer = await page.evaluate("() => 6 * 7")
        await page.close()
        yield {
            **self.observed(response, id),
            "title": title,
            "answer": answer,
            "closed": page.is_closed(),
        }

    async def parse_chain_first(self, response: scrapy.http.Response, id: str) -> Any:
        page = response.meta["playwright_page"]
        self.pages[id] = page
        yield self.observed(response, id)
        yield self.request(
            "/probe?id=chain2", "chain2", self.parse_chain_second, playwright_page=page, **_INCLUDE
        )

    async def parse_chain_second(self, response: scrapy.http.Response, id: str) -> Any:
        page = response.meta["playwright_page"]
        history = await page.evaluate("() => history.length")
        same = page is self.pages["chain1"]
        await page.close()
        yield {**self.observed(response, id), "same_page": same, "history": history}

    def parse_methods(self, response: scrapy.http.Response, id: str) -> Any:
        methods = response.meta["playwright_page_methods"]
        screenshot = methods[2].result
        yield {
            **self.observed(response, id),
            "evaluate": methods[0].result,
            "png": isinstance(screenshot, bytes) and screenshot.startswith(PNG_MAGIC),
        }

    async def parse_and_close_context(self, response: scrapy.http.Response, id: str) -> Any:
        page = response.meta["playwright_page"]
        await page.close()  # README: the page before its context
        await page.context.close()
        yield self.observed(response, id)

    def parse_events(self, response: scrapy.http.Response, id: str) -> Any:
        yield {**self.observed(response, id), "events": self.events}

    def parse_kwargs_first(self, response: scrapy.http.Response, id: str) -> Any:
        yield self.observed(response, id)
        # The context exists now: README says these kwargs are ignored.
        yield self.request(
            "/probe?id=kwargs2",
            "kwargs2",
            playwright_context="fresh",
            playwright_context_kwargs={"user_agent": "Ignored/2.0"},
        )

    # -- page event handlers

    def on_console(self, message: Any) -> None:
        self.events.setdefault("console", []).append(message.text)

    async def on_response(self, response: Any) -> None:
        self.events.setdefault("response", []).append(response.url)


_INCLUDE = {"playwright_include_page": True}
