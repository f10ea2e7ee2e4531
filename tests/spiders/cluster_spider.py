"""The spider of a scrapy-focus cluster node (harness/cluster_nodes.py runs it).

Each node starts from the same seeds (``-a urls="URL [URL...]"``) and follows every
link: in cluster mode the shared frontier decides which node fetches what, and the
seen set drops the seeds a second node yields.  It yields no items: what a node
fetched is counted by the farm's server and in the node's stats.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy


class ClusterSpider(scrapy.Spider):
    name = "cluster"

    def __init__(self, urls: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = urls.split()

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.start_urls:
            yield scrapy.Request(url)

    def parse(self, response: scrapy.http.Response) -> Iterator[scrapy.Request]:
        if isinstance(response, scrapy.http.TextResponse):
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href)
