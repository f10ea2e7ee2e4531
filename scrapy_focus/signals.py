"""Signals scrapy-focus components send (``crawler.signals``), as Scrapy's own.

``page_scored(response, relevance)``
    The link-context middleware computed a page's relevance (before the
    spider callback runs).  The scheduler counts relevant pages and trains
    the link model from it.

``page_done(request, output)``
    The spider's output for *request*'s response is exhausted.  *output*
    (a :class:`PageOutput`, or None when the callback raised before yielding)
    counts the requests it yielded that have not reached the scheduler yet:
    Scrapy hands them to the engine later (``Scraper`` buffers a callback's
    output), and the frontier keeps its lease on *request* until the last of
    them is enqueued, so a crawl killed in between reads the page again.
    Items count too, until the item pipelines are done with them (scraped or
    dropped); an item that failed in a pipeline (a full disk) keeps the lease,
    so a resumed crawl reads the page again rather than lose its item.
"""

from __future__ import annotations

from typing import Any

page_scored = object()
page_done = object()

#: The ``Request.meta`` key that ties a yielded request to its page's
#: :class:`PageOutput`; the scheduler removes it on enqueue.
PAGE_OUTPUT_KEY = "_focus_page_output"
#: The ``response.meta`` key of the page's own :class:`PageOutput`, for its items.
PAGE_ITEMS_KEY = "_focus_page_items"


class PageOutput:
    """The requests one response's callback yielded that the scheduler has not
    received yet and its items the pipelines have not finished (``pending``),
    whether the callback has finished, and whether an item failed."""

    __slots__ = ("complete", "failed", "pending", "request")

    def __init__(self, request: Any) -> None:
        self.request = request
        self.pending = 0
        self.complete = False
        self.failed = False

    def yielded(self, child: Any) -> None:
        self.pending += 1
        child.meta[PAGE_OUTPUT_KEY] = self
