"""Links to pages the frontier is done with, and a page's repeated links, dropped where
a page yields them.

A site's every page links to much of the site (a sidebar, a table of contents, an
index, previous and next), so a few pages into a crawl nearly every link a page yields
leads to a page fetched already or on its way.  The scheduler would drop each as a
duplicate, with no other effect, but only after the engine has taken it in, Scrapy's
per-output tasks have run for it and the frontier's admission has fingerprinted it: on a
documentation site that is most of the crawl process's CPU.  The link-context middleware
asks :meth:`KnownLinks.admit` of each request a page yields, and drops the others there.
A page that links to one page many times (an index: a link per entry, each to an
anchor of the same page) gives the frontier the same evidence each time, one link
context per URL (:mod:`.context`); its repeats are dropped too.

The contract:

* ``settled(request)`` is True only for a request the scheduler would drop as a
  duplicate with nothing else coming of it: it is not ``dont_filter``; the frontier's
  seen set is the dupefilter (Scrapy's default ``DUPEFILTER_CLASS``, without
  ``DUPEFILTER_DEBUG``, which logs every duplicate: with either, every request goes
  to the scheduler as before); the crawl has a scope (a link with none stops the
  crawl, which the scheduler says); and its page is seen and not queued (fetched, in
  flight, or refused).  A link to a page still queued goes on: found again in a
  better context, it may raise the page (:mod:`.rescoring`);
* a page's repeated link: a request whose fingerprint the same page passed on before
  (a tally of one page's links, :class:`PageLinks`, kept by its caller).  The
  scheduler would find its page queued (or settled) and the link's score, from the
  same link context, no higher than the first one's, so nothing would come of it;
* ``admit(request, page)`` is False for a settled or a repeated request; the caller
  says which requests it passed on (``passed``): one dropped after ``admit`` (a page's
  cap on its links) is no repeat;
* ``follow(url, encoding, build, page)`` is ``build(url)`` (the request a page of that
  *encoding* yields for the link, or None if it yields none), or None where the
  request would be settled or a repeat of a URL (fragment aside) the page offered
  before; a URL asked before, with any fragment, is answered without building its
  request: ``FocusSpider.links`` asks it, so a link to a page the crawl is done with
  costs a URL join (one per page and URL) and two lookups, not a request through
  Scrapy's spider middlewares;
* both answer as if the frontier knew nothing until the scheduler binds them to its
  store (``open``) and after it unbinds them (``close``): with another scheduler
  nothing is dropped;
* what is dropped is counted (``count(page)``) as the scheduler counts a duplicate
  (``dupefilter/filtered``, ``focus/frontier/duplicate``) and as ``focus/links/known``
  (settled) or ``focus/links/repeated``; Scrapy's ``request_dropped`` signal is not
  sent for it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scrapy_focus.urls import URL_MEMO

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.statscollectors import StatsCollector

    from scrapy_focus.frontier.admission import CrawlScope
    from scrapy_focus.frontier.dupes import Duplicates
    from scrapy_focus.frontier.seams import FrontierStore

logger = logging.getLogger(__name__)


@dataclass
class PageLinks:
    """One page's links as :class:`KnownLinks` answered them."""

    # (URL without its fragment, encoding) of each link ``follow`` answered
    offered: set[tuple[str, str]] = field(default_factory=set)
    passed: set[bytes] = field(default_factory=set)  # fingerprints passed to the scheduler
    settled: int = 0  # dropped: the frontier is done with their page
    repeated: int = 0  # dropped: the page passed the same request on before


class KnownLinks:
    """The frontier's answer to "would this link be dropped as a duplicate?"."""

    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats
        self._store: FrontierStore | None = None
        self._duplicates: Duplicates | None = None
        self._scope: CrawlScope | None = None
        # (url without its fragment, encoding) -> the fingerprint of its request (the
        # fragment aside, as a page's repeats are: Scrapy's fingerprints and the
        # add-on's ignore it); emptied when full
        self._fingerprints: dict[tuple[str, str], bytes] = {}

    def bind(self, store: FrontierStore, duplicates: Duplicates, scope: CrawlScope) -> None:
        """The scheduler's store and seen set answer from now on, if its seen set is
        the dupefilter (else every request goes to the scheduler)."""
        self._fingerprints.clear()
        if duplicates.dupefilter is None and not duplicates.config.dupefilter_debug:
            self._store, self._duplicates, self._scope = store, duplicates, scope
            logger.info(
                "Links to pages the crawl is done with, and a page's repeats of a link, are "
                "dropped where the spider yields them, counted in dupefilter/filtered, without "
                "Scrapy's request_dropped signal (DUPEFILTER_DEBUG sends every one to the "
                "scheduler)"
            )

    def unbind(self) -> None:
        self._store = self._duplicates = self._scope = None
        self._fingerprints.clear()

    def settled(self, request: Request) -> bool:
        """Whether the scheduler would drop *request* as a duplicate, and nothing else."""
        if self._duplicates is None or request.dont_filter:
            return False
        return self._settled(self._duplicates.fingerprint(request))

    def admit(self, request: Request, page: PageLinks) -> bool:
        """Whether *request*, yielded by *page*, goes on to the scheduler: not settled,
        and not a repeat of one the page passed on (see :meth:`passed`)."""
        if self._duplicates is None or request.dont_filter:
            return True
        fingerprint = self._duplicates.fingerprint(request)
        if fingerprint in page.passed:
            page.repeated += 1
            return False
        if self._settled(fingerprint):
            page.settled += 1
            return False
        return True

    def passed(self, request: Request, page: PageLinks) -> None:
        """*page* passed *request* on to the scheduler: a repeat of it is dropped."""
        if self._duplicates is not None and not request.dont_filter:
            page.passed.add(self._duplicates.fingerprint(request))

    def follow(
        self, url: str, encoding: str, build: Callable[[str], Request | None], page: PageLinks
    ) -> Request | None:
        """``build(url)``, or None where :meth:`admit` would be False of it (known from
        an earlier answer for the same URL without building the request).  *build*
        returns None for a URL the spider does not follow (its own filter, a function
        of the URL): that is not counted, and a repeat of it is built again."""
        duplicates = self._duplicates
        if duplicates is None:
            return build(url)
        bare = (url.partition("#")[0], encoding)  # the same request but for the fragment
        if bare in page.offered:
            page.repeated += 1
            return None
        request = None
        fingerprint = self._fingerprints.get(bare)
        if fingerprint is None:
            request = build(url)
            if request is None or request.dont_filter:
                return request
            fingerprint = duplicates.fingerprint(request)  # the scheduler's, kept with it
            if len(self._fingerprints) >= URL_MEMO:
                self._fingerprints.clear()
            self._fingerprints[bare] = fingerprint
        page.offered.add(bare)
        if self._settled(fingerprint):
            page.settled += 1
            return None
        return request or build(url)

    def count(self, page: PageLinks) -> None:
        """The links *page* dropped, counted as the scheduler counts a duplicate, and
        as known or repeated."""
        dropped = page.settled + page.repeated
        if dropped:
            self.stats.inc_value("dupefilter/filtered", dropped)
            self.stats.inc_value("focus/frontier/duplicate", dropped)
        if page.settled:
            self.stats.inc_value("focus/links/known", page.settled)
        if page.repeated:
            self.stats.inc_value("focus/links/repeated", page.repeated)

    def _settled(self, fingerprint: bytes) -> bool:
        store, scope = self._store, self._scope
        if store is None or scope is None or scope.empty:
            return False
        return store.settled(fingerprint)
