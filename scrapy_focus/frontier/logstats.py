"""``FocusLogStats``: a periodic log line with the harvest rate and the frontier size."""

from __future__ import annotations

import logging
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

        self.task = task.LoopingCall(self.log)
        self.task.start(self.interval, now=False)

    def spider_closed(self, spider: Any = None, reason: str = "") -> None:
        if self.task is not None and self.task.running:
            self.task.stop()
        self.log()

    def log(self) -> None:
        stats = self.crawler.stats
        fetched = stats.get_value("focus/pages_fetched", 0)
        relevant = stats.get_value("focus/relevant_pages", 0)
        held = stats.get_value("focus/frontier/held_back", 0)
        logger.info(
            "focus: %d pages fetched, %d relevant (harvest rate %.2f), frontier %d pending%s, "
            "%d rejected links",
            fetched,
            relevant,
            relevant / fetched if fetched else 0.0,
            stats.get_value("focus/frontier/size", 0),
            f" ({held} of them held back)" if held else "",
            stats.get_value("focus/frontier/rejected_link", 0),
        )
