"""When the crawl stops by itself, and the counters it stops on.

Stop conditions (close reason in brackets): ``FOCUS_MAX_PAGES`` pages fetched
(``focus_max_pages``), ``FOCUS_MAX_RELEVANT_PAGES`` relevant pages
(``focus_max_relevant``), ``FOCUS_DEADLINE`` seconds (``focus_deadline``), and
saturation: the best frontier score below ``FOCUS_SATURATION_SCORE`` for
``FOCUS_SATURATION_PAGES`` dequeues in a row (``focus_saturated``).  The
scheduler also stops a crawl with no scope to keep to (:data:`NO_SCOPE`) and
one whose store failed (``focus_storage_error``, :mod:`scrapy_focus.faults`).

:class:`StopConditions` reads the pages counted in a
:class:`~scrapy_focus.frontier.seams.CrawlCounters` (:class:`LocalCounters` on
one machine), so in a cluster the budget is the crawl's, not a node's; what
it returns is the reason to stop, or None.

In a cluster (:class:`~scrapy_focus.cluster.counters.RedisCounters`) the page
budgets and the deadline are the crawl's: the totals are the cluster's and the
deadline counts from the cluster crawl's start (``CrawlCounters.elapsed``).
Per node by nature: saturation (a streak of this node's own dequeues, each the
best the shared frontier had) and the in-flight part of :meth:`budget_left`
(this node's requests on the wire), so a cluster may pass ``FOCUS_MAX_PAGES`` by
at most what its other nodes have in flight.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_focus.config import FrontierConfig
    from scrapy_focus.frontier.seams import CrawlCounters

logger = logging.getLogger(__name__)

NO_SCOPE = "focus_no_scope"  # the close reason of a crawl that has no scope to keep to


class LocalCounters:
    """The :class:`~scrapy_focus.frontier.seams.CrawlCounters` of one process."""

    def __init__(self) -> None:
        self.fetched = 0
        self.relevant = 0

    def add_fetched(self) -> int:
        self.fetched += 1
        return self.fetched

    def add_relevant(self) -> int:
        self.relevant += 1
        return self.relevant

    def to_bytes(self) -> bytes:
        return f"{self.fetched},{self.relevant}".encode()

    def restore(self, raw: bytes) -> None:
        self.fetched, self.relevant = (int(x) for x in raw.split(b","))

    def elapsed(self) -> float | None:
        return None  # the process's own clock: StopConditions keeps it


class StopConditions:
    """The crawl's stop conditions over its counters (see the module docstring)."""

    def __init__(
        self,
        config: FrontierConfig,
        counters: CrawlCounters,
        clock: Callable[[], float] = time.monotonic,
        crawler: Crawler | None = None,
    ) -> None:
        self.config = config
        self.counters = counters
        self.clock = clock
        self.crawler = crawler
        self.started = clock()
        self._low_streak = 0

    def budget_left(self, in_flight: int) -> bool:
        """Whether another request may go out: not when those in flight would
        reach ``FOCUS_MAX_PAGES`` (no overshoot).  In flight: the *in_flight* the
        scheduler counts, or the crawler's downloader's whole active set if larger
        (:func:`requests_out`)."""
        max_pages = self.config.max_pages
        if max_pages and self.crawler is not None:
            in_flight = requests_out(self.crawler, in_flight)
        return not max_pages or self.counters.fetched + in_flight < max_pages

    def dequeued(self, score: float) -> str | None:
        """An entry of *score* was taken: saturation or the deadline, or None."""
        config = self.config
        if config.saturation_pages and config.saturation_score:
            self._low_streak = self._low_streak + 1 if score < config.saturation_score else 0
        if config.saturation_pages and self._low_streak >= config.saturation_pages:
            return "focus_saturated"
        return self._deadline()

    def page_counted(self) -> str | None:
        """A page was fetched or scored: the page budgets or the deadline, or None."""
        config, counters = self.config, self.counters
        if config.max_pages and counters.fetched >= config.max_pages:
            return "focus_max_pages"
        if config.max_relevant_pages and counters.relevant >= config.max_relevant_pages:
            return "focus_max_relevant"
        return self._deadline()

    def _deadline(self) -> str | None:
        if not self.config.deadline:
            return None
        elapsed = self.counters.elapsed()
        if elapsed is None:
            elapsed = self.clock() - self.started
        return "focus_deadline" if elapsed >= self.config.deadline else None


def requests_out(crawler: Crawler, dispatched: int) -> int:
    """Requests of the crawl whose page is not counted yet: the *dispatched* ones
    still on the wire, or the downloader's whole active set if larger.  A request
    leaves the wire (and its host's slot) before its response has gone through the
    downloader middlewares (the ladder's verdict, the corpus), which can take
    seconds; the page is counted only when the response comes out of them."""
    engine = crawler.engine
    downloader = getattr(engine, "downloader", None)
    return max(dispatched, len(getattr(downloader, "active", ())))


def close_crawl(crawler: Crawler, spider: Any, reason: str) -> None:
    """Close the crawl's spider with *reason*, as the engine's own stops do."""
    logger.info("Stopping the crawl: %s", reason)
    engine = crawler.engine
    if engine is None:
        return
    if hasattr(engine, "close_spider_async"):  # Scrapy >= 2.14
        from scrapy.utils.defer import deferred_from_coro

        deferred_from_coro(engine.close_spider_async(reason=reason))
    else:
        engine.close_spider(spider, reason)


def log_no_scope(url: str) -> None:
    logger.error(
        "No scope to check %s against: no FOCUS_ALLOWED_DOMAINS, no allowed_domains "
        "on the spider, and no seed (a start request) came first.  Give the crawl a "
        'seed or allowed domains, or set FOCUS_SEED_SCOPE = "any" to crawl any host.',
        url,
    )
