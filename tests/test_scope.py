"""The crawl's scope holds on every path in (seeds, resume, the corpus), and hosts
that ask for endless waits do not keep a crawl open: real crawls of the hostile farm."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

from scrapy.utils.test import get_crawler

from scrapy_focus.config import PolitenessConfig
from scrapy_focus.domains import registrable_domain, scope_entry, seed_entries
from scrapy_focus.frontier.politeness import Politeness
from scrapy_focus.urls import Scope
from tests.crawl import run_crawl, run_focus_crawl

PAGES = {"spider": "page_spider.py"}


def offscope_hits(site, prefix: str) -> int:
    return sum(1 for hit in site.hits if hit.path.startswith(prefix))


def hubs_linking_to(hostile, prefix: str, count: int) -> str:
    """A hub on the static site whose pages each link to one off-scope page."""
    sub_hubs = [
        "/hub?" + urlencode([("to", hostile.offscope.url(f"{prefix}{n}.html"))])
        for n in range(count)
    ]
    return hostile.static.hub(*sub_hubs)


# -- 8: a resumed crawl has the scope of the first run


def test_a_resumed_crawl_keeps_the_scope_of_its_first_run(hostile, tmp_path):
    seed = hubs_linking_to(hostile, "/resume/", 6)
    settings = {"JOBDIR": str(tmp_path / "job"), "CONCURRENT_REQUESTS": 1}
    # robots.txt, the seed and one sub-hub, then the crawl stops
    first = run_crawl(tmp_path, [seed], {**settings, "CLOSESPIDER_PAGECOUNT": 3}, follow=True)
    assert first.stats["finish_reason"] == "closespider_pagecount", first.log[-3000:]
    assert first.stats["focus/frontier/rejected/off-domain"] >= 1
    assert first.stats["focus/frontier/size"] >= 3  # sub-hubs left for the resumed crawl

    # Resumed without its seed (in the frontier already, it would be a duplicate):
    # the scope comes back from the frontier, and the pending pages' off-scope links
    # are rejected as in the first run.
    resumed = run_crawl(tmp_path, [], settings, follow=True)
    assert resumed.returncode == 0, resumed.log[-3000:]
    assert resumed.stats["finish_reason"] == "finished"
    assert resumed.stats["focus/frontier/dequeued"] >= 3
    assert resumed.stats["focus/frontier/rejected/off-domain"] >= 3
    assert offscope_hits(hostile.offscope, "/resume/") == 0


def test_a_crawl_with_no_scope_stops_instead_of_crawling_any_host(hostile, tmp_path):
    # A topic example is fetched whatever the scope, but gives it none: with no seed
    # and no allowed domains, its links would have every host in scope.
    example = hostile.static.hub(hostile.offscope.url("/noscope/1.html"), "/articles/1.html")
    settings = {"FOCUS_TOPIC": "astronomy", "FOCUS_TOPIC_EXAMPLES": example}  # one, no comma
    earlier = len(hostile.static.hits_for("/articles/1.html"))  # the farm is the session's
    result = run_crawl(tmp_path, [], settings, follow=True)
    assert result.stats["finish_reason"] == "focus_no_scope", result.log[-3000:]
    assert "No scope to check" in result.log
    assert offscope_hits(hostile.offscope, "/noscope/") == 0
    assert len(hostile.static.hits_for("/articles/1.html")) == earlier


# -- 9, 10: the scope's rules


def test_seed_scope_domain_is_the_registrable_domain_by_the_public_suffix_list():
    assert registrable_domain("www.bbc.co.uk") == "bbc.co.uk"
    assert registrable_domain("alice.github.io") == "alice.github.io"  # a private suffix
    assert registrable_domain("docs.python.org") == "python.org"
    assert registrable_domain("10.0.0.5") == "10.0.0.5"
    assert registrable_domain("localhost") == "localhost"
    assert registrable_domain("co.uk") == "co.uk"  # a public suffix is its own, exact

    def scope_of(seed: str) -> Scope:
        return Scope().with_entries(seed_entries(seed, "domain"))

    bbc = scope_of("https://www.bbc.co.uk/news")
    assert bbc.rejection("https://sport.bbc.co.uk/") is None
    assert bbc.rejection("https://evil.co.uk/") == "off-domain"
    pages = scope_of("https://alice.github.io/blog/")
    assert pages.rejection("https://alice.github.io/about") is None
    assert pages.rejection("https://bob.github.io/") == "off-domain"
    ip = scope_of("http://10.0.0.5/")
    assert ip.rejection("http://10.0.0.5/a") is None
    for other in ("http://127.0.0.5/", "http://169.254.0.5/", "http://x.10.0.0.5/"):
        assert ip.rejection(other) == "off-domain", other


def test_allowed_domains_are_matched_in_idna_form():
    scope = Scope(allowed_domains=("Bücher.de",))
    assert scope.allowed_domains == ("xn--bcher-kva.de",)
    assert scope.rejection("https://www.xn--bcher-kva.de/") is None  # as Scrapy spells it
    assert scope.rejection("https://bücher.de/katalog") is None
    assert scope.rejection("https://buecher.de/") == "off-domain"


def test_ports_are_part_of_the_scope():
    scope = Scope(allowed_domains=("example.com", "example.org:8080"))
    assert scope.rejection("http://example.com/") is None
    assert scope.rejection("https://www.example.com:443/") is None  # the default port
    for url in ("http://example.com:22/", "https://example.com:80/", "http://example.com:8080/"):
        assert scope.rejection(url) == "off-domain", url
    assert scope.rejection("http://a.example.org:8080/") is None
    assert scope.rejection("http://example.org/") == "off-domain"
    # A default port written out is that port.
    assert Scope(allowed_domains=("example.net:443",)).rejection("https://example.net/") is None
    # A seed admits its own port, and the default ports of its host.
    seeded = Scope().with_entries(seed_entries("http://127.0.0.9:8123/", "host"))
    assert seeded.rejection("http://127.0.0.9:8123/a") is None
    assert seeded.rejection("http://127.0.0.9/a") is None
    assert seeded.rejection("http://127.0.0.9:22/") == "off-domain"
    assert seed_entries("http://example.com:8123/", "port") == ("example.com:8123",)
    assert seed_entries("https://example.com/", "port") == ()


def test_scope_entries_refuse_what_is_not_a_domain():
    assert scope_entry(" Example.COM. ") == "example.com"
    assert scope_entry("[::1]:8080") == "[::1]:8080"
    for bad in ("http://example.com/", "example.com:http", "", "user@example.com"):
        try:
            scope_entry(bad)
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad!r}")


# -- 11: what the corpus sends back keeps to the crawl's scope


def test_pages_due_again_from_the_corpus_keep_to_the_crawls_scope(hostile, tmp_path):
    inside = hostile.static.url("/articles/31.html")
    outside = hostile.offscope.url("/recrawl/1.html")
    settings = {
        "FOCUS_RECRAWL": True,
        "FOCUS_RECRAWL_INTERVAL": 1,
        "FOCUS_RECRAWL_MIN_INTERVAL": 0.5,
        "FOCUS_EMIT_UNCHANGED": True,
    }
    first = run_crawl(tmp_path, [inside, outside], settings, **PAGES)
    assert {item["url"] for item in first.items} == {inside, outside}, first.log[-3000:]
    time.sleep(1.2)
    hits = offscope_hits(hostile.offscope, "/recrawl/")

    # Both pages are due; this crawl's seed is on the static site only.
    second = run_crawl(tmp_path, [hostile.static.url("/articles/32.html")], settings, **PAGES)
    assert second.stats["focus/requeue/recrawl"] == 2, second.log[-3000:]
    assert second.stats["focus/frontier/rejected/off-domain"] == 1
    assert offscope_hits(hostile.offscope, "/recrawl/") == hits
    assert inside in {item["url"] for item in second.items}


def test_pages_released_from_quarantine_keep_to_the_crawls_scope(hostile, tmp_path):
    outside = hostile.offscope.url("/quarantine/crash.html")  # the extractor fails on it
    crashing = {"FOCUS_EXTRACT_FUNCTION": "tests.extractors.hang_or_fail"}
    first = run_crawl(tmp_path, [outside], crashing, **PAGES)
    assert first.stats["focus/contract/quarantined/extraction-error"] == 1, first.log[-3000:]
    corpus_dir = tmp_path / ".scrapy" / "httpcache" / "pages"
    command = [sys.executable, "-m", "scrapy", "focus-quarantine", "release", "--all"]
    released = subprocess.run(
        [*command, "--dir", str(corpus_dir)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)},
    )
    assert f"released {outside}" in released.stdout, released.stderr
    hits = offscope_hits(hostile.offscope, "/quarantine/")

    second = run_crawl(tmp_path, [hostile.static.url("/articles/33.html")], **PAGES)
    assert second.stats["focus/requeue/released"] == 1, second.log[-3000:]
    assert second.stats["focus/frontier/rejected/off-domain"] == 1
    assert offscope_hits(hostile.offscope, "/quarantine/") == hits


# -- 12: a host that asks for an endless wait is held back, and the crawl ends


def test_hosts_asking_for_endless_waits_are_held_back_and_the_crawl_ends(hostile, tmp_path):
    seeds = [
        hostile.crawldelay.hub("/articles/1.html", "/articles/2.html"),
        hostile.retryforever.hub("/forever/1.html", "/forever/2.html"),
        hostile.static.hub("/articles/41.html"),
    ]
    started = time.monotonic()
    result = run_focus_crawl(
        tmp_path, seeds, settings={"ROBOTSTXT_OBEY": True, "FOCUS_ENGINES": ["http"]}, timeout=90
    )
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats["finish_reason"] == "finished"
    assert time.monotonic() - started < 60
    assert result.stats["focus/politeness/held_back"] == 2
    assert result.stats["focus/frontier/held_back"] >= 2
    assert "Holding back " + hostile.crawldelay.host in result.log
    assert "Crawl-delay of 1e+08s" in result.log
    assert "Retry-After: 1e+08s" in result.log
    # The crawl-delay host: robots.txt and the hub, then nothing.
    assert hostile.crawldelay.hits_for("/articles/1.html") == []
    # The Retry-After host: no retry of a page after it asked for three years.
    for path in ("/forever/1.html", "/forever/2.html"):
        assert len(hostile.retryforever.hits_for(path)) <= 1
    assert len(hostile.static.hits_for("/articles/41.html")) == 1


def test_a_wait_over_the_cap_holds_the_host_back_and_a_shorter_one_is_waited_for():
    delays = {"slow.example": 100_000_000.0, "polite.example": 5.0}
    politeness = Politeness(PolitenessConfig(max_host_delay=600.0), delays.get)
    assert "Crawl-delay of 1e+08s" in (politeness.held_back("slow.example") or "")
    assert politeness.held_back("polite.example") is None
    assert politeness.retry_after("busy.example", 100_000_000) == math.inf
    assert "Retry-After" in (politeness.held_back("busy.example") or "")
    assert politeness.retry_after("calm.example", 30) == 30
    assert politeness.held_back("calm.example") is None
    uncapped = Politeness(PolitenessConfig(max_host_delay=0), delays.get)
    assert uncapped.held_back("slow.example") is None


# -- 19: robots.txt is obeyed by default, outside a project too


def test_focus_crawl_obeys_robots_txt_by_default_and_a_users_false_wins(hostile, tmp_path):
    seed = hostile.robots.hub("/articles/1.html", "/private/1.html")
    obeying = run_focus_crawl(tmp_path, [seed], settings={"FOCUS_ENGINES": ["http"]})
    assert obeying.returncode == 0, obeying.log[-3000:]
    assert obeying.stats["robotstxt/forbidden"] == 1
    assert hostile.robots.hits_for("/private/1.html") == []
    assert len(hostile.robots.hits_for("/articles/1.html")) == 1

    (tmp_path / "ignoring").mkdir()
    ignoring = run_focus_crawl(
        tmp_path / "ignoring", [seed], settings={"FOCUS_ENGINES": ["http"], "ROBOTSTXT_OBEY": False}
    )
    assert ignoring.returncode == 0, ignoring.log[-3000:]
    assert len(hostile.robots.hits_for("/private/1.html")) == 1


def test_the_addon_sets_robots_txt_obey_below_a_projects_settings():
    from scrapy.settings import SETTINGS_PRIORITIES

    addon = {"ADDONS": {"scrapy_focus.Addon": 500}}
    default = get_crawler(settings_dict=addon).settings
    assert default.getbool("ROBOTSTXT_OBEY") is True
    assert default.getpriority("ROBOTSTXT_OBEY") == SETTINGS_PRIORITIES["addon"]
    # get_crawler's settings are a project's settings.py
    project = get_crawler(settings_dict={**addon, "ROBOTSTXT_OBEY": False}).settings
    assert project.getbool("ROBOTSTXT_OBEY") is False
