"""A plain spider the tests run with ``scrapy runspider`` against the farm.

Arguments: ``-a urls="URL [URL...]"`` start URLs, ``-a follow=1`` follow links.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import scrapy


class FarmSpider(scrapy.Spider):
    name = "farm"

    def __init__(self, urls: str = "", follow: str = "0", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = urls.split()
        self.follow = follow == "1"

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.start_urls:
            yield scrapy.Request(url, dont_filter=True)

    def parse(self, response: scrapy.http.Response) -> Any:
        yield {
            "url": response.url,
            "status": response.status,
            "cached": "cached" in response.flags,
            "size": len(response.body),
        }
        if self.follow and isinstance(response, scrapy.http.TextResponse):
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href)
