"""The corpus's LMDB environment: LMDB's one-open-per-process rule, handles per crawl."""

from __future__ import annotations

import pytest
from scrapy import Request, Spider
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from scrapy_focus.corpus.db import CorpusDB
from scrapy_focus.corpus.reader import Corpus
from scrapy_focus.corpus.records import Fetch
from scrapy_focus.faults import StorageError
from scrapy_focus.runtime import FocusRuntime
from tests.corpus_helpers import open_storage


def _fetch(url: str) -> Fetch:
    return Fetch(
        fingerprint=url.encode().ljust(20, b"-")[:20],
        canonical_url=url,
        url=url,
        final_url=url,
        status=200,
        headers=[],
        body=b"<p>body</p>",
    )


def test_handles_of_one_directory_share_one_environment_until_the_last_closes(tmp_path):
    first = CorpusDB(tmp_path / "corpus")
    second = CorpusDB(tmp_path / "corpus")
    reader = CorpusDB(tmp_path / "corpus", readonly=True)
    assert first.environment is second.environment is reader.environment
    first.record_fetch(_fetch("http://example.com/a"))
    first.close()
    # The others still read and write through the environment the first one opened.
    second.record_fetch(_fetch("http://example.com/b"))
    assert reader.stats().pages == 2
    second.close()
    reader.close()
    with Corpus(tmp_path / "corpus") as corpus:
        assert len(corpus) == 2


def test_each_handle_tells_its_own_crawl_of_a_write_fault(tmp_path):
    failing, quiet = CorpusDB(tmp_path / "corpus"), CorpusDB(tmp_path / "corpus")
    seen: list[str] = []
    failing.fault_handlers.append(lambda error: seen.append("failing"))
    quiet.fault_handlers.append(lambda error: seen.append("quiet"))

    def broken(txn):
        raise __import__("lmdb").DiskError("disk gone")

    with pytest.raises(StorageError, match="disk gone"):
        failing._write(broken)
    assert seen == ["failing"]
    failing.close()
    quiet.close()


def test_the_crawl_components_share_the_runtime_handle(tmp_path):
    storage, spider = open_storage(tmp_path)
    mine = FocusRuntime.of(spider.crawler).corpus
    assert storage.db is mine
    request = Request("http://example.com/a")
    storage.store_response(spider, request, HtmlResponse(url=request.url, body=b"<p>a</p>"))
    storage.close_spider(spider)
    # A second crawler of the same process opens the same directory beside it.
    other = get_crawler(
        Spider, {"ADDONS": {"scrapy_focus.Addon": 500}, "HTTPCACHE_DIR": str(tmp_path / "cache")}
    )
    other.spider = Spider.from_crawler(other, name="unit")
    corpus = FocusRuntime.of(other).corpus
    assert corpus is not mine and corpus.environment is mine.environment
    assert corpus.latest_version(other.request_fingerprinter.fingerprint(request)) is not None
