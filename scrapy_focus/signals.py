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

``ordered_dispatch(request)``
    The frontier handed out *request* as a dispatch whose order it keeps (the
    ordered start, or ``FOCUS_REPRODUCIBLE_ORDER``): its evidence goes in at its
    turn, so what a component decides for it that could change what the page
    brings must be decided now, from the evidence in so far, not when its
    response happens to arrive (the extraction's template,
    :mod:`scrapy_focus.extract.templates`).

Which output a yielded request, or a page's item, belongs to is kept by
:class:`PageOutputs` (one per crawl, ``FocusRuntime.of(crawler).page_outputs``),
by object: nothing of it travels in ``request.meta`` or is stored
with a request.
"""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

page_scored = object()
page_done = object()
ordered_dispatch = object()


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


class PageOutputs:
    """The :class:`PageOutput` of each page being handled, and of each request
    it yielded that the scheduler has not received yet.

    ``page(response, output)`` records the output of the page *response*
    (its items are found by ``of_page(response)``, keyed by the response:
    the output holds the page's request);
    ``yielded(output, child)`` counts a request the page yielded, which
    ``take(child)`` hands to the scheduler once (None for any other
    request).  Entries go with their request objects."""

    def __init__(self) -> None:
        self._pages: WeakKeyDictionary[Any, PageOutput] = WeakKeyDictionary()
        self._children: WeakKeyDictionary[Any, PageOutput] = WeakKeyDictionary()

    def page(self, response: Any, output: PageOutput) -> None:
        self._pages[response] = output

    def of_page(self, response: Any) -> PageOutput | None:
        return self._pages.get(response)

    def yielded(self, output: PageOutput, child: Any) -> None:
        output.pending += 1
        self._children[child] = output

    def take(self, child: Any) -> PageOutput | None:
        return self._children.pop(child, None)
