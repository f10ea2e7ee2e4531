"""A spider that yields scrapy-focus page items, for pipeline and extraction tests.

Arguments: ``-a urls="URL [URL...]"``, ``-a follow=1``, ``-a probe=1`` (yield, instead
of page items, where the extraction ran: worker and callback process/thread).
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator
from typing import Any

import scrapy

from scrapy_focus.items import page_item


class PageSpider(scrapy.Spider):
    name = "pages"

    def __init__(self, urls: str = "", follow: str = "0", probe: str = "0", **kwargs: Any):
        super().__init__(**kwargs)
        self.start_urls = urls.split()
        self.follow = follow == "1"
        self.probe = probe == "1"

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.start_urls:
            yield scrapy.Request(url, dont_filter=True)

    def parse(self, response: scrapy.http.Response) -> Any:
        if self.probe:
            extracted = response.meta["focus"].extracted
            yield {
                "url": response.url,
                "worker": extracted.worker,
                "failure": extracted.failure,
                "chars": len(getattr(extracted.extraction, "text", "") or ""),
                "callback": f"{os.getpid()}:{threading.get_ident()}",
            }
        else:
            yield page_item(response)
        if self.follow and isinstance(response, scrapy.http.TextResponse):
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href)
