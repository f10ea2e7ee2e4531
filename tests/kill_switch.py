"""Extensions that kill their own crawl (SIGKILL) at one chosen moment.

``KillAfterPageDone``: when the frontier has been told that the page at
``FOCUS_TEST_KILL_AFTER`` (a path) is done, with the frontier's writes so far
committed, as the store's timer would.

``KillBeforePush``: when the frontier is about to queue the link to
``FOCUS_TEST_KILL_BEFORE_PUSH`` (a path), its admission otherwise done; the
store's timer is made due at every write (``commit_interval`` 0), so whatever
the store lets a write commit is on disk at the kill."""

from __future__ import annotations

import os
import signal
from typing import Any
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.crawler import Crawler

from scrapy_focus import signals as focus_signals


class _KillSwitch:
    """Reads its path from the setting *setting* and arms itself at spider_opened,
    once the scheduler (built before) has opened its store."""

    setting = ""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.path = crawler.settings[self.setting]
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> _KillSwitch:
        return cls(crawler)

    def spider_opened(self, spider: Any) -> None:
        raise NotImplementedError

    @property
    def store(self) -> Any:
        return self.crawler.engine._slot.scheduler.store

    @staticmethod
    def kill() -> None:
        os.kill(os.getpid(), signal.SIGKILL)


class KillAfterPageDone(_KillSwitch):
    setting = "FOCUS_TEST_KILL_AFTER"

    def spider_opened(self, spider: Any) -> None:
        # Connected now, after the scheduler (built before spider_opened), so this
        # receiver runs after the scheduler's own page_done receiver.
        self.crawler.signals.connect(self.page_done, signal=focus_signals.page_done)

    def page_done(self, request: Any, output: Any = None) -> None:
        if urlsplit(request.url).path == self.path:
            self.store.commit()
            self.kill()


class KillBeforePush(_KillSwitch):
    setting = "FOCUS_TEST_KILL_BEFORE_PUSH"

    def spider_opened(self, spider: Any) -> None:
        store = self.store
        store.batch.commit_interval = 0  # every write is a second after the last
        push = store.push

        def push_or_die(host: str, priority: int, score: float, payload: bytes, *args: Any) -> Any:
            if self.path.encode() in payload:
                self.kill()
            return push(host, priority, score, payload, *args)

        store.push = push_or_die
