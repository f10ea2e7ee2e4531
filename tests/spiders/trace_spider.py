"""A spider that yields, per page, its extracted text and its ladder trace.

Arguments: ``-a urls="URL [URL...]"``, ``-a user_methods=1`` (each request carries a
user's PageMethod that reads the page's visible text, ``user_text`` in the item: what
the user's methods see after scrapy-focus's waits).  Every status reaches the callback.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

import scrapy
from scrapy_playwright.page import PageMethod


class TraceSpider(scrapy.Spider):
    name = "trace"
    custom_settings: ClassVar[dict[str, Any]] = {"HTTPERROR_ALLOW_ALL": True}

    def __init__(self, urls: str = "", user_methods: str = "0", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = urls.split()
        self.user_methods = user_methods == "1"

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.start_urls:
            meta = {}
            if self.user_methods:
                methods = [PageMethod("evaluate", "() => document.body.innerText")]
                meta["playwright_page_methods"] = methods
            yield scrapy.Request(url, dont_filter=True, meta=meta)

    def parse(self, response: scrapy.http.Response) -> Any:
        state = response.meta["focus"]
        extraction = state.extraction
        yield {
            "url": response.request.url,
            "final_url": response.url,
            "status": response.status,
            "markdown": extraction.markdown if extraction is not None else "",
            "trace": state.trace(),
            "user_text": methods[0].result
            if (methods := response.meta.get("playwright_page_methods"))
            else None,
        }
