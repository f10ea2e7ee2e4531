"""Links to pages the frontier is done with, dropped where a page yields them.

A site's every page links to much of the site (a sidebar, a table of contents, an
index, previous and next), so a few pages into a crawl nearly every link a page yields
leads to a page fetched already or on its way.  The scheduler would drop each as a
duplicate, with no other effect, but only after the engine has taken it in, Scrapy's
per-output tasks have run for it and the frontier's admission has fingerprinted it: on a
documentation site that is most of the crawl process's CPU.  The link-context middleware
asks :meth:`KnownLinks.settled` of each request a page yields, and drops the settled
ones there.

The contract:

* ``settled(request)`` is True only for a request the scheduler would drop as a
  duplicate with nothing else coming of it: it is not ``dont_filter``; the frontier's
  seen set is the dupefilter (Scrapy's default ``DUPEFILTER_CLASS``, without
  ``DUPEFILTER_DEBUG``, which logs every duplicate: with either, every request goes
  to the scheduler as before); the crawl has a scope (a link with none stops the
  crawl, which the scheduler says); and its page is seen and not queued (fetched, in
  flight, or refused).  A link to a page still queued goes on: found again in a
  better context, it may raise the page (:mod:`.rescoring`);
* ``follow(url, encoding, build)`` is ``build(url)`` (the request a page of that
  *encoding* yields for the link), or None where ``settled`` would be True of it; a
  URL asked before is answered without building its request: ``FocusSpider.links``
  asks it, so a link to a page the crawl is done with costs a URL join and two
  lookups, not a request through Scrapy's spider middlewares;
* both answer as if the frontier knew nothing until the scheduler binds them to its
  store (``open``) and after it unbinds them (``close``): with another scheduler
  nothing is dropped;
* what is dropped is counted (``count``) as the scheduler counts a duplicate
  (``dupefilter/filtered``, ``focus/frontier/duplicate``) and as
  ``focus/links/known``; Scrapy's ``request_dropped`` signal is not sent for it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from scrapy_focus.urls import URL_MEMO

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.statscollectors import StatsCollector

    from scrapy_focus.frontier.admission import CrawlScope
    from scrapy_focus.frontier.dupes import Duplicates
    from scrapy_focus.frontier.seams import FrontierStore

logger = logging.getLogger(__name__)


class KnownLinks:
    """The frontier's answer to "would this link be dropped as a duplicate?"."""

    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats
        self._store: FrontierStore | None = None
        self._duplicates: Duplicates | None = None
        self._scope: CrawlScope | None = None
        # (url, encoding) -> the fingerprint of its request; emptied when full
        self._fingerprints: dict[tuple[str, str], bytes] = {}

    def bind(self, store: FrontierStore, duplicates: Duplicates, scope: CrawlScope) -> None:
        """The scheduler's store and seen set answer from now on, if its seen set is
        the dupefilter (else every request goes to the scheduler)."""
        self._fingerprints.clear()
        if duplicates.dupefilter is None and not duplicates.config.dupefilter_debug:
            self._store, self._duplicates, self._scope = store, duplicates, scope
            logger.info(
                "Links to pages the crawl is done with are dropped where the spider yields "
                "them, counted in dupefilter/filtered, without Scrapy's request_dropped signal "
                "(DUPEFILTER_DEBUG sends every one to the scheduler)"
            )

    def unbind(self) -> None:
        self._store = self._duplicates = self._scope = None
        self._fingerprints.clear()

    def settled(self, request: Request) -> bool:
        """Whether the scheduler would drop *request* as a duplicate, and nothing else."""
        if self._duplicates is None or request.dont_filter:
            return False
        return self._settled(self._duplicates.fingerprint(request))

    def follow(self, url: str, encoding: str, build: Callable[[str], Request]) -> Request | None:
        """``build(url)``, or None where :meth:`settled` would be True of it (known
        from an earlier answer for the same URL without building the request)."""
        duplicates = self._duplicates
        if duplicates is None:
            return build(url)
        key = (url, encoding)
        fingerprint = self._fingerprints.get(key)
        if fingerprint is not None:
            return None if self._settled(fingerprint) else build(url)
        request = build(url)
        if request.dont_filter:
            return request
        fingerprint = duplicates.fingerprint(request)  # the scheduler's, kept with the request
        if len(self._fingerprints) >= URL_MEMO:
            self._fingerprints.clear()
        self._fingerprints[key] = fingerprint
        return None if self._settled(fingerprint) else request

    def count(self, dropped: int) -> None:
        """*dropped* links, counted as the scheduler counts a duplicate (and as known)."""
        if dropped:
            for key in ("dupefilter/filtered", "focus/frontier/duplicate", "focus/links/known"):
                self.stats.inc_value(key, dropped)

    def _settled(self, fingerprint: bytes) -> bool:
        store, scope = self._store, self._scope
        if store is None or scope is None or scope.empty:
            return False
        return store.settled(fingerprint)
