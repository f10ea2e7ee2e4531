"""Signals scrapy-focus components send (``crawler.signals``), as Scrapy's own.

``page_scored(response, relevance)``
    The link-context middleware computed a page's relevance (before the
    spider callback runs).  The scheduler counts relevant pages and trains
    the link model from it.

``page_done(request)``
    Everything the spider yielded for *request*'s response has been handed to
    the engine: the frontier can forget its lease on *request*.
"""

page_scored = object()
page_done = object()
