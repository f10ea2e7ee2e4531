"""The baselines ``bench_throughput.py`` runs with ``scrapy runspider``: plain Scrapy.

A link-following spider, as users write one: it follows every link of its start
URL's host and yields one item per page.  With ``-a extract=1`` the callback
calls ``trafilatura.extract()`` on the page, on the reactor thread, which is
what users write today without scrapy-focus.

Arguments: ``-a start=URL``, ``-a extract=0|1``.  The benchmark bounds a
crawl with ``CLOSESPIDER_PAGECOUNT`` and collects its stats with an extension.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import scrapy


class LinkSpider(scrapy.Spider):
    name = "links"

    def __init__(self, start: str = "", extract: str = "0", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_url = start
        self.extract = extract == "1"
        self.host = urlsplit(start).netloc

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield scrapy.Request(self.start_url)

    def parse(self, response: scrapy.http.Response) -> Any:
        if not isinstance(response, scrapy.http.TextResponse):
            yield {"url": response.url}
            return
        if self.extract:
            import trafilatura

            yield {"url": response.url, "text": trafilatura.extract(response.text)}
        else:
            yield {"url": response.url, "title": response.css("title::text").get()}
        for href in response.css("a::attr(href)").getall():
            if href.startswith(("mailto:", "javascript:")):
                continue
            url = response.urljoin(href)
            if urlsplit(url).netloc == self.host:
                yield scrapy.Request(url)
