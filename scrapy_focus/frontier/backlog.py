"""How far the crawl fetches ahead of what it has read: the processing backlog.

A response leaves its download slot (and its host's turn) before it has gone
through the downloader middlewares, the engine ladder's verdict, the corpus and
the extraction in worker processes; its links reach the frontier only after
that.  Where pages download faster than they are extracted (a fast or local
site), each freed slot is filled at once and responses queue in front of busy
extraction workers, up to ``CONCURRENT_REQUESTS`` of them: every dispatch is
then decided without the evidence of that many pages, and which pages those
are is timing (a slow page, a busy worker).  A focused crawl's first choices,
which decide where it goes, then differ from run to run.

:class:`ProcessingBacklog` counts those responses: the requests in the
crawler's downloader (Scrapy's ``Downloader.active`` holds a request from its
first downloader middleware to its last) that are not in a download slot
(between ``request_reached_downloader`` and ``request_left_downloader``, which
Scrapy sends in pairs).  While they are ``FOCUS_MAX_UNPROCESSED`` or more (by
default as many as the extraction workers) :meth:`~ProcessingBacklog.full` is
true and the scheduler hands out nothing; the engine asks again when a
response comes out (it does after every download).  The crawl then fetches no
faster than it extracts, which it could not go beyond anyway: it only stops
queueing pages in front of busy workers.  A lost signal can only make the count
low, opening the gate, never hold the crawl.  With ``FOCUS_REPRODUCIBLE_ORDER``
there is no such limit: that order bounds the evidence not yet applied itself
(:mod:`.ordering`), and the responses it holds for their turn would count here.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_focus.config import ExtractConfig, FrontierConfig

logger = logging.getLogger(__name__)


class ProcessingBacklog:
    """Responses downloaded and not yet out of the downloader middlewares."""

    def __init__(self, config: FrontierConfig, extract: ExtractConfig, crawler: Crawler) -> None:
        limit = config.max_unprocessed
        self.limit = extract.workers if limit is None else limit  # 0: no limit
        if config.reproducible_order:  # it holds responses for their turn: they would count
            self.limit = 0
        self.crawler = crawler
        self._in_slots = 0
        self._was_full = False

    def announce(self) -> None:
        """Say at start-up how far the crawl may fetch ahead of its reading."""
        if self.limit:
            logger.info(
                "The frontier hands out no request while %d response(s) wait for the "
                "downloader middlewares (the extraction): FOCUS_MAX_UNPROCESSED, 0 for no limit",
                self.limit,
            )

    def reached_slot(self) -> None:
        self._in_slots += 1

    def left_slot(self) -> None:
        self._in_slots = max(0, self._in_slots - 1)

    def __len__(self) -> int:
        downloader = getattr(self.crawler.engine, "downloader", None)
        return max(0, len(getattr(downloader, "active", ())) - self._in_slots)

    def room(self) -> int | None:
        """How many more responses may wait before the limit (``None``: no limit).
        Side-effect free, so a cluster node's link thread may read it: a node leases
        no more entries ready now than this and its lead (:mod:`scrapy_focus.cluster.lead`)."""
        return max(0, self.limit - len(self)) if self.limit else None

    def full(self) -> bool:
        """Whether the scheduler should hand out nothing now; each time the
        backlog fills up counts in ``focus/frontier/backlog_full``."""
        full = self.room() == 0
        if full and not self._was_full:
            self.crawler.stats.inc_value("focus/frontier/backlog_full")
        self._was_full = full
        return full
