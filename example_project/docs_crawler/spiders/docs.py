"""``scrapy crawl docs [-a start_url=URL]``: every page of one documentation site.

The spider starts at *start_url*, follows links that stay on the same host
(scheme, host and port) and under the start URL's directory, and yields one
:class:`~docs_crawler.items.PageItem` per page.  Run it twice: the second run
is served from the corpus (``cached: true``) without touching the network.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor

from docs_crawler.items import PageItem

DEFAULT_START_URL = "https://docs.python.org/3/"


class DocsSpider(scrapy.Spider):
    name = "docs"

    def __init__(self, start_url: str = DEFAULT_START_URL, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        parts = urlsplit(start_url)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise ValueError(f"start_url={start_url!r} is not an http(s) URL")
        self.start_url = start_url
        self.origin = (parts.scheme, parts.netloc.lower())
        self.prefix = parts.path[: parts.path.rfind("/") + 1] or "/"
        # Also tells Scrapy's offsite middleware, which checks redirect targets.
        self.allowed_domains = [parts.hostname]
        self.links = LinkExtractor()

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield scrapy.Request(self.start_url)

    def parse(self, response: Response) -> Iterator[PageItem | scrapy.Request]:
        title = None
        if isinstance(response, TextResponse):
            title = (response.css("title::text").get() or "").strip() or None
        yield PageItem(
            url=response.url,
            status=response.status,
            title=title,
            cached="cached" in response.flags,
        )
        if isinstance(response, TextResponse):
            for link in self.links.extract_links(response):
                if self.in_scope(link.url):
                    yield response.follow(link.url)

    def in_scope(self, url: str) -> bool:
        """Same scheme, host and port as the start URL, and under its directory."""
        parts = urlsplit(url)
        return (parts.scheme, parts.netloc.lower()) == self.origin and parts.path.startswith(
            self.prefix
        )
