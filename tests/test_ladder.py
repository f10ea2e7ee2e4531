"""The engine ladder in real crawls of the hostile web, with real Chromium and Firefox.

One crawl (``ladder``) visits every hostile site at once; most tests read
what it left: items, the corpus, the final stats, and what each site saw
(``Site.hits``: path, user agent, status, time).  History, breaker and
stealth-less crawls run on their own.  Every crawl is tagged through its
environment, which its browsers and drivers inherit: processes still carrying
the tag after the crawl has exited are leaks.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.crawl import crawl_env
from harness.hostile import (
    FLAKY_RETRY_AFTER,
    RETRY_AFTER,
    Hit,
    HostileWeb,
    Site,
    encoding_pages,
    spa_marker,
)
from scrapy_focus.corpus.reader import Corpus
from scrapy_focus.engines.discovery import camoufox_browser
from tests.crawl import CrawlResult, run_crawl, run_focus_crawl

CHROMIUM = "/usr/bin/chromium"
FIREFOX = shutil.which("firefox-esr") or "/usr/bin/firefox-esr"

pytestmark = pytest.mark.skipif(
    not (os.path.exists(CHROMIUM) and os.path.exists(FIREFOX)),
    reason="needs Debian's chromium and firefox-esr (see .ci/setup)",
)

SETTINGS: dict[str, Any] = {
    "FOCUS_CHROMIUM_EXECUTABLE": CHROMIUM,
    "FOCUS_FIREFOX_EXECUTABLE": FIREFOX,  # FOCUS_STEALTH_BROWSER "auto": Camoufox if installed
    "DOWNLOAD_TIMEOUT": 3.0,  # harness.hostile.TIMEOUT_DELAY is over it
    "FOCUS_EXTRACT_WORKERS": 1,
    "FOCUS_EMIT_REJECTED": True,
    "FOCUS_EMIT_UNCHANGED": True,
    "FOCUS_LOG_INTERVAL": 0,
    "FOCUS_HISTORY_PROBE_RATE": 0.0,
    "FOCUS_BROWSER_MAX_PAGES": 2,
    "FOCUS_BROWSER_CONTEXT_PAGES": 3,
    # The sites' hits and the ladder's counts are of pages: no robots.txt among them
    # (the add-on obeys it by default; tests/test_scope.py pins that).
    "ROBOTSTXT_OBEY": False,
}
SPA_LEARNT = range(8)  # SPA pages of the first crawl; the second crawl takes the next ones
FIXABLE_LEARNT = range(1, 9)

# -- crawls, tagged so their processes can be found -------------------------------------

TAG = "FOCUS_TEST_CRAWL_TAG"


def tagged_processes(tag: str) -> dict[int, str]:
    """pid → command line of every process whose environment carries *tag*."""
    marker = f"{TAG}={tag}".encode()
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if marker not in Path(entry.path, "environ").read_bytes().split(b"\0"):
                continue
            cmdline = Path(entry.path, "cmdline").read_bytes()
        except OSError:  # gone meanwhile, or not ours
            continue
        if cmdline:  # a zombie has none: it is already dead
            found[int(entry.name)] = cmdline.replace(b"\0", b" ").decode(errors="replace")
    return found


def program(cmdline: str) -> str:
    return os.path.basename(cmdline.split(" ", 1)[0])


@dataclass
class Crawl:
    result: CrawlResult
    workdir: Path
    started: float
    ended: float
    seen: set[str] = field(default_factory=set)  # programs seen running under the crawl
    leftovers: dict[int, str] = field(default_factory=dict)

    @property
    def corpus(self) -> Path:
        return self.workdir / "corpus"

    @property
    def stats(self) -> dict[str, Any]:
        return self.result.stats

    def item(self, url: str) -> dict[str, Any]:
        found = [item for item in self.result.items if item["url"] == url]
        assert len(found) == 1, f"{len(found)} items for {url}: {self.result.log[-3000:]}"
        return found[0]

    def hits(self, site: Site, path: str | None = None) -> list[Hit]:
        return [
            hit
            for hit in site.hits
            if self.started <= hit.at <= self.ended and (path is None or hit.path == path)
        ]

    def versions(self, url: str) -> list[Any]:
        with Corpus(self.corpus) as corpus:
            page = corpus.page(url)
            assert page is not None, f"{url} not in the corpus"
            return page.versions()


def crawl(workdir: Path, seeds: list[str], **settings: Any) -> Crawl:
    """A focus-crawl of *seeds* with browser engines; waits for its processes to end."""
    workdir.mkdir(parents=True, exist_ok=True)
    tag = uuid.uuid4().hex
    seen: set[str] = set()
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.25):
            seen.update(program(cmdline) for cmdline in tagged_processes(tag).values())

    sampler = threading.Thread(target=sample, daemon=True)
    merged = {**SETTINGS, "FOCUS_CORPUS_DIR": str(workdir / "corpus"), **settings}
    started = time.monotonic()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(TAG, tag)
        sampler.start()
        try:
            result = run_focus_crawl(workdir, seeds, settings=merged, timeout=240)
        finally:
            done.set()
            sampler.join()
    ended = time.monotonic()
    leftovers = tagged_processes(tag)
    deadline = time.monotonic() + 5  # exiting is not leaking: give them a moment
    while leftovers and time.monotonic() < deadline:
        time.sleep(0.2)
        leftovers = tagged_processes(tag)
    for pid in leftovers:  # ours: do not leave them to the next test
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert result.returncode == 0, result.log[-5000:]
    return Crawl(result, workdir, started, ended, seen, leftovers)


# -- the big crawl ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def ladder(hostile: HostileWeb, tmp_path_factory: pytest.TempPathFactory) -> Crawl:
    web = hostile
    seeds = [
        web.static.hub("/articles/1.html", "/articles/2.html"),
        web.spa.hub(*(f"/spa/{n}.html" for n in SPA_LEARNT)),
        web.next.hub("/next/1.html"),
        web.challenge.hub("/article/1.html", "/article/2.html"),
        web.ua.hub("/article/1.html"),
        web.gone.hub("/missing.html", "/removed.html"),
        web.csp.hub("/article/1.html"),
        web.throttle.hub("/article/1.html"),
        web.flaky.hub("/article/1.html"),
        web.slow.hub("/slow/1.html", "/timeout/1.html"),
        web.huge.hub("/huge.html"),
        web.encodings.hub(*encoding_pages()),
        web.fixable.hub(*(f"/article/{n}.html" for n in FIXABLE_LEARNT)),
    ]
    return crawl(tmp_path_factory.mktemp("ladder"), seeds)


def engines_used(crawl: Crawl, site: Site, path: str) -> list[str]:
    """The user agents a site saw for *path*, as engine families."""
    families = []
    for hit in crawl.hits(site, path):
        if "HeadlessChrome" in hit.user_agent:
            families.append("chromium")
        elif "Firefox/" in hit.user_agent:
            families.append("firefox")
        elif hit.user_agent.startswith("Scrapy/"):
            families.append("http")
        else:
            families.append(hit.user_agent)
    return families


def test_static_articles_stay_on_http(ladder, hostile):
    for path in ("/articles/1.html", "/articles/2.html"):
        item = ladder.item(hostile.static.url(path))
        assert item["engine"] == "http"
        assert item["state"] == "accepted"
        assert engines_used(ladder, hostile.static, path) == ["http"]


def test_spa_shell_escalates_to_chromium_which_renders_the_text(ladder, hostile):
    escalated = 0
    for n in SPA_LEARNT:
        url = hostile.spa.url(f"/spa/{n}.html")
        item = ladder.item(url)
        assert item["engine"] == "chromium"
        assert spa_marker(n) in item["markdown"]
        used = engines_used(ladder, hostile.spa, f"/spa/{n}.html")
        (version,) = ladder.versions(url)
        if used == ["http", "chromium"]:
            escalated += 1
            # The shell was judged before extraction: no worker spent on it (chars None).
            assert [(a["verdict"], a["chars"]) for a in version.meta["focus"]["trace"]] == [
                ("shell", None)
            ]
        else:  # DomainHistory had learnt the site by then (the slow start let it)
            assert used == ["chromium"]
            assert version.meta["focus"]["trace"] == []
    assert escalated >= 2  # a few pages teach DomainHistory
    # The bundle was fetched by the browser: the text came from JavaScript.
    assert ladder.hits(hostile.spa, "/static/app.js")
    assert ladder.stats["focus/ladder/verdict/shell"] >= escalated
    assert ladder.stats["focus/extract/skipped/shell"] == ladder.stats["focus/ladder/verdict/shell"]


def test_next_data_page_with_server_rendered_text_stays_on_http(ladder, hostile):
    item = ladder.item(hostile.next.url("/next/1.html"))
    assert item["engine"] == "http"
    assert item["state"] == "accepted"
    assert engines_used(ladder, hostile.next, "/next/1.html") == ["http"]


def test_js_challenge_blocks_http_and_chromium_passes_it(ladder, hostile):
    site = hostile.challenge
    for path in ("/article/1.html", "/article/2.html"):
        item = ladder.item(site.url(path))
        assert item["engine"] == "chromium"
        assert item["state"] == "accepted"
        hits = ladder.hits(site, path)
        assert (hits[0].status, engines_used(ladder, site, path)[0]) == (503, "http")
        assert hits[-1].status == 200
        assert site.token in hits[-1].cookie  # JavaScript computed it; the server checked it
        (version,) = ladder.versions(site.url(path))
        assert (version.status, version.engine) == (200, "chromium")
        assert [(a["reason"], a["chars"]) for a in version.meta["focus"]["trace"]] == [
            ("challenge-cloudflare", None)  # judged before extraction
        ]
    assert ladder.stats["focus/engine/chromium/challenge_passed"] >= 1
    assert ladder.stats["focus/extract/skipped/blocked"] >= 2


def test_site_rejecting_headless_chromium_is_served_to_stealth_firefox(ladder, hostile):
    site = hostile.ua
    url = site.url("/article/1.html")
    item = ladder.item(url)
    assert item["engine"] == "stealth"
    assert item["state"] == "accepted"
    assert engines_used(ladder, site, "/article/1.html") == ["http", "chromium", "firefox"]
    assert [hit.status for hit in ladder.hits(site, "/article/1.html")] == [403, 403, 200]
    (version,) = ladder.versions(url)
    assert version.engine == "stealth"
    assert [(a["engine"], a["verdict"]) for a in version.meta["focus"]["trace"]] == [
        ("http", "blocked"),
        ("chromium", "blocked"),
    ]
    stealth_browser = "camoufox" if camoufox_browser() else os.path.basename(FIREFOX)
    assert ladder.stats["focus/engine/stealth/browser"] == stealth_browser
    assert ladder.stats["focus/engine/stealth/requests"] >= 1
    assert ladder.stats["focus/ladder/final/stealth"] >= 1


def test_404_and_410_are_final_on_http(ladder, hostile):
    site = hostile.gone
    for path, status in (("/missing.html", 404), ("/removed.html", 410)):
        assert engines_used(ladder, site, path) == ["http"]
        (version,) = ladder.versions(site.url(path))
        assert (version.status, version.engine, version.meta["focus"]["trace"]) == (
            status,
            "http",
            [],
        )
    assert ladder.stats["focus/ladder/verdict/genuine"] >= 2


def test_csp_header_naming_vendors_does_not_escalate_a_healthy_page(ladder, hostile):
    item = ladder.item(hostile.csp.url("/article/1.html"))
    assert item["engine"] == "http"
    assert item["state"] == "accepted"
    assert engines_used(ladder, hostile.csp, "/article/1.html") == ["http"]


def test_429_waits_retry_after_then_succeeds_on_http(ladder, hostile):
    site = hostile.throttle
    hits = ladder.hits(site, "/article/1.html")
    assert [hit.status for hit in hits] == [429, 200]
    assert hits[1].at - hits[0].at >= RETRY_AFTER
    assert site.early == []
    assert engines_used(ladder, site, "/article/1.html") == ["http", "http"]
    item = ladder.item(site.url("/article/1.html"))
    assert item["engine"] == "http"
    (version,) = ladder.versions(site.url("/article/1.html"))  # the 429 was replaced
    assert version.status == 200
    assert [a["verdict"] for a in version.meta["focus"]["trace"]] == ["transient"]


def test_intermittent_503_backs_off_and_retries_on_http(ladder, hostile):
    site = hostile.flaky
    hits = ladder.hits(site, "/article/1.html")
    assert [hit.status for hit in hits] == [503, 200]
    assert hits[1].at - hits[0].at >= FLAKY_RETRY_AFTER
    assert engines_used(ladder, site, "/article/1.html") == ["http", "http"]
    assert ladder.item(site.url("/article/1.html"))["engine"] == "http"
    (version,) = ladder.versions(site.url("/article/1.html"))
    assert version.status == 200
    assert ladder.stats["focus/politeness/backoff"] >= 2  # this one and the 429


def test_slow_page_is_waited_for_and_a_timeout_escalates(ladder, hostile):
    site = hostile.slow
    assert ladder.item(site.url("/slow/1.html"))["engine"] == "http"
    assert engines_used(ladder, site, "/slow/1.html") == ["http"]
    item = ladder.item(site.url("/timeout/1.html"))
    assert item["engine"] == "chromium"
    assert engines_used(ladder, site, "/timeout/1.html") == ["http", "chromium"]
    (version,) = ladder.versions(site.url("/timeout/1.html"))
    (attempt,) = version.meta["focus"]["trace"]
    assert (attempt["engine"], attempt["status"], attempt["verdict"]) == ("http", None, "error")
    assert "Timeout" in attempt["reason"]


def test_huge_page_is_fetched_once_on_http(ladder, hostile):
    item = ladder.item(hostile.huge.url("/huge.html"))
    assert item["engine"] == "http"
    assert len(item["markdown"]) > 1_000_000
    assert engines_used(ladder, hostile.huge, "/huge.html") == ["http"]


def test_broken_encodings_stay_on_http_and_decode(ladder, hostile):
    for path, (_, _, word) in encoding_pages().items():
        item = ladder.item(hostile.encodings.url(path))
        assert item["engine"] == "http", path
        assert word in item["markdown"], path


def test_corpus_keeps_only_the_final_rendition_with_its_engine(ladder):
    items = {item["url"]: item for item in ladder.result.items}
    escalated = 0
    with Corpus(ladder.corpus) as corpus:
        for page in corpus:
            versions = page.versions()
            assert len(versions) == 1, (page.url, [(v.status, v.engine) for v in versions])
            (version,) = versions
            trace = version.meta["focus"]["trace"]
            if page.url in items:
                assert version.engine == items[page.url]["engine"]
            if trace:
                escalated += 1
                # The attempts before the stored one; the version is the last attempt.
                assert all(
                    a["verdict"] in {"blocked", "shell", "thin", "error", "transient"}
                    for a in trace
                )
    assert escalated >= len(SPA_LEARNT) + 4


def test_every_escalation_is_counted_and_none_passes_the_last_engine(ladder):
    stats = ladder.stats
    assert stats["focus/ladder/escalate/http-chromium"] >= len(SPA_LEARNT) + 4
    assert stats["focus/ladder/escalate/chromium-stealth"] >= 1
    assert "focus/ladder/escalate/stealth-" not in " ".join(stats)


def test_browser_pages_are_reused_closed_bounded_and_contexts_recycled(ladder):
    stats = ladder.stats
    downloads = sum(stats.get(f"focus/engine/{e}/requests", 0) for e in ("chromium", "stealth"))
    reused = sum(stats.get(f"focus/engine/{e}/pages_reused", 0) for e in ("chromium", "stealth"))
    assert downloads >= len(SPA_LEARNT) + 4
    # Each browser download opened a page or took one an earlier download left open.
    assert reused >= 1
    assert stats["playwright/page_count"] + reused >= downloads
    assert stats["playwright/page_count/closed"] == stats["playwright/page_count"]
    assert stats["playwright/page_count/max_concurrent"] <= SETTINGS["FOCUS_BROWSER_MAX_PAGES"]
    assert stats["focus/engine/chromium/contexts_recycled"] >= 1


def test_no_browser_or_driver_process_outlives_the_crawl(ladder):
    # The tag reached the browsers and the driver while they ran...
    assert {"chromium", "firefox-esr", "node"} <= ladder.seen, ladder.seen
    # ...and nothing carrying it is left.
    assert ladder.leftovers == {}


# -- DomainHistory across crawls ---------------------------------------------------------


def copy_corpus(ladder: Crawl, workdir: Path) -> Path:
    workdir.mkdir(parents=True)
    shutil.copytree(ladder.corpus, workdir / "corpus")
    return workdir


def test_second_crawl_of_an_spa_starts_on_chromium(ladder, hostile, tmp_path):
    first_waste = ladder.stats["focus/ladder/escalate/http-chromium"]
    new_pages = [f"/spa/{n}.html" for n in range(len(SPA_LEARNT), len(SPA_LEARNT) + 4)]
    second = crawl(copy_corpus(ladder, tmp_path / "second"), [hostile.spa.hub(*new_pages)])
    stats = second.stats
    assert stats["focus/ladder/start/chromium"] == len(new_pages) + 1  # and the hub
    assert "focus/ladder/start/http" not in stats
    assert "focus/ladder/escalate/http-chromium" not in stats  # no wasted attempt
    assert first_waste >= len(SPA_LEARNT)
    for path in new_pages:
        assert engines_used(second, hostile.spa, path) == ["chromium"]
        item = second.item(hostile.spa.url(path))
        assert spa_marker(int(path.split("/")[-1].split(".")[0])) in item["markdown"]
    assert second.leftovers == {}


def test_site_fixed_after_blocking_http_is_probed_back_to_http(ladder, hostile, tmp_path):
    site = hostile.fixable
    learnt = [engines_used(ladder, site, f"/article/{n}.html") for n in FIXABLE_LEARNT]
    # Blocked on HTTP: the first pages escalated, the rest started on Chromium.
    assert set(map(tuple, learnt)) <= {("http", "chromium"), ("chromium",)}
    assert learnt.count(["http", "chromium"]) >= 2
    site.fixed = True
    try:
        pages = ["/article/11.html", "/article/12.html", "/article/13.html"]
        probed = crawl(
            copy_corpus(ladder, tmp_path / "probe"),
            [site.hub(*pages)],
            FOCUS_HISTORY_PROBE_RATE=1.0,
            FOCUS_ENGINES="http,chromium",
        )
    finally:
        site.fixed = False
    stats = probed.stats
    assert stats["focus/ladder/probe"] >= 1
    assert stats["focus/ladder/start/http"] == len(pages) + 1
    assert "focus/engine/chromium/requests" not in stats
    for path in pages:
        assert probed.item(site.url(path))["engine"] == "http"
        assert engines_used(probed, site, path) == ["http"]


# -- the circuit breaker -------------------------------------------------------------------


def test_breaker_opens_on_a_site_failing_everywhere_and_holds_its_requests(hostile, tmp_path):
    site = hostile.outage
    cooldown = 3.0
    ok_pages = [f"/ok/{n}.html" for n in range(3)]
    inner_hub = site.hub(*ok_pages)[len(site.farm.base) :]
    result = crawl(
        tmp_path,
        [site.hub("/down/1.html", "/down/2.html", inner_hub)],
        FOCUS_ENGINES="http,chromium",
        FOCUS_BREAKER_THRESHOLD=2,
        FOCUS_BREAKER_COOLDOWN=cooldown,
        CONCURRENT_REQUESTS_PER_DOMAIN=1,
    )
    stats = result.stats
    assert stats["focus/breaker/opened"] == 1
    assert stats["focus/ladder/exhausted"] == 2  # each /down/ page, at chromium: the last rung
    assert not any(key.startswith("focus/engine/stealth") for key in stats)
    for path in ("/down/1.html", "/down/2.html"):
        assert engines_used(result, site, path) == ["http", "chromium"]
    # Held, not lost: every healthy page came, after the cool-down.
    last_failure = max(hit.at for hit in result.hits(site) if hit.path.startswith("/down/"))
    first_ok = min(hit.at for hit in result.hits(site) if hit.path.startswith("/ok/"))
    assert first_ok - last_failure >= cooldown - 0.05
    for path in ok_pages:
        item = result.item(site.url(path))
        assert (item["status"], item["engine"]) == (200, "http")
    assert result.leftovers == {}


# -- an engine that is not there ----------------------------------------------------------


def test_missing_firefox_skips_the_stealth_engine_cleanly(hostile, tmp_path):
    ua, slow = hostile.ua, hostile.slow
    result = crawl(
        tmp_path,
        [ua.hub("/article/2.html"), slow.hub("/timeout/2.html")],
        FOCUS_FIREFOX_EXECUTABLE="/nonexistent/firefox",
        FOCUS_STEALTH_BROWSER="firefox",
        FOCUS_BROWSER_NAVIGATION_TIMEOUT=1.5,  # the browser times out on /timeout/ too
    )
    log = result.result.log
    assert "FOCUS_FIREFOX_EXECUTABLE=/nonexistent/firefox does not exist" in log
    stats = result.stats
    assert "focus/engine/stealth/browser" not in stats
    assert "focus/engine/stealth/requests" not in stats
    # The ladder ends at chromium, its last rung: blocked there, or timed out there.
    assert stats["focus/ladder/exhausted"] == 2
    assert engines_used(result, ua, "/article/2.html") == ["http", "chromium"]
    (version,) = result.versions(ua.url("/article/2.html"))
    assert (version.status, version.engine) == (403, "chromium")
    assert engines_used(result, slow, "/timeout/2.html") == ["http", "chromium"]
    # A page that failed in the browser was closed all the same (one page may have
    # served both downloads: a page that answered, with a 403 too, is kept for the next).
    assert stats["playwright/page_count/closed"] == stats["playwright/page_count"] >= 1
    assert "firefox-esr" not in result.seen
    assert result.leftovers == {}


# -- seeds that come back to the frontier ---------------------------------------------------


def test_escalated_and_retried_seeds_are_not_lost(hostile, tmp_path):
    spa, throttle = hostile.spa, hostile.throttle
    seeds = [spa.url("/spa/0.html"), throttle.url("/article/2.html")]
    result = crawl(tmp_path, seeds, FOCUS_ENGINES="http,chromium")
    assert "Traceback" not in result.result.log
    assert result.item(seeds[0])["engine"] == "chromium"
    assert result.item(seeds[1])["status"] == 200


def test_a_new_domain_is_held_back_until_its_start_engine_settles(hostile, tmp_path):
    # Twelve SPA pages behind a static hub (the hub settles nothing: it is one page).
    # Without the slow start they all leave on HTTP before the first verdict.
    site = hostile.spa
    started: dict[int, list[str]] = {}
    for learning in (1, 0):
        first = 12 + 12 * learning  # pages no other test fetches
        pages = [f"/spa/{n}.html" for n in range(first, first + 12)]
        result = crawl(
            tmp_path / f"learning-{learning}",
            [site.hub(*pages)],
            FOCUS_HISTORY_PROBE_RATE=0.0,
            FOCUS_ENGINES="http,chromium",
            FOCUS_HISTORY_LEARNING_CONCURRENCY=learning,
            # The frontier's own waits for pages being read (frontier/backlog.py, the
            # ordered start) would hold these back too: off, so that the slow start is
            # what is measured.
            FOCUS_MAX_UNPROCESSED=0,
            FOCUS_ORDERED_START=0,
        )
        assert all(result.item(site.url(path))["engine"] == "chromium" for path in pages)
        started[learning] = [engines_used(result, site, path)[0] for path in pages]
    # Held to one request, then two...: history learns from each page before the next
    # leaves, and it takes a few pages for Chromium's successes to outweigh the prior.
    assert started[1].count("http") <= 6
    assert started[1].count("http") < started[0].count("http")


def test_retries_reach_the_site_with_the_ladder_off(hostile, tmp_path):
    # RetryMiddleware's retry of a 429 must not be answered by the corpus, which has
    # just stored that 429 (the ladder marks its own retries; without it, nobody did).
    site = hostile.flaky
    path = "/article/7.html"
    result = crawl(tmp_path / "no-ladder", [site.hub(path)], FOCUS_LADDER_ENABLED=False)
    assert [hit.status for hit in result.hits(site, path)] == [503, 200]
    item = result.item(site.url(path))
    assert (item["status"], item["state"]) == (200, "accepted")


def test_a_retry_goes_before_its_hosts_other_pages(hostile, tmp_path):
    # Every path's first request is a 503 with Retry-After: the host waits, then the
    # retry is sent, then the next path (Scrapy's -1 would send every path's 503 first).
    site = hostile.flaky
    paths = [f"/article/{n}.html" for n in range(20, 25)]
    result = crawl(
        tmp_path,
        [site.hub(*paths)],
        FOCUS_LADDER_ENABLED=False,
        CONCURRENT_REQUESTS_PER_DOMAIN=1,
        FOCUS_ORDERED_START=0,  # which queues a retry at its turn, after the next request
    )
    hits = sorted((hit for path in paths for hit in result.hits(site, path)), key=lambda h: h.at)
    assert [(hit.path, hit.status) for hit in hits] == [
        (path, status) for path in paths for status in (503, 200)
    ]
    assert result.stats["focus/politeness/backoff"] >= len(paths)


# -- pages the user drives ---------------------------------------------------------------


def test_a_page_the_spider_drives_is_its_own_and_other_pages_are_reused(farm, tmp_path):
    plain = [farm.url(f"/articles/{n}.html") for n in range(1, 5)]
    driven = [farm.url("/articles/7.html")]
    result = run_crawl(
        tmp_path,
        [],
        {
            **SETTINGS,
            "CONCURRENT_REQUESTS": 1,
            "FOCUS_CORPUS_DIR": str(tmp_path / "corpus"),
            "FOCUS_BROWSER_CONTEXT_PAGES": 100,
        },
        spider="browser_page_spider.py",
        args={"urls": ",".join(driven), "plain": ",".join(plain)},
    )
    assert result.returncode == 0, result.log[-3000:]
    items = {item["url"]: item for item in result.items}
    # The spider got a live page of its own, and closed it.
    (mine,) = [items[url] for url in driven]
    assert mine["title"] and mine["closed"] is True
    # The others went one after the other through one page, never handed to the spider.
    assert all(items[url]["page"] is False for url in plain)
    stats = result.stats
    assert stats["focus/engine/chromium/requests"] == len(plain) + len(driven)
    assert stats["focus/engine/chromium/pages_reused"] == len(plain) - 1
    assert stats["playwright/page_count"] == 2
    # scrapy-playwright counts the pages it closes, not the spider's: the reused page.
    assert stats["playwright/page_count/closed"] == 1


def test_without_a_fetched_camoufox_the_stealth_engine_is_found_without_importing_it(tmp_path):
    """Importing camoufox costs half a second of start-up; with nothing in its browser
    directory (``camoufox fetch`` never ran: an empty user cache) the answer is known."""
    code = (
        "import sys\n"
        "from scrapy_focus.engines.discovery import camoufox_browser\n"
        "print(camoufox_browser(), 'camoufox' in sys.modules)"
    )
    env = crawl_env(XDG_CACHE_HOME=str(tmp_path))
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["None", "False"]
