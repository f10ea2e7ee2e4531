"""A user spider that sets Request.priority on one link: the frontier must honour it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import scrapy


class PrioritySpider(scrapy.Spider):
    name = "priority"

    def __init__(self, urls: str = "", follow: str = "0", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = urls.split()

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.start_urls:
            yield scrapy.Request(url, dont_filter=True)

    def parse(self, response: scrapy.http.Response) -> Any:
        if response.meta.get("depth", 0) >= 1:
            return
        for n in range(20, 30):
            yield response.follow(f"/articles/{n}.html")
        yield response.follow("/articles/150.html", priority=100)
