"""Duplicates: the fingerprint every request is known by, and who says it was seen.

The fingerprint is the crawler's (``REQUEST_FINGERPRINTER_CLASS``; the add-on's
is the canonical URL's).  The frontier's seen set, in its store, is the
dupefilter when ``DUPEFILTER_CLASS`` is Scrapy's default: that one would hold
a second seen set (in memory, and in ``JOBDIR/requests.seen``), so it is kept
only to log and count duplicates as Scrapy does.  A user's own dupefilter is
asked about every request instead, and opened and closed with the scheduler.
Every request marks its page seen (seeds and re-fetches too, so a later link
to them is a duplicate); only ``dont_filter`` skips the check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.dupefilters import BaseDupeFilter, RFPDupeFilter
from scrapy.utils.misc import build_from_crawler, load_object

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.utils.request import RequestFingerprinterProtocol

    from scrapy_focus.config import FrontierConfig


class Duplicates:
    """Fingerprints and the duplicate decision of one scheduler."""

    def __init__(self, crawler: Crawler, config: FrontierConfig) -> None:
        self.crawler = crawler
        self.config = config
        self.stats = crawler.stats
        self.fingerprinter: RequestFingerprinterProtocol | None = None
        # None: the frontier's seen set is the dupefilter; else the user's own.
        self.dupefilter: BaseDupeFilter | None = None
        self._log: BaseDupeFilter | None = None  # logs and counts as Scrapy's
        self.spider: Spider | None = None

    def open(self, spider: Spider) -> None:
        self.spider = spider
        self.fingerprinter = self._find_fingerprinter()
        cls = load_object(self.config.dupefilter_class) if self.config.dupefilter_class else None
        self._log = RFPDupeFilter(
            debug=self.config.dupefilter_debug, fingerprinter=self.fingerprinter
        )
        if cls is not None and cls is not RFPDupeFilter:
            self.dupefilter = self._log = build_from_crawler(cls, self.crawler)

    def open_filter(self) -> Any:
        return self.dupefilter.open() if self.dupefilter is not None else None

    def close(self, reason: str) -> Any:
        return self.dupefilter.close(reason) if self.dupefilter is not None else None

    def _find_fingerprinter(self) -> RequestFingerprinterProtocol:
        """The crawler's fingerprinter; one built from its settings when the crawler
        has none yet (a scheduler opened outside a crawl, as Scrapy's tests do)."""
        try:
            return self.crawler.request_fingerprinter
        except (AttributeError, RuntimeError):
            cls = load_object(self.config.fingerprinter_class)
            return build_from_crawler(cls, self.crawler)

    def fingerprint(self, request: Request) -> bytes:
        if self.fingerprinter is None:
            raise RuntimeError("FocusScheduler used before open()")
        return self.fingerprinter.fingerprint(request)

    def admit(self, request: Request, new_to_store: bool) -> bool:
        """Whether *request* goes on (*new_to_store*: the store's seen set had not
        seen its page); a duplicate is counted and logged."""
        new = new_to_store
        if self.dupefilter is not None:
            new = request.dont_filter or not self.dupefilter.request_seen(request)
        if new or request.dont_filter:
            return True
        self.stats.inc_value("focus/frontier/duplicate")
        if self._log is not None and self.spider is not None:
            self._log.log(request, self.spider)
        return False
