"""An extension through which a child crawl hands its final stats to the test or benchmark.

``EXTENSIONS = {"harness.stats_dump.StatsToFile": 0}`` (harness.crawl.STATS_EXTENSION)
and the environment variable ``FOCUS_TEST_STATS_FILE``: when the engine stops, the
stats that are numbers or strings, plus ``finish_reason``, are written to that file
as one JSON object.  Without the variable, or if the spider never closed, nothing
is written.
"""

from __future__ import annotations

import json
import os
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler

STATS_FILE_ENV = "FOCUS_TEST_STATS_FILE"  # the file to write; unset, nothing is written


class StatsToFile:
    """Writes the crawl's final stats, as Scrapy dumps them (after every spider_closed
    receiver has finished: some close things asynchronously and count them)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.reason: str | None = None
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StatsToFile:
        return cls(crawler)

    def spider_closed(self, spider: Any, reason: str) -> None:
        self.reason = reason

    def engine_stopped(self) -> None:
        path = os.environ.get(STATS_FILE_ENV)
        if not path or self.reason is None:
            return
        stats = {
            key: value
            for key, value in self.crawler.stats.get_stats().items()
            if isinstance(value, (int, float, str))
        }
        stats["finish_reason"] = self.reason
        with open(path, "w") as out:
            json.dump(stats, out)
