"""An extension that shows whether the reactor thread runs: from the engine's start
it writes ``time.monotonic()`` (the machine's clock, the same in every process) to
the file named by the ``TEST_REACTOR_TICKS`` setting every 0.1 s, one line each.  A
gap between two lines is a time the reactor was blocked."""

from __future__ import annotations

import time
from typing import Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import task


class ReactorTicks:
    def __init__(self, path: str) -> None:
        self.file = open(path, "a", buffering=1)  # noqa: SIM115 (closed at spider close)
        self.loop = task.LoopingCall(self.tick)

    @classmethod
    def from_crawler(cls, crawler: Any) -> ReactorTicks:
        path = crawler.settings.get("TEST_REACTOR_TICKS")
        if not path:
            raise NotConfigured
        ticks = cls(path)
        crawler.signals.connect(ticks.started, signal=signals.engine_started)
        crawler.signals.connect(ticks.closed, signal=signals.spider_closed)
        return ticks

    def tick(self) -> None:
        self.file.write(f"{time.monotonic():.3f}\n")

    def started(self) -> None:
        self.loop.start(0.1)

    def closed(self, spider: Any) -> None:
        if self.loop.running:
            self.loop.stop()
        self.file.close()
