"""Links to pages the frontier is done with (scrapy_focus.frontier.known): dropped where a
page yields them, with the same crawl as when the scheduler drops them."""

from __future__ import annotations

import logging
import zlib
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.dupefilters import BaseDupeFilter

from harness.farm import Farm, FarmRequest
from harness.farm_pages import Page
from scrapy_focus.frontier.known import PageLinks
from scrapy_focus.runtime import FocusRuntime
from tests.crawl import run_crawl, run_focus_crawl
from tests.test_frontier_rediscovery import SITE, drain, link, open_scheduler


class OwnDupeFilter(BaseDupeFilter):
    """A user's dupefilter: it, not the frontier's seen set, says what is a duplicate."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def request_seen(self, request: Request) -> bool:
        if request.url in self.seen:
            return True
        self.seen.add(request.url)
        return False


class Builder(list[str]):
    """A spider's request builder for a link, which keeps the URLs it built."""

    def __call__(self, url: str) -> Request:
        self.append(url)
        return Request(url)


STARTUP = "Links to pages the crawl is done with, and a page's repeats of a link, are dropped"


def test_a_link_is_settled_once_its_page_is_taken_never_while_it_waits(tmp_path, caplog):
    with (
        caplog.at_level(logging.INFO, logger="scrapy_focus"),
        open_scheduler(tmp_path) as scheduler,
    ):
        assert STARTUP in caplog.text  # a difference from Scrapy, said at start-up
        known = FocusRuntime.of(scheduler.crawler).known_links
        first = link("/a.html", "/", 0.2, "threads")
        assert not known.settled(first)  # never seen
        assert scheduler.enqueue_request(first)
        # queued: found again in a better context it may move up, so it goes on
        assert not known.settled(link("/a.html", "/b.html", 0.9, "threads and locks"))
        assert [r.url for r in drain(scheduler)] == [f"{SITE}/a.html"]
        assert known.settled(link("/a.html", "/c.html", 0.9, "threads"))
        assert known.settled(link("/a.html#section", "/c.html", 0.9, "threads"))
        assert not known.settled(Request(f"{SITE}/a.html", dont_filter=True))
        # a link the frontier refused is seen: a second link to it is a duplicate
        away = Request("http://elsewhere.example/x.html", meta={"depth": 1})
        assert not scheduler.enqueue_request(away)
        assert scheduler.stats.get_value("focus/frontier/rejected/off-domain") == 1
        assert known.settled(Request("http://elsewhere.example/x.html"))
    assert not known.settled(link("/a.html", "/c.html", 0.9, "threads"))  # closed


def test_a_link_asked_again_is_answered_without_building_its_request(tmp_path):
    build = Builder()
    with open_scheduler(tmp_path) as scheduler:
        known = FocusRuntime.of(scheduler.crawler).known_links
        request = known.follow(f"{SITE}/d.html", "utf-8", build, PageLinks())
        assert request is not None
        assert scheduler.enqueue_request(request)
        # still queued: each page that links to it offers it, as a new request
        assert known.follow(f"{SITE}/d.html", "utf-8", build, PageLinks()) is not None
        assert len(build) == 2
        drain(scheduler)
        page = PageLinks()
        assert known.follow(f"{SITE}/d.html", "utf-8", build, page) is None
        assert len(build) == 2
        assert known.follow(f"{SITE}/e.html#top", "utf-8", build, page) is not None
        assert build[-1] == f"{SITE}/e.html#top"  # a new URL is built once, to be fingerprinted
        known.count(page)
        stats = scheduler.stats
        assert stats.get_value("focus/links/known") == 1
        assert stats.get_value("dupefilter/filtered") == 1
        assert stats.get_value("focus/frontier/duplicate") == 1


def test_a_link_a_page_repeats_goes_on_once(tmp_path):
    build = Builder()
    with open_scheduler(tmp_path) as scheduler:
        known = FocusRuntime.of(scheduler.crawler).known_links
        index = PageLinks()  # a page whose every entry links to an anchor of one page
        assert known.follow(f"{SITE}/f.html#one", "utf-8", build, index) is not None
        assert known.follow(f"{SITE}/f.html#two", "utf-8", build, index) is None
        assert known.follow(f"{SITE}/f.html", "utf-8", build, index) is None
        assert build == [f"{SITE}/f.html#one"]  # a repeat is not even built
        # asked with another encoding, its request may differ (a non-ASCII query)
        assert known.follow(f"{SITE}/f.html#one", "cp1252", build, index) is not None
        # another page offers it again: the frontier may raise it from there
        assert known.follow(f"{SITE}/f.html#two", "utf-8", build, PageLinks()) is not None
        # a URL the spider does not follow (build gives None) is no repeat: asked again
        for _ in range(2):
            assert known.follow(f"{SITE}/figure.png", "utf-8", lambda url: None, index) is None
        # the middleware's side, for any spider's requests: a repeat of one passed on
        page = PageLinks()
        first = link("/g.html", "/", 0.2, "threads")
        assert known.admit(first, page)
        known.passed(first, page)
        assert not known.admit(link("/g.html#later", "/", 0.2, "threads"), page)
        assert known.admit(Request(f"{SITE}/g.html", dont_filter=True), page)
        # one the page dropped after admit (its cap on links) was not passed on: no repeat
        capped = link("/h.html", "/", 0.2, "threads")
        assert known.admit(capped, page)
        assert known.admit(link("/h.html", "/", 0.2, "threads"), page)
        known.count(index)
        known.count(page)
        stats = scheduler.stats
        assert stats.get_value("focus/links/repeated") == 3
        assert stats.get_value("focus/links/known") is None
        assert stats.get_value("dupefilter/filtered") == 3


@pytest.mark.parametrize(
    "settings",
    [{"DUPEFILTER_DEBUG": True}, {"DUPEFILTER_CLASS": f"{__name__}.OwnDupeFilter"}],
    ids=["dupefilter-debug", "own-dupefilter"],
)
def test_with_a_dupefilter_of_its_own_every_link_goes_to_the_scheduler(tmp_path, settings, caplog):
    with caplog.at_level(logging.INFO), open_scheduler(tmp_path, **settings) as scheduler:
        assert STARTUP not in caplog.text
        known = FocusRuntime.of(scheduler.crawler).known_links
        assert scheduler.enqueue_request(link("/a.html", "/", 0.2, "threads"))
        drain(scheduler)
        assert not known.settled(link("/a.html", "/c.html", 0.9, "threads"))
        page = PageLinks()
        assert known.follow(f"{SITE}/a.html", "utf-8", Request, page) is not None
        assert known.follow(f"{SITE}/a.html", "utf-8", Request, page) is not None  # a repeat
        request = link("/a.html", "/", 0.2, "threads")
        known.passed(request, page)
        assert known.admit(request, page)


# -- in real crawls

ASTRONOMY = "astronomy: stars, planets, telescopes, galaxies and comets"
PAGES = 40
WORDS = ["stars planets telescopes", "galaxies comets orbits", "gardens roses soil", "ships sails"]


def _site(request: FarmRequest) -> Page | None:
    """A site whose every page links to every page (a sidebar, some with a fragment),
    and to two of them twice more, with a few words of one of four subjects, and its
    latency shuffled by the path."""
    if not request.path.startswith("/nav/"):
        return None
    n = int(request.path.removeprefix("/nav/").removesuffix(".html"))
    sidebar = "".join(
        f'<li><a href="/nav/{m}.html{"#top" if m % 3 == 0 else ""}">'
        f"{WORDS[m % 4].split()[0]} {m}</a></li>"
        for m in range(PAGES)
    )
    text = " ".join([WORDS[n % 4]] * 20)
    # and, in its text, its next pages, each twice (an index's entries, anchors of a page)
    see = "".join(
        f'<a href="/nav/{m}.html#a">{WORDS[m % 4]}</a> <a href="/nav/{m}.html#b">more</a> '
        for m in ((n + 1) % PAGES, (n + 5) % PAGES)
    )
    body = (
        f"<html><head><title>{WORDS[n % 4]} {n}</title></head><body><nav><ul>{sidebar}</ul>"
        f"</nav><article><h1>Page {n}</h1><p>{text}</p><p>See {see}</p></article></body></html>"
    )
    delay = 0.01 * (zlib.crc32(request.path.encode()) % 4)
    return Page(body.encode(), delay=delay)


def _crawl(tmp_path: Path, name: str, settings: dict[str, Any], spider: bool) -> Any:
    workdir = tmp_path / name
    workdir.mkdir()
    common = {
        "CONCURRENT_REQUESTS": 4,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 4,
        "DOWNLOAD_DELAY": 0,
        "FOCUS_REPRODUCIBLE_ORDER": True,
        "FOCUS_EMIT_UNCHANGED": True,
        **settings,
    }
    with Farm(route=_site) as farm:
        seed = farm.url("/nav/0.html")
        if spider:  # a user's own spider, following every link with response.follow
            common.update({"FOCUS_TOPIC": ASTRONOMY, "FOCUS_CORPUS_ENABLED": False})
            result = run_crawl(workdir, [seed], common, follow=True)
        else:
            result = run_focus_crawl(workdir, [seed], ASTRONOMY, common)
        prefix = farm.base
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats["finish_reason"] == "finished"
    return [item["url"].removeprefix(prefix) for item in result.items], result.stats


@pytest.mark.parametrize("spider", [False, True], ids=["focus-spider", "own-spider"])
def test_dropping_them_where_they_are_found_changes_nothing_but_the_work(tmp_path, spider):
    dropped, stats = _crawl(tmp_path, "dropped", {}, spider)
    # DUPEFILTER_DEBUG logs every duplicate, so each goes to the scheduler as before
    passed, passed_stats = _crawl(tmp_path, "passed", {"DUPEFILTER_DEBUG": True}, spider)
    assert dropped == passed
    assert len(dropped) == PAGES
    for key in ("dupefilter/filtered", "scheduler/enqueued", "focus/frontier/raised"):
        assert stats.get(key) == passed_stats.get(key), key
    assert "focus/links/known" not in passed_stats
    assert "focus/links/repeated" not in passed_stats
    # every page links to all 40: most links lead to pages fetched or on their way
    assert stats["focus/links/known"] > 0.5 * stats["dupefilter/filtered"]
    # and repeats: each page links to two pages thrice (the sidebar, then two anchors),
    # which FocusSpider offers once; a user's spider's repeats of a link passed on stop
    # in the middleware (those of a settled link count as known)
    if spider:
        assert stats["focus/links/repeated"] > 0
    else:
        assert stats["focus/links/repeated"] == 4 * PAGES
