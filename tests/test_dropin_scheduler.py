"""The scheduler keeps Scrapy's contract where a user's project relies on it.

Real crawls of the farm through ``scrapy runspider`` with the add-on (README.md,
"Switching it on in an existing project"); Scrapy's own tests of the same contract run
in the compatibility job (tests/compat).
"""

from __future__ import annotations

from collections import Counter

from tests.crawl import run_crawl


def test_a_users_data_and_unknown_scheme_requests_reach_the_downloader(farm, tmp_path):
    data_url = "data:text/html,<title>inline</title><p>inline-page</p>"
    result = run_crawl(tmp_path, [farm.url("/index.html"), data_url, "foo://bar/baz"])
    assert result.returncode == 0, result.log[-3000:]
    urls = {item["url"] for item in result.items}
    # Fetched by Scrapy's data: handler (which escapes the URL), not dropped.
    assert any(url.startswith("data:text/html,") for url in urls), urls
    assert farm.url("/index.html") in urls
    # An unknown scheme fails in the downloader, as in Scrapy, instead of vanishing.
    assert "Unsupported URL scheme 'foo'" in result.log
    assert result.stats.get("scheduler/enqueued") == 3


def test_default_dupefilter_is_the_frontiers_seen_set_and_counts_as_scrapys(farm, tmp_path):
    result = run_crawl(tmp_path, [farm.url("/index.html")], follow=True)
    assert result.returncode == 0, result.log[-3000:]
    fetched = Counter(item["url"] for item in result.items)
    assert fetched and max(fetched.values()) == 1
    assert result.stats["dupefilter/filtered"] == result.stats["focus/frontier/duplicate"] > 0


def test_a_users_dupefilter_class_decides_what_is_a_duplicate(farm, tmp_path):
    # BaseDupeFilter lets everything through: the farm's pages link back to the
    # index, so pages are fetched again, as they are in Scrapy with this filter.
    # More pages than the farm has: some must be fetched twice.
    settings = {
        "DUPEFILTER_CLASS": "scrapy.dupefilters.BaseDupeFilter",
        "CLOSESPIDER_PAGECOUNT": farm.ARTICLES + 50,
    }
    result = run_crawl(tmp_path, [farm.url("/index.html")], settings, follow=True)
    assert result.returncode == 0, result.log[-3000:]
    fetched = Counter(item["url"] for item in result.items)
    assert max(fetched.values()) > 1
    assert "dupefilter/filtered" not in result.stats


def test_scrapy_queue_settings_and_the_seed_scope_are_named_at_start_up(farm, tmp_path):
    settings = {"SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue"}
    result = run_crawl(tmp_path, [farm.url("/index.html")], settings)
    assert result.returncode == 0, result.log[-3000:]
    assert "SCHEDULER_PRIORITY_QUEUE is set, but FocusScheduler orders requests" in result.log
    assert result.log.count("the crawl stays on its seeds' hosts") == 1
