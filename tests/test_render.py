"""The render wait (scrapy_focus/engines/render.py): a browser download returns when
the page's content is there, in real Chromium and real Firefox, through real crawls
of the late-rendering sites of harness/hostile_render.py."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from harness.hostile import HostileWeb, article_parts
from harness.hostile_render import HYDRATE_OFFSET, ROUTE_OFFSET, TIMER_OFFSET, XHR_OFFSET
from scrapy_focus.engines.render import Reading, decide
from tests.crawl import CrawlResult, run_crawl
from tests.test_ladder import CHROMIUM, FIREFOX, SETTINGS

BUDGET = 3.0  # FOCUS_BROWSER_RENDER_WAIT of the crawls: the ticker's wait ends there

#: Both browser engines: one wait, in the handler they share.
BROWSERS = [
    pytest.param(
        "chromium", marks=pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs chromium")
    ),
    pytest.param(
        "stealth", marks=pytest.mark.skipif(not os.path.exists(FIREFOX), reason="needs firefox-esr")
    ),
]


def late_pages(web: HostileWeb) -> dict[str, str]:
    """URL → the first words of its article, for each kind of late rendering."""
    pages = {
        web.timer.url("/article/1.html"): article_parts(TIMER_OFFSET + 1),
        web.xhr.url("/article/1.html"): article_parts(XHR_OFFSET + 1),  # XMLHttpRequest
        web.xhr.url("/article/2.html"): article_parts(XHR_OFFSET + 2),  # fetch
        web.hydrate.url("/article/1.html"): article_parts(HYDRATE_OFFSET + 1),
        web.route.url("/article/1.html"): article_parts(ROUTE_OFFSET + 1),
    }
    return {url: paragraphs[0][:60] for url, (_, paragraphs) in pages.items()}


def render_crawl(
    tmp_path: Path, web: HostileWeb, urls: list[str], engine: str, args=None, **settings: Any
) -> CrawlResult:
    """A crawl of *urls* on *engine* (history and the ladder start them there)."""
    hosts = {site.host: engine for site in (web.timer, web.xhr, web.hydrate, web.route, web.static)}
    merged = {
        **SETTINGS,
        "FOCUS_CORPUS_DIR": str(tmp_path / "corpus"),
        "FOCUS_ENGINES": f"http,{engine}",
        "FOCUS_ENGINE_DOMAINS": hosts,
        "FOCUS_BROWSER_RENDER_WAIT": BUDGET,
        "FOCUS_EMIT_REJECTED": True,
        **settings,
    }
    result = run_crawl(tmp_path, urls, merged, spider="trace_spider.py", timeout=180, args=args)
    assert result.returncode == 0, result.log[-3000:]
    return result


def by_url(result: CrawlResult) -> dict[str, dict[str, Any]]:
    return {item["url"]: item for item in result.items}


# -- the decision, a pure function -------------------------------------------------------


def reading(pending: int = 0, changes: int = 0, changed: float | None = None, activity=9.0):
    return Reading(pending=pending, changes=changes, changed=changed, activity=activity, text=10)


def test_a_page_with_nothing_pending_and_unchanged_since_domcontentloaded_is_complete() -> None:
    assert decide("auto", reading(), 0.5, None) == "complete"
    assert decide("auto", None, 0.5, None) == "complete"  # no tracker: not an HTML document


def test_pending_work_or_a_change_since_domcontentloaded_makes_the_page_wait() -> None:
    assert decide("auto", reading(pending=1), 0.5, None) is None
    assert decide("auto", reading(changes=1, changed=0.1), 0.5, None) is None
    # "always" waits even for a page that looks complete.
    assert decide("always", reading(), 0.5, None) is None


def test_a_page_is_stable_once_quiet_for_the_interval_with_nothing_pending() -> None:
    assert decide("auto", reading(changes=3, changed=0.6, activity=0.6), 0.5, 0.6) == "stable"
    assert decide("always", reading(), 0.5, 0.5) == "stable"
    assert decide("auto", reading(pending=1, changes=3, changed=2.0), 0.5, 2.0) is None
    assert decide("auto", reading(changes=3, changed=0.2), 0.5, 2.0) is None  # changed lately
    assert decide("auto", reading(changes=3, changed=2.0, activity=0.1), 0.5, 2.0) is None
    assert decide("auto", reading(changes=3, changed=2.0), 0.5, 0.2) is None  # text grew lately


# -- the sites fail without the wait (the regression) ------------------------------------


def test_without_the_render_wait_the_browser_returns_the_shell(
    hostile: HostileWeb, tmp_path: Path
) -> None:
    """The regression: what the browser engine returned before the render wait (the
    page as ``load`` left it), as ``"never"`` still does."""
    pages = late_pages(hostile)
    result = render_crawl(tmp_path, hostile, list(pages), "chromium", FOCUS_BROWSER_RENDER="never")
    items = by_url(result)
    for url, snippet in pages.items():
        item = items[url]
        assert snippet not in item["markdown"], url
        last = item["trace"][-1]
        assert (last["engine"], last["render_wait"], last["render_end"]) == ("chromium", None, None)
    assert not any(key.startswith("focus/render/") for key in result.stats)


# -- the wait, in both browsers ---------------------------------------------------------


@pytest.mark.parametrize("engine", BROWSERS)
def test_content_that_renders_late_is_waited_for_and_complete_pages_pay_nothing(
    hostile: HostileWeb, tmp_path: Path, engine: str
) -> None:
    pages = late_pages(hostile)
    static = hostile.static.url("/articles/1.html")
    ticker = hostile.timer.url("/ticker.html")
    moving = hostile.route.url("/moving/3.html")
    outside = hostile.recorder
    outside.received.clear()
    leaving = hostile.route.url(f"/moving/4.html?to={outside.url('/elsewhere.html')}")
    urls = [*pages, static, ticker, moving, leaving]
    # The hard cap (DOWNLOAD_TIMEOUT, from the download's start) past the budget.
    args = {"user_methods": "1"}
    result = render_crawl(tmp_path, hostile, urls, engine, args, DOWNLOAD_TIMEOUT=15.0)
    items = by_url(result)
    for url, snippet in pages.items():
        item = items[url]
        last = item["trace"][-1]
        assert snippet in item["markdown"], (url, last, item["markdown"][:300])
        assert (last["engine"], last["verdict"], last["render_end"]) == (engine, "ok", "stable")
        assert 0 < last["render_wait"] < BUDGET, url
        assert snippet in item["user_text"], url  # the user's PageMethods run after the wait
    # The route's page answers at its route, as a person's browser would show it.
    assert items[hostile.route.url("/article/1.html")]["final_url"].endswith("/app/article/1")
    # Complete at load: no wait at all.
    last = items[static]["trace"][-1]
    assert (last["render_end"], last["render_wait"]) == ("complete", 0.0)
    # A page that never stops changing: the budget ends it, its content there.
    last = items[ticker]["trace"][-1]
    assert last["render_end"] == "budget"
    assert BUDGET - 0.05 <= last["render_wait"] <= BUDGET + 0.5
    assert article_parts(TIMER_OFFSET + 999)[1][0][:60] in items[ticker]["markdown"]
    # A page that loads another document mid-wait: the navigation ends it, and the
    # download answers with the document it led to.
    last = items[moving]["trace"][-1]
    assert last["render_end"] == "navigation"
    assert article_parts(ROUTE_OFFSET + 3)[1][0][:60] in items[moving]["markdown"]
    # One that leaves the scope mid-wait: the guard aborts it and the wait ends there;
    # the download is the redirect the scheduler rejects.
    assert leaving not in items
    assert outside.received == []
    stats = result.stats
    assert stats[f"focus/engine/{engine}/left_scope"] == 1
    assert stats["focus/render/end/stable"] == len(pages)
    assert stats["focus/render/end/complete"] == 1
    assert stats["focus/render/end/budget"] == 1
    assert stats["focus/render/end/navigation"] == 2
    assert stats["focus/render/seconds"] >= BUDGET


def test_always_waits_until_stable_even_on_a_page_complete_at_load(
    hostile: HostileWeb, tmp_path: Path
) -> None:
    static = hostile.static.url("/articles/2.html")
    result = render_crawl(tmp_path, hostile, [static], "chromium", FOCUS_BROWSER_RENDER="always")
    last = by_url(result)[static]["trace"][-1]
    assert last["render_end"] == "stable"
    assert 0 < last["render_wait"] < BUDGET
