"""``FocusLogStats``: a periodic log line of the few figures that say how a crawl goes.

In the style of Scrapy's LogStats: pages fetched (and per minute since the last
line), relevant pages and the harvest rate, the frontier (and how much of it is
held back), the final responses by engine, and the links and pages rejected.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from scrapy_focus.runtime import FocusRuntime

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

logger = logging.getLogger(__name__)


class FocusLogStats:
    """Logs the crawl's focus figures every ``FOCUS_LOG_INTERVAL`` seconds and at close."""

    def __init__(self, crawler: Crawler, interval: float) -> None:
        self.crawler = crawler
        self.interval = interval
        self.task: Any = None
        self.last = (time.monotonic(), 0)  # when the last line was logged, and its pages

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = FocusRuntime.of(crawler).config.frontier
        interval = config.log_interval
        if not interval or not config.enabled:
            raise NotConfigured
        extension = cls(crawler, interval)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider: Any = None) -> None:
        from twisted.internet import task

        self.last = (time.monotonic(), self.crawler.stats.get_value("focus/pages_fetched", 0))
        self.task = task.LoopingCall(self.log)
        self.task.start(self.interval, now=False)

    def spider_closed(self, spider: Any = None, reason: str = "") -> None:
        if self.task is not None and self.task.running:
            self.task.stop()
        self.log()

    def log(self) -> None:
        stats = self.crawler.stats.get_stats()
        fetched = stats.get("focus/pages_fetched", 0)
        relevant = stats.get("focus/relevant_pages", 0)
        held = stats.get("focus/frontier/held_back", 0)
        now = time.monotonic()
        since, before = self.last
        self.last = (now, fetched)
        rate = (fetched - before) * 60 / (now - since) if now > since else 0.0
        engines = ", ".join(
            f"{key.rsplit('/', 1)[1]} {value}"
            for key, value in sorted(stats.items())
            if key.startswith("focus/ladder/final/")
        )
        logger.info(
            "focus: %d pages (%.0f/min), %d relevant (harvest %.2f), frontier %d%s, "
            "engines: %s, rejected: %d links, %d pages",
            fetched,
            rate,
            relevant,
            relevant / fetched if fetched else 0.0,
            stats.get("focus/frontier/size", 0),
            f" ({held} held back)" if held else "",
            engines or "none yet",
            stats.get("focus/frontier/rejected_link", 0),
            stats.get("focus/contract/rejected", 0),
        )
