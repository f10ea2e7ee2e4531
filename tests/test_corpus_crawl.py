"""The corpus under real crawls of the farm: cache policies, expiry, versions, dedup."""

from __future__ import annotations

import time

from harness.crawl import STATS_EXTENSION
from harness.farm import article_html
from scrapy_focus.corpus.reader import Corpus
from tests.crawl import run_crawl, run_focus_crawl


def corpus_of(tmp_path):
    return Corpus(tmp_path / ".scrapy" / "httpcache" / "farm")


def test_second_crawl_is_served_from_the_corpus_with_dummy_policy(farm, tmp_path):
    urls = [farm.url(f"/articles/{n}.html") for n in range(10)]
    first = run_crawl(tmp_path, urls)
    assert first.returncode == 0, first.log[-3000:]
    hits = [farm.hit_count(f"/articles/{n}.html") for n in range(10)]

    second = run_crawl(tmp_path, urls)
    assert second.returncode == 0, second.log[-3000:]
    assert all(item["cached"] for item in second.items)
    assert len(second.items) == 10
    assert [farm.hit_count(f"/articles/{n}.html") for n in range(10)] == hits
    assert second.stats["httpcache/hit"] == 10


def test_rfc2616_policy_serves_fresh_pages_and_refetches_no_store(farm, tmp_path):
    settings = {"HTTPCACHE_POLICY": "scrapy.extensions.httpcache.RFC2616Policy"}
    urls = [farm.url("/cache/max-age?s=3600"), farm.url("/cache/no-store")]
    first = run_crawl(tmp_path, urls, settings)
    assert first.returncode == 0, first.log[-3000:]
    fresh_hits = farm.hit_count("/cache/max-age")
    no_store_hits = farm.hit_count("/cache/no-store")

    second = run_crawl(tmp_path, urls, settings)
    by_url = {item["url"]: item for item in second.items}
    assert by_url[farm.url("/cache/max-age?s=3600")]["cached"] is True
    assert by_url[farm.url("/cache/no-store")]["cached"] is False
    assert farm.hit_count("/cache/max-age") == fresh_hits
    assert farm.hit_count("/cache/no-store") == no_store_hits + 1


def test_expired_pages_are_fetched_again_and_refresh_their_version(farm, tmp_path):
    farm.set_page("/expiry/page.html", article_html(501))
    url = farm.url("/expiry/page.html")
    settings = {"HTTPCACHE_EXPIRATION_SECS": 1}
    assert run_crawl(tmp_path, [url], settings).returncode == 0
    time.sleep(1.5)
    second = run_crawl(tmp_path, [url], settings)
    assert second.items[0]["cached"] is False
    assert farm.hit_count("/expiry/page.html") == 2
    with corpus_of(tmp_path) as corpus:
        (version,) = corpus.page(url).versions()
        assert version.fetch_count == 2


def test_a_page_that_changed_between_crawls_keeps_both_versions(farm, tmp_path):
    url = farm.url("/changing/page.html")
    settings = {"HTTPCACHE_EXPIRATION_SECS": 1}
    farm.set_page("/changing/page.html", article_html(601))
    assert run_crawl(tmp_path, [url], settings).returncode == 0
    farm.set_page("/changing/page.html", article_html(602))
    time.sleep(1.5)
    assert run_crawl(tmp_path, [url], settings).returncode == 0
    with corpus_of(tmp_path) as corpus:
        page = corpus.page(url)
        assert [page.body(v) for v in page.versions()] == [
            article_html(601).encode(),
            article_html(602).encode(),
        ]


def test_identical_bodies_across_urls_are_stored_once(farm, tmp_path):
    urls = [farm.url(f"/same/{n}.html") for n in range(6)]
    result = run_crawl(tmp_path, urls)
    assert result.returncode == 0
    with corpus_of(tmp_path) as corpus:
        stats = corpus.stats()
    assert (stats.pages, stats.bodies) == (6, 1)


def test_tracking_parameter_variants_are_one_page_and_one_fetch(farm, tmp_path):
    farm.set_page("/tracked.html", article_html(701))
    urls = [
        farm.url("/tracked.html?utm_source=a"),
        farm.url("/tracked.html?utm_source=b&fbclid=x"),
        farm.url("/tracked.html#section"),
    ]
    # dont_filter on start requests: the second and third fetch come from the cache
    result = run_crawl(tmp_path, urls, {"CONCURRENT_REQUESTS": 1})
    assert result.returncode == 0
    assert farm.hit_count("/tracked.html") == 1
    assert sum(item["cached"] for item in result.items) == 2
    with corpus_of(tmp_path) as corpus:
        assert [page.url for page in corpus] == [farm.url("/tracked.html")]


def test_compressed_responses_are_stored_decoded(farm, tmp_path):
    result = run_crawl(tmp_path, [farm.url("/gzip/a.html"), farm.url("/deflate/a.html")])
    assert result.returncode == 0
    with corpus_of(tmp_path) as corpus:
        gz = corpus.page(farm.url("/gzip/a.html"))
        deflate = corpus.page(farm.url("/deflate/a.html"))
        assert gz.body() == article_html(20_000).encode()
        assert deflate.body() == article_html(20_001).encode()
        assert gz.latest().content_encoding == "gzip"


def test_decompression_bomb_and_corrupt_gzip_are_dropped_before_the_corpus(farm, tmp_path):
    urls = [farm.url("/bomb.html"), farm.url("/corrupt-gzip.html"), farm.url("/articles/1.html")]
    result = run_crawl(tmp_path, urls, {"DOWNLOAD_MAXSIZE": 4 << 20})
    assert result.returncode == 0, result.log[-3000:]
    assert [item["url"] for item in result.items] == [farm.url("/articles/1.html")]
    with corpus_of(tmp_path) as corpus:
        # never inflated to 64 MiB, never stored
        assert corpus.page(farm.url("/bomb.html")) is None
        assert corpus.page(farm.url("/corrupt-gzip.html")) is None
    assert result.stats["focus/decompression/too_large"] == 1
    assert result.stats["focus/decompression/corrupt"] == 1
    assert f"Ignored response <200 {farm.url('/corrupt-gzip.html')}>: its body" in result.log


def test_a_page_costs_three_corpus_write_transactions(farm, tmp_path):
    """The fixed cost the corpus adds to a page: its fetch (version, body, URL), its
    engine history and its verdict, one LMDB write transaction each; forgetting a
    quarantine entry the page never had writes nothing.  Counted by
    tests/write_counter.py around the crawl's own environment."""
    settings = {
        "EXTENSIONS": {STATS_EXTENSION: 0, "tests.write_counter.WriteCounter": 0},
        "FOCUS_EXTRACT_ENABLED": False,
        "FOCUS_MAX_PAGES": 30,
        "ROBOTSTXT_OBEY": False,
    }
    result = run_focus_crawl(tmp_path, [farm.url("/graph/0.html")], "articles", settings)
    assert result.returncode == 0, result.log[-3000:]
    pages = result.stats["focus/corpus/store"]
    assert pages >= 30
    assert result.stats["focus/contract/rejected"] == pages  # each page got its verdict
    assert result.stats["test/corpus_writes"] == 3 * pages
