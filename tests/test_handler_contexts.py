"""FocusDownloadHandler's browser contexts: generations, shared by the handlers of
every scheme, closed once no download holds them (no browser starts here: the
scrapy-playwright handler is a stand-in with its ``context_wrappers`` table)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import Any

import pytest
from scrapy import Spider
from scrapy.utils.test import get_crawler

from scrapy_focus import settings as focus_defaults
from scrapy_focus.engines.handler import FocusDownloadHandler
from scrapy_focus.engines.playwright_meta import DownloadMeta, without_attempt_keys

CHROMIUM = "/usr/bin/chromium"


@dataclass
class FakeContext:
    pages: list[Any] = field(default_factory=list)
    closed: bool = False

    async def close(self) -> None:
        await asyncio.sleep(0)  # a real close awaits the browser: others run meanwhile
        self.closed = True


@dataclass
class FakeWrapper:
    context: FakeContext


class FakePlaywrightHandler:
    """What BrowserPool.recycle reads of scrapy-playwright's handler: its context table."""

    def __init__(self) -> None:
        self.context_wrappers: dict[str, FakeWrapper] = {}

    def open(self, name: str) -> FakeContext:
        wrapper = self.context_wrappers.setdefault(name, FakeWrapper(FakeContext()))
        return wrapper.context


class NoHttp:
    """The http engine's handler, unused: Scrapy's own wants a running reactor."""

    @classmethod
    def from_crawler(cls, crawler: Any) -> NoHttp:
        return cls()


def handlers(context_pages: int = 2, count: int = 1) -> list[FocusDownloadHandler]:
    if not os.path.exists(CHROMIUM):
        pytest.skip("needs Debian's chromium (see .ci/setup)")
    settings = {
        **focus_defaults.defaults(),
        "FOCUS_ENGINES": "http,chromium",
        "FOCUS_CHROMIUM_EXECUTABLE": CHROMIUM,
        "FOCUS_BROWSER_CONTEXT_PAGES": context_pages,
        "FOCUS_HTTP_HANDLER": f"{__name__}.NoHttp",  # never used here
    }
    crawler = get_crawler(Spider, settings)
    return [FocusDownloadHandler(crawler) for _ in range(count)]


def test_contexts_change_generation_every_context_pages_pages():
    (handler,) = handlers(context_pages=2)
    names = [handler.pool.take_context("chromium") for _ in range(5)]
    assert names == ["focus-chromium-0"] * 2 + ["focus-chromium-1"] * 2 + ["focus-chromium-2"]


def test_handlers_of_both_schemes_share_the_generations():
    http, https = handlers(context_pages=2, count=2)
    assert http.pool is https.pool
    taken = [http.pool.take_context("chromium"), https.pool.take_context("chromium")]
    assert taken == ["focus-chromium-0", "focus-chromium-0"]
    assert https.pool.take_context("chromium") == "focus-chromium-1"


def test_an_old_context_a_download_still_holds_is_not_closed():
    (handler,) = handlers(context_pages=1)
    shared, playwright = handler.pool, FakePlaywrightHandler()
    held = shared.take_context("chromium")  # a download with no page yet
    old = playwright.open(held)
    playwright.open(shared.take_context("chromium"))  # the next generation
    asyncio.run(handler.pool.recycle("chromium", playwright))
    assert not old.closed and held in playwright.context_wrappers
    shared.release_context(held)
    asyncio.run(handler.pool.recycle("chromium", playwright))
    assert old.closed and held not in playwright.context_wrappers


def test_downloads_ending_together_close_each_old_context_once():
    (handler,) = handlers(context_pages=1)
    shared, playwright = handler.pool, FakePlaywrightHandler()
    old = []
    for _ in range(4):
        name = shared.take_context("chromium")
        old.append(playwright.open(name))
        shared.release_context(name)
    current = shared.take_context("chromium")
    playwright.open(current)

    async def end_together() -> None:
        await asyncio.gather(*(handler.pool.recycle("chromium", playwright) for _ in range(3)))

    asyncio.run(end_together())  # raised KeyError when one closed what another listed
    assert all(context.closed for context in old)
    assert list(playwright.context_wrappers) == [current]
    assert handler.stats.get_value("focus/engine/chromium/contexts_recycled") == 4


def test_a_context_with_a_page_kept_open_stays():
    (handler,) = handlers(context_pages=1)
    shared, playwright = handler.pool, FakePlaywrightHandler()
    name = shared.take_context("chromium")
    kept = playwright.open(name)
    kept.pages.append(object())  # playwright_include_page: the spider closes it
    shared.release_context(name)
    playwright.open(shared.take_context("chromium"))
    asyncio.run(handler.pool.recycle("chromium", playwright))
    assert not kept.closed and name in playwright.context_wrappers


def test_a_downloads_playwright_keys_are_put_back_except_how_it_was_made():
    """Closures and pages of one download never go back to the scheduler; the user's
    own values come back as they were."""
    user_methods = ["the user's"]
    meta: dict[str, Any] = {"playwright_page_methods": user_methods}
    download = DownloadMeta(meta)
    download.set("playwright", True)
    download.set("playwright_context", "focus-chromium-0")
    download.set("playwright_page_methods", ["ours", *user_methods])
    download.set("playwright_page", None)
    meta["playwright_page"] = object()  # what scrapy-playwright leaves there
    download.set("playwright_include_page", True)
    download.restore()
    assert meta == {
        "playwright": True,
        "playwright_context": "focus-chromium-0",
        "playwright_page_methods": user_methods,
    }


def test_an_escalated_request_forgets_scrapys_and_playwrights_attempt_keys():
    meta = {"playwright": True, "playwright_page": object(), "retry_times": 2, "depth": 3}
    assert without_attempt_keys(meta) == {"depth": 3}
