"""``FocusSpider``: seeds and a topic in, page items out, no spider code to write.

It fetches the seeds (``FOCUS_SEEDS`` or ``-a seeds=URL,URL``), yields one
:class:`~scrapy_focus.items.PageItem` per page and offers every link to the
frontier, which decides what is worth fetching (a link to a page the frontier is
done with it drops itself, counted as a duplicate: :mod:`scrapy_focus.frontier.known`).
Subclass it to change ``parse_page`` or ``links``; or keep your own spiders: the
frontier works with any spider.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any, ClassVar
from urllib.parse import urlsplit

import scrapy
from scrapy.http import Response, TextResponse
from scrapy.linkextractors import IGNORED_EXTENSIONS

from scrapy_focus.frontier.known import KnownLinks, PageLinks
from scrapy_focus.items import PageItem, page_item
from scrapy_focus.runtime import FocusRuntime
from scrapy_focus.urls import link_joins

SKIPPED_SCHEMES = ("mailto:", "javascript:", "tel:", "data:", "#")


class FocusSpider(scrapy.Spider):
    """Fetches its seeds and offers every link of every page to the frontier."""

    name = "focus"
    #: Links to files of these extensions (no dot, lower case) are not followed:
    #: Scrapy's ``LinkExtractor`` default (images, audio, video, office documents,
    #: archives, PDF...), files a crawl that reads HTML pages cannot read.  An empty
    #: set follows every link.
    deny_extensions: ClassVar[frozenset[str]] = frozenset(IGNORED_EXTENSIONS)

    def __init__(
        self, seeds: str | Iterable[str] | None = None, topic: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        if isinstance(seeds, str):
            seeds = [url.strip() for url in seeds.split(",") if url.strip()]
        self.seeds = list(seeds or [])
        if topic:
            self.focus_topic = topic

    async def start(self) -> AsyncIterator[scrapy.Request]:
        seeds = self.seeds or list(FocusRuntime.of(self.crawler).config.frontier.seeds)
        if not seeds:
            self.logger.error("No seeds: set FOCUS_SEEDS or pass --seed URL (-a seeds=URL,...)")
        for url in seeds:
            yield scrapy.Request(url, callback=self.parse, dont_filter=True)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        yield self.parse_page(response)
        yield from self.links(response)

    def parse_page(self, response: Response) -> PageItem:
        return page_item(response)

    def links(self, response: Response) -> Iterator[scrapy.Request]:
        if not isinstance(response, TextResponse):
            return
        try:
            # The tree the response parsed once (the link context reads it too); lxml's
            # own XPath, as ``response.css("a::attr(href)")`` finds them, without a
            # Selector object per link.
            hrefs = response.selector.root.xpath("//a/@href")
        except (ValueError, AttributeError):
            return
        encoding = response.encoding
        joins = link_joins(response)  # response.urljoin's, each URL joined once a page
        known, page = self._known_links(), PageLinks()

        def build(url: str) -> scrapy.Request | None:
            request = scrapy.Request(url, callback=self.parse, encoding=encoding)
            return None if self.denied(request.url) else request

        try:
            for href in hrefs:
                href = href.strip()
                if not href or href.startswith(SKIPPED_SCHEMES):
                    continue
                try:
                    url = joins.join(href)  # as response.follow(href) joins it
                    if known is None:
                        request = build(url)
                    else:  # None too where the frontier is done with its page, or a repeat
                        request = known.follow(url, encoding, build, page)
                except ValueError:
                    continue
                if request is not None:
                    yield request
        finally:
            if known is not None:
                known.count(page)

    def _known_links(self) -> KnownLinks | None:
        crawler = getattr(self, "crawler", None)
        return FocusRuntime.of(crawler).known_links if crawler is not None else None

    def denied(self, url: str) -> bool:
        """Whether *url*'s path ends in one of :attr:`deny_extensions`."""
        return has_extension(url, self.deny_extensions)


def has_extension(url: str, extensions: frozenset[str]) -> bool:
    """Whether *url*'s path ends in one of *extensions* (no dot, lower case; a file
    name's last two count too: ``tar.gz``), as Scrapy's ``LinkExtractor`` reads them.

    The same answers as ``scrapy.utils.url.url_has_any_extension`` with the dotted
    extensions, which tries each of them in turn: it runs for every link of every
    page, where a set lookup per dot of the file name costs several times less."""
    if not extensions:
        return False
    parts = urlsplit(url).path.rpartition("/")[2].lower().split(".")
    return any(".".join(parts[i:]) in extensions for i in range(1, len(parts)))
