"""An extension that kills its own crawl (SIGKILL) at one chosen moment: when the
frontier has been told that the page at ``FOCUS_TEST_KILL_AFTER`` (a path) is
done, with the frontier's writes so far committed, as the store's timer would."""

from __future__ import annotations

import os
import signal
from typing import Any
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.crawler import Crawler

from scrapy_focus import signals as focus_signals


class KillAfterPageDone:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.path = crawler.settings["FOCUS_TEST_KILL_AFTER"]
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> KillAfterPageDone:
        return cls(crawler)

    def spider_opened(self, spider: Any) -> None:
        # Connected now, after the scheduler (built before spider_opened), so this
        # receiver runs after the scheduler's own page_done receiver.
        self.crawler.signals.connect(self.page_done, signal=focus_signals.page_done)

    def page_done(self, request: Any, output: Any = None) -> None:
        if urlsplit(request.url).path == self.path:
            self.crawler.engine._slot.scheduler.store.commit()
            os.kill(os.getpid(), signal.SIGKILL)
