"""LmdbCacheStorage through its Scrapy interface: fields, dedup, versions, decoding."""

from __future__ import annotations

import gzip
import ipaddress
import json
import zlib
from dataclasses import asdict

import pytest
from scrapy import Request, Spider
from scrapy.http import HtmlResponse, JsonResponse, Response, TextResponse, XmlResponse
from scrapy.utils.test import get_crawler

from harness.farm import article_html
from scrapy_focus.corpus.codec import body_hash
from scrapy_focus.corpus.decoding import ContentDecodingError, decode_content
from scrapy_focus.corpus.env import INDEX
from scrapy_focus.corpus.errors import CorpusError, CorruptRecord
from scrapy_focus.corpus.reader import Corpus
from scrapy_focus.corpus.records import Version
from scrapy_focus.corpus.storage import LmdbCacheStorage
from scrapy_focus.pipelines import ContractPipeline
from scrapy_focus.state import FocusState, LinkContext
from tests.corpus_helpers import corpus_dir, open_storage

HTML = article_html(1).encode()


def test_every_response_field_round_trips(tmp_path):
    storage, spider = open_storage(tmp_path)
    request = Request("http://example.com/page?b=2&a=1", meta={"depth": 3, "unstored": object()})
    response = HtmlResponse(
        url="http://example.com/final",
        status=203,
        headers={
            "Content-Type": "text/html; charset=utf-8",
            "Set-Cookie": ["a=1", "b=2"],
            "X-Custom": "é".encode("latin-1"),
        },
        body=HTML,
        flags=["custom-flag"],
        ip_address=ipaddress.ip_address("127.0.0.1"),
        protocol="HTTP/1.1",
        request=request,
    )
    storage.store_response(spider, request, response)

    cached = storage.retrieve_response(spider, Request("http://example.com/page?a=1&b=2"))
    assert type(cached) is HtmlResponse
    assert cached.url == "http://example.com/final"
    assert cached.status == 203
    assert cached.body == HTML
    assert cached.headers.getlist("Set-Cookie") == [b"a=1", b"b=2"]
    assert cached.headers["X-Custom"] == "é".encode("latin-1")
    assert cached.headers["Content-Type"] == b"text/html; charset=utf-8"
    assert cached.flags == ["custom-flag"]
    assert cached.ip_address == ipaddress.ip_address("127.0.0.1")
    assert cached.protocol == "HTTP/1.1"
    assert cached.encoding == "utf-8"

    version = storage.db.latest_version(spider.crawler.request_fingerprinter.fingerprint(request))
    assert version.meta == {"depth": 3}  # only registered, JSON-serialisable keys
    assert version.engine == "http"
    assert version.url == "http://example.com/page?b=2&a=1"
    storage.close_spider(spider)


@pytest.mark.parametrize(
    ("cls", "content_type", "body"),
    [
        (Response, "application/octet-stream", bytes(range(256))),
        (TextResponse, "text/plain; charset=latin-1", "plain tëxt".encode("latin-1")),
        (XmlResponse, "application/xml", b"<?xml version='1.0'?><a>b</a>"),
        (HtmlResponse, "text/html", b""),
    ],
)
def test_response_class_and_body_survive_for_every_kind(tmp_path, cls, content_type, body):
    storage, spider = open_storage(tmp_path)
    request = Request("http://example.com/x")
    storage.store_response(
        spider, request, cls(url=request.url, headers={"Content-Type": content_type}, body=body)
    )
    cached = storage.retrieve_response(spider, request)
    assert type(cached) is cls
    assert cached.body == body
    storage.close_spider(spider)


def test_missing_page_is_a_miss_not_an_error(tmp_path):
    storage, spider = open_storage(tmp_path)
    assert storage.retrieve_response(spider, Request("http://example.com/never")) is None
    storage.close_spider(spider)


def test_same_body_under_many_urls_is_stored_once(tmp_path):
    storage, spider = open_storage(tmp_path)
    for n in range(5):
        request = Request(f"http://example.com/copy/{n}")
        storage.store_response(spider, request, HtmlResponse(url=request.url, body=HTML))
    stats = storage.db.stats()
    assert (stats.pages, stats.versions, stats.bodies) == (5, 5, 1)
    storage.close_spider(spider)


def test_refetch_of_unchanged_page_refreshes_the_version_and_stores_no_new_body(tmp_path):
    storage, spider = open_storage(tmp_path)
    request = Request("http://example.com/a")
    storage.store_response(spider, request, HtmlResponse(url=request.url, body=HTML))
    first = storage.db.latest_version(spider.crawler.request_fingerprinter.fingerprint(request))
    storage.store_response(
        spider, request, HtmlResponse(url=request.url, body=HTML, headers={"ETag": "v2"})
    )
    stats = storage.db.stats()
    assert (stats.versions, stats.bodies) == (1, 1)
    latest = storage.db.latest_version(spider.crawler.request_fingerprinter.fingerprint(request))
    assert latest.fetch_count == 2
    assert latest.first_fetched_at == first.first_fetched_at
    assert latest.fetched_at >= first.fetched_at
    assert ("Etag", "v2") in latest.headers  # Scrapy normalises header names
    assert spider.crawler.stats.get_value("focus/corpus/unchanged") == 1
    storage.close_spider(spider)


def test_changed_page_gets_a_new_version_and_old_versions_stay_readable(tmp_path):
    storage, spider = open_storage(tmp_path)
    request = Request("http://example.com/a")
    bodies = [article_html(n).encode() for n in (1, 2, 3)]
    for body in bodies:
        storage.store_response(spider, request, HtmlResponse(url=request.url, body=body))
    # back to the first body: a new version (history is kept in order), no new body
    storage.store_response(spider, request, HtmlResponse(url=request.url, body=bodies[0]))
    storage.close_spider(spider)

    with Corpus(corpus_dir(tmp_path)) as corpus:
        page = corpus.page("http://example.com/a")
        versions = page.versions()
        assert [v.index for v in versions] == [0, 1, 2, 3]
        assert [page.body(v) for v in versions] == [*bodies, bodies[0]]
        assert corpus.stats().bodies == 3
        assert page.response().body == bodies[0]


def test_request_state_is_stored_as_its_record_and_restored_from_the_corpus(tmp_path):
    storage, spider = open_storage(tmp_path)
    url = "http://example.com/a"
    state = FocusState(link=LinkContext(url, anchor="A", parent_url="http://u:pw@example.com/"))
    state.start("http", "history")
    state.attempt.verdict, state.attempt.status = "blocked", 403
    state.next_attempt("chromium")
    request = Request(url, meta={"focus": state, "depth": 1})
    storage.store_response(spider, request, HtmlResponse(url=url, body=HTML))
    assert (state.corpus_version, state.fetched_at is not None) == (0, True)

    version = storage.db.latest_version(spider.crawler.request_fingerprinter.fingerprint(request))
    record = version.meta["focus"]
    assert version.engine == record["engine"] == "chromium"
    assert [(a["engine"], a["verdict"]) for a in record["trace"]] == [("http", "blocked")]
    assert record["link"]["parent_url"] == "http://example.com/"  # no credentials kept

    again = Request(url)
    assert storage.retrieve_response(spider, again) is not None
    restored = again.meta["focus"]
    assert restored.engine == "chromium"
    assert restored.start_reason == "history"
    assert [a["engine"] for a in restored.trace()] == ["http"]
    assert restored.link.anchor == "A"
    assert (restored.corpus_version, restored.fetched_at) == (0, version.fetched_at)

    refresh = Request(url, meta={"focus": FocusState(refresh=True)})
    assert storage.retrieve_response(spider, refresh) is None
    storage.close_spider(spider)


def test_retrieval_returns_the_latest_version(tmp_path):
    storage, spider = open_storage(tmp_path)
    request = Request("http://example.com/a")
    storage.store_response(spider, request, HtmlResponse(url=request.url, body=b"<p>old</p>"))
    storage.store_response(spider, request, HtmlResponse(url=request.url, body=b"<p>new</p>"))
    assert storage.retrieve_response(spider, request).body == b"<p>new</p>"
    storage.close_spider(spider)


def test_every_page_serves_its_own_latest_version_among_many(tmp_path):
    storage, spider = open_storage(tmp_path)
    urls = [f"http://example.com/p{n}" for n in range(40)]
    for n, url in enumerate(urls):
        for v in range(n % 3 + 1):
            body = f"<p>{n}.{v}</p>".encode()
            storage.store_response(spider, Request(url), HtmlResponse(url=url, body=body))
    for n, url in enumerate(urls):
        request = Request(url)
        assert storage.retrieve_response(spider, request).body == f"<p>{n}.{n % 3}</p>".encode()
        assert request.meta["focus"].corpus_version == n % 3
    storage.close_spider(spider)


def test_superseded_attempt_leaves_only_the_final_rendition(tmp_path):
    storage, spider = open_storage(tmp_path)
    url = "http://example.com/a"
    storage.store_response(spider, Request(url), HtmlResponse(url=url, body=b"<p>v0</p>"))
    attempt = Request(url)
    storage.store_response(spider, attempt, HtmlResponse(url=url, body=b"<p>blocked</p>"))
    retry = Request(url, meta={"focus": FocusState(supersede=attempt.meta["focus"].corpus_version)})
    storage.store_response(spider, retry, HtmlResponse(url=url, body=b"<p>v1</p>"))
    assert retry.meta["focus"].corpus_version == 1
    assert storage.retrieve_response(spider, Request(url)).body == b"<p>v1</p>"

    # A retry that gets the previous rendition back refreshes it instead.
    attempt = Request(url)
    storage.store_response(spider, attempt, HtmlResponse(url=url, body=b"<p>blocked</p>"))
    retry = Request(url, meta={"focus": FocusState(supersede=attempt.meta["focus"].corpus_version)})
    storage.store_response(spider, retry, HtmlResponse(url=url, body=b"<p>v1</p>"))
    fingerprint = spider.crawler.request_fingerprinter.fingerprint(retry)
    versions = storage.db.versions(fingerprint)
    assert [(v.index, v.fetch_count) for v in versions] == [(0, 1), (1, 2)]
    assert storage.db.page(fingerprint).version_count == 2
    assert storage.retrieve_response(spider, Request(url)).body == b"<p>v1</p>"
    storage.close_spider(spider)


def test_corpus_options_hold_whichever_component_opens_the_corpus_first(tmp_path):
    settings = {
        "ADDONS": {"scrapy_focus.Addon": 500},
        "HTTPCACHE_DIR": str(tmp_path / "cache"),
        "FOCUS_CORPUS_COMPRESSION": "zlib",
        "FOCUS_CORPUS_READAHEAD": False,
    }
    crawler = get_crawler(Spider, settings)
    spider = Spider.from_crawler(crawler, name="unit")
    crawler.spider = spider
    # Scrapy opens item pipelines before it sends spider_opened to the cache middleware.
    pipeline = ContractPipeline.from_crawler(crawler)
    pipeline.open_spider(spider)
    storage = LmdbCacheStorage(crawler.settings)
    storage.open_spider(spider)
    assert storage.db is pipeline.db
    assert storage.db.codec.name == "zlib"
    assert storage.db.env.flags()["readahead"] is False
    storage.close_spider(spider)
    pipeline.close_spider(spider)


def test_pages_are_keyed_by_canonical_url(tmp_path):
    storage, spider = open_storage(tmp_path)
    storage.store_response(
        spider,
        Request("HTTP://Example.com:80/a?utm_source=news&b=2&a=1#frag"),
        HtmlResponse(url="http://example.com/a?b=2&a=1", body=HTML),
    )
    cached = storage.retrieve_response(spider, Request("http://example.com/a?a=1&b=2"))
    assert cached is not None and cached.body == HTML
    storage.close_spider(spider)
    with Corpus(corpus_dir(tmp_path)) as corpus:
        assert [page.url for page in corpus] == ["http://example.com/a?a=1&b=2"]


def test_expired_version_is_a_miss(tmp_path):
    storage, spider = open_storage(tmp_path, HTTPCACHE_EXPIRATION_SECS=60)
    request = Request("http://example.com/a")
    storage.store_response(spider, request, HtmlResponse(url=request.url, body=HTML))
    assert storage.retrieve_response(spider, request) is not None
    fingerprint = spider.crawler.request_fingerprinter.fingerprint(request)
    # Rewrite the stored fetch time two minutes into the past, through the same API.
    from dataclasses import replace

    stale = replace(storage.db.latest_version(fingerprint), fetched_at=0.0)
    with storage.db.env.begin(write=True) as txn:
        txn.put(
            fingerprint + INDEX.pack(0),
            stale.to_bytes(),
            db=storage.db.environment.tables[b"versions"],
        )
    assert storage.retrieve_response(spider, request) is None
    assert spider.crawler.stats.get_value("focus/corpus/expired") == 1
    storage.close_spider(spider)


def test_content_encoded_bodies_are_stored_decoded_and_deduplicated(tmp_path):
    storage, spider = open_storage(tmp_path)
    plain = Request("http://example.com/plain")
    gz = Request("http://example.com/gz")
    storage.store_response(spider, plain, HtmlResponse(url=plain.url, body=HTML))
    storage.store_response(
        spider,
        gz,
        HtmlResponse(
            url=gz.url,
            body=gzip.compress(HTML),
            headers={"Content-Encoding": "gzip", "Content-Length": "99"},
        ),
    )
    assert storage.db.stats().bodies == 1
    cached = storage.retrieve_response(spider, gz)
    assert cached.body == HTML
    assert b"Content-Encoding" not in cached.headers
    version = storage.db.latest_version(spider.crawler.request_fingerprinter.fingerprint(gz))
    assert version.content_encoding == "gzip"
    assert version.body_hash == body_hash(HTML).hex()
    storage.close_spider(spider)


def test_undecodable_body_is_stored_as_received(tmp_path):
    storage, spider = open_storage(tmp_path)
    request = Request("http://example.com/broken")
    raw = b"\x1f\x8b\x08\x00garbage"
    storage.store_response(
        spider,
        request,
        HtmlResponse(url=request.url, body=raw, headers={"Content-Encoding": "gzip"}),
    )
    cached = storage.retrieve_response(spider, request)
    assert cached.body == raw
    assert cached.headers["Content-Encoding"] == b"gzip"
    assert spider.crawler.stats.get_value("focus/corpus/undecoded_body") == 1
    storage.close_spider(spider)


def test_decode_content_stops_a_decompression_bomb():
    bomb = gzip.compress(b"\0" * (8 << 20))
    with pytest.raises(ContentDecodingError, match="exceed"):
        decode_content(bomb, ["gzip"], max_size=1 << 20)
    deflate_bomb = zlib.compress(b"\0" * (8 << 20))
    with pytest.raises(ContentDecodingError, match="exceed"):
        decode_content(deflate_bomb, ["deflate"], max_size=1 << 20)


def test_decode_content_inflates_a_brotli_bomb_in_bounded_chunks():
    import tracemalloc

    import brotli

    bomb = brotli.compress(bytes(64 << 20), quality=5)
    tracemalloc.start()
    try:
        with pytest.raises(ContentDecodingError, match="exceed"):
            decode_content(bomb, ["br"], max_size=1 << 20)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20  # the limit and a chunk, not the 64 MiB it inflates to


def test_decode_content_handles_stacked_and_raw_deflate_encodings():
    raw_deflate = zlib.compressobj(wbits=-15)
    raw = raw_deflate.compress(HTML) + raw_deflate.flush()
    assert decode_content(raw, ["deflate"]) == HTML
    assert decode_content(gzip.compress(zlib.compress(HTML)), ["deflate", "gzip"]) == HTML
    with pytest.raises(ContentDecodingError, match="unknown"):
        decode_content(HTML, ["x-weird"])


def test_unknown_compression_setting_is_a_clear_error(tmp_path):
    with pytest.raises(CorpusError, match="FOCUS_CORPUS_COMPRESSION='lz4'"):
        open_storage(tmp_path, FOCUS_CORPUS_COMPRESSION="lz4")


@pytest.mark.parametrize("codec", ["zlib", "none"])
def test_other_codecs_round_trip_and_are_readable_by_default_reader(tmp_path, codec):
    storage, spider = open_storage(tmp_path, FOCUS_CORPUS_COMPRESSION=codec)
    request = Request("http://example.com/a")
    storage.store_response(spider, request, HtmlResponse(url=request.url, body=HTML))
    assert storage.retrieve_response(spider, request).body == HTML
    storage.close_spider(spider)
    with Corpus(corpus_dir(tmp_path)) as corpus:
        assert next(iter(corpus)).body() == HTML


def test_storage_used_before_open_says_so(tmp_path):
    storage, spider = open_storage(tmp_path)
    storage.close_spider(spider)
    with pytest.raises(RuntimeError, match="before open_spider"):
        storage.retrieve_response(spider, Request("http://example.com/a"))


def test_corpus_dir_setting_moves_the_corpus(tmp_path):
    target = tmp_path / "elsewhere"
    storage, spider = open_storage(tmp_path, FOCUS_CORPUS_DIR=str(target))
    request = Request("http://example.com/a")
    storage.store_response(spider, request, HtmlResponse(url=request.url, body=HTML))
    storage.close_spider(spider)
    assert (target / "data.mdb").exists()
    with Corpus(target) as corpus:
        assert len(corpus) == 1


def test_records_are_written_in_the_json_older_readers_know(tmp_path):
    storage, spider = open_storage(tmp_path)
    request = Request("http://example.com/a", meta={"depth": 1})
    storage.store_response(
        spider, request, HtmlResponse(url=request.url, body=HTML, headers={"X-A": ["1", "2"]})
    )
    fingerprint = spider.crawler.request_fingerprinter.fingerprint(request)
    version = storage.db.latest_version(fingerprint)
    with storage.db.env.begin() as txn:
        raw = txn.get(fingerprint + INDEX.pack(0), db=storage.db.environment.tables[b"versions"])
    assert raw == json.dumps(asdict(version), separators=(",", ":")).encode()
    assert Version.from_bytes(raw) == version
    storage.close_spider(spider)


# -- what Scrapy's own cache storages keep (issue 17): class, attributes, repairs


class ProductResponse(HtmlResponse):
    """A project's own response subclass, with an attribute of its own."""

    attributes = (*HtmlResponse.attributes, "sku")

    def __init__(self, *args, sku: str | None = None, **kwargs):
        self.sku = sku
        super().__init__(*args, **kwargs)


@pytest.mark.parametrize(
    ("content_type", "body", "cls"),
    [
        # Bodies that do not name their type: only the Content-Type header does.
        ("text/html; charset=utf-8", b"<h1>A fragment</h1><p>of HTML</p>", HtmlResponse),
        ("application/json", b'{"a": [1, 2]}', JsonResponse),
        ("application/xml", b"<feed><entry/></feed>", XmlResponse),
    ],
)
@pytest.mark.parametrize("encoded", [False, True])
def test_cached_response_has_the_class_the_live_crawl_gave(
    tmp_path, content_type, body, cls, encoded
):
    storage, spider = open_storage(tmp_path)
    request = Request("http://example.com/doc")
    headers = {"Content-Type": content_type}
    if encoded:
        headers["Content-Encoding"] = "gzip"
    # What the downloader hands over: a plain Response whenever the body is
    # encoded (responsetypes does not guess through an encoding).
    raw = Response(url=request.url, headers=headers, body=gzip.compress(body) if encoded else body)
    storage.store_response(spider, request, raw)
    cached = storage.retrieve_response(spider, request)
    assert type(cached) is cls
    assert cached.body == body
    storage.close_spider(spider)


def test_explicit_encoding_and_a_subclass_attributes_survive_the_cache(tmp_path):
    storage, spider = open_storage(
        tmp_path, FOCUS_CORPUS_RESPONSE_CLASSES=[f"{__name__}.ProductResponse"]
    )
    text = Request("http://example.com/text")
    # The header says UTF-8; the spider knows better and said so.
    storage.store_response(
        spider,
        text,
        TextResponse(
            url=text.url,
            headers={"Content-Type": "text/plain; charset=utf-8"},
            body="Grüße".encode("latin-1"),
            encoding="latin-1",
        ),
    )
    product = Request("http://example.com/product")
    storage.store_response(
        spider, product, ProductResponse(url=product.url, body=HTML, sku="A-113")
    )
    cached_text = storage.retrieve_response(spider, text)
    assert cached_text.encoding == "latin-1"
    assert cached_text.text == "Grüße"
    cached_product = storage.retrieve_response(spider, product)
    assert type(cached_product) is ProductResponse
    assert cached_product.sku == "A-113"
    storage.close_spider(spider)

    # A reader that was not told to trust the subclass rebuilds its trusted base.
    with Corpus(corpus_dir(tmp_path)) as corpus:
        response = corpus.page(product.url).response()
        assert type(response) is HtmlResponse
        assert corpus.response_classes.untrusted == {f"{__name__}.ProductResponse": 1}


def test_damaged_version_record_raises_and_the_next_download_repairs_it(tmp_path):
    storage, spider = open_storage(tmp_path)
    request = Request("http://example.com/a")
    storage.store_response(spider, request, HtmlResponse(url=request.url, body=HTML))
    fingerprint = spider.crawler.request_fingerprinter.fingerprint(request)
    with storage.db.env.begin(write=True) as txn:
        txn.put(
            fingerprint + INDEX.pack(0),
            b'{"index": 0, "url": tru',
            db=storage.db.environment.tables[b"versions"],
        )

    # Raised, as Scrapy's storages do: HttpCacheMiddleware logs it and counts a miss.
    with pytest.raises(CorruptRecord):
        storage.retrieve_response(spider, request)
    assert spider.crawler.stats.get_value("focus/corpus/corrupt_record") == 1
    storage.store_response(spider, request, HtmlResponse(url=request.url, body=HTML))
    cached = storage.retrieve_response(spider, request)
    assert cached is not None and cached.body == HTML
    assert [v.index for v in storage.db.versions(fingerprint)] == [0]
    storage.close_spider(spider)


@pytest.mark.parametrize(
    ("codec", "damage"),
    [
        ("zstd", lambda stored: stored[:1] + b"\x00" * (len(stored) - 1)),  # does not decode
        ("none", lambda stored: stored[:-1] + b"!"),  # decodes, to the wrong bytes
    ],
)
def test_damaged_body_is_rewritten_by_the_next_store_of_that_body(tmp_path, codec, damage):
    storage, spider = open_storage(tmp_path, FOCUS_CORPUS_COMPRESSION=codec)
    request = Request("http://example.com/a")
    storage.store_response(spider, request, HtmlResponse(url=request.url, body=HTML))
    digest = body_hash(HTML)
    bodies = storage.db.environment.tables[b"bodies"]
    with storage.db.env.begin(write=True) as txn:
        txn.put(digest, damage(bytes(txn.get(digest, db=bodies))), db=bodies)

    other = Request("http://example.com/copy")  # the same body under another URL
    storage.store_response(spider, other, HtmlResponse(url=other.url, body=HTML))
    assert storage.retrieve_response(spider, request).body == HTML
    assert storage.retrieve_response(spider, other).body == HTML
    storage.close_spider(spider)
