"""A spider that drives browser pages itself, as scrapy-playwright users do.

Arguments: ``-a urls=URL[,URL...]`` (fetched in Chromium, the page handed to the
callback with ``playwright_include_page``) and ``-a plain=URL[,URL...]`` (fetched in
Chromium as the ladder fetches a page it sends there, ``meta["focus_engine"]``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import scrapy


class BrowserPageSpider(scrapy.Spider):
    name = "browser_pages"

    def __init__(self, urls: str = "", plain: str = "", **kwargs: Any):
        super().__init__(**kwargs)
        self.driven = [url for url in urls.split(",") if url]
        self.plain = [url for url in plain.split(",") if url]

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.plain:
            yield scrapy.Request(url, meta={"focus_engine": "chromium"}, callback=self.parse_plain)
        for url in self.driven:
            yield scrapy.Request(
                url, meta={"playwright": True, "playwright_include_page": True}, priority=-1
            )

    async def parse(self, response: scrapy.http.Response) -> AsyncIterator[dict[str, Any]]:
        page = response.meta["playwright_page"]
        title = await page.title()
        await page.close()
        yield {"url": response.url, "driven": True, "title": title, "closed": page.is_closed()}

    def parse_plain(self, response: scrapy.http.Response) -> Any:
        yield {"url": response.url, "driven": False, "page": "playwright_page" in response.meta}
