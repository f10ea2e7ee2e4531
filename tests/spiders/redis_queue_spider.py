"""A spider for scrapy-redis's own Scheduler with FocusPriorityQueue: its requests
are already queued in Redis (the test pushes them); each page says which one it was.

Arguments: ``-a urls=...`` and ``-a follow=...`` are accepted (tests/crawl.py passes
them) and ignored: the queue is the crawl's only source.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import scrapy


class RedisQueueSpider(scrapy.Spider):
    name = "rq"

    def __init__(self, urls: str = "", follow: str = "0", **kwargs: Any) -> None:
        super().__init__(**kwargs)

    async def start(self) -> AsyncIterator[scrapy.Request]:
        return
        yield

    def parse_article(self, response: scrapy.http.Response) -> Any:
        state = response.meta.get("focus")
        yield {
            "url": response.url,
            "score": state.link.score if state is not None and state.link else None,
            "tag": response.meta.get("tag"),
        }
