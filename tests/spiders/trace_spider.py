"""A spider that yields, per page, its extracted text and its ladder trace.

Arguments: ``-a urls="URL [URL...]"``.  Every status reaches the callback.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

import scrapy


class TraceSpider(scrapy.Spider):
    name = "trace"
    custom_settings: ClassVar[dict[str, Any]] = {"HTTPERROR_ALLOW_ALL": True}

    def __init__(self, urls: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = urls.split()

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.start_urls:
            yield scrapy.Request(url, dont_filter=True)

    def parse(self, response: scrapy.http.Response) -> Any:
        state = response.meta["focus"]
        extraction = state.extraction
        yield {
            "url": response.request.url,
            "final_url": response.url,
            "status": response.status,
            "markdown": extraction.markdown if extraction is not None else "",
            "trace": state.trace(),
        }
