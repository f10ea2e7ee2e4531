"""``CrawlObserver``: the figures of a crawl that only its signals tell.

The contract: the runtime makes one per crawl (``FocusRuntime.of(crawler).observer``);
it follows two Scrapy signals and keeps, in bounded memory,

* at ``request_reached_downloader``: the request's queue age (now minus when its
  link was found, ``LinkContext.found_at``), for the first attempt of a request
  only (an escalation or a redirect is not a second wait in the queue);
* at ``response_received`` (a final response: the ladder's escalations do not
  reach it): its host, its engine (``http`` when the ladder is off), whether
  it needed more than one engine, its render wait and its extraction time.

Percentiles are over the last :data:`~scrapy_focus.report.sample.WINDOW`
observations; hosts past :data:`MAX_HOSTS` are counted under ``"(other hosts)"``.
Readers (the recorder, the log line, the Prometheus endpoint) only read: two of
them never disturb each other's figures.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy import signals

from scrapy_focus.report.sample import WINDOW, Percentiles
from scrapy_focus.state import peek
from scrapy_focus.urls import host_of

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

MAX_HOSTS = 10_000
OTHER_HOSTS = "(other hosts)"


@dataclass
class HostTally:
    """What the signals said about one host."""

    responses: int = 0
    engines: Counter[str] = field(default_factory=Counter)
    escalations: int = 0


class CrawlObserver:
    """See the module docstring."""

    def __init__(self, crawler: Crawler) -> None:
        self.opened = time.time()
        self.queue_ages: deque[float] = deque(maxlen=WINDOW)
        self.extract_seconds: deque[float] = deque(maxlen=WINDOW)
        self.render_waits: deque[float] = deque(maxlen=WINDOW)
        self.hosts: dict[str, HostTally] = {}
        crawler.signals.connect(self.reached_downloader, signal=signals.request_reached_downloader)
        crawler.signals.connect(self.response_received, signal=signals.response_received)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)

    def spider_opened(self, spider: Any = None) -> None:
        self.opened = time.time()

    def reached_downloader(self, request: Request, spider: Any = None) -> None:
        state = peek(request)
        if state is None or state.link is None or len(state.attempts) > 1:
            return
        self.queue_ages.append(max(0.0, time.time() - state.link.found_at))

    def response_received(self, response: Response, request: Request, spider: Any = None) -> None:
        tally = self.tally(host_of(request.url))
        tally.responses += 1
        state = peek(request)
        # Without the ladder (one engine: it switches itself off) no attempt is
        # recorded, and Scrapy's HTTP handler fetched the page.
        engine = state.engine if state is not None else None
        tally.engines[engine or "http"] += 1
        if state is None:
            return
        if len(state.attempts) > 1:
            tally.escalations += 1
        attempt = state.attempt
        if attempt is not None and attempt.render_wait is not None:
            self.render_waits.append(attempt.render_wait)
        if state.extracted.seconds is not None:
            self.extract_seconds.append(state.extracted.seconds)

    def tally(self, host: str) -> HostTally:
        tally = self.hosts.get(host)
        if tally is None:
            if len(self.hosts) >= MAX_HOSTS:
                host = OTHER_HOSTS
            tally = self.hosts.setdefault(host, HostTally())
        return tally

    def percentiles(self) -> tuple[Percentiles, Percentiles, Percentiles]:
        """Queue age, extraction seconds and render wait."""
        return (
            Percentiles.of(self.queue_ages),
            Percentiles.of(self.extract_seconds),
            Percentiles.of(self.render_waits),
        )

    def engines(self) -> dict[str, int]:
        """Final responses by engine, all hosts."""
        total: Counter[str] = Counter()
        for tally in self.hosts.values():
            total.update(tally.engines)
        return dict(total)
