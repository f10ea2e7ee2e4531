"""An extension that counts the corpus's LMDB write transactions in a child crawl.

``EXTENSIONS = {"tests.write_counter.WriteCounter": 0}``: once the spider is open it
wraps the write method of the crawl's corpus environment (no mock: every write still
runs, it is only counted), and at close sets the stat ``test/corpus_writes`` to the
number of write transactions since then.
"""

from __future__ import annotations

from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler

from scrapy_focus.runtime import FocusRuntime


class WriteCounter:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.writes = 0
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WriteCounter:
        return cls(crawler)

    def spider_opened(self, spider: Any) -> None:
        environment = FocusRuntime.of(self.crawler).corpus.environment
        write = environment.write

        def counted(work: Any) -> Any:
            self.writes += 1
            return write(work)

        environment.write = counted

    def spider_closed(self, spider: Any, reason: str) -> None:
        self.crawler.stats.set_value("test/corpus_writes", self.writes)
