"""The spider ``bench_corpus.py`` runs with ``scrapy runspider`` against the farm's link graph.

A plain link-following spider: it follows every ``/graph/<n>.html`` link with
``n < limit`` (the graph is numbered breadth-first, so nodes ``0 .. limit-1``
are reachable from ``/graph/0.html`` without the others).

Arguments: ``-a start=URL``, ``-a limit=N``, ``-a stats=FILE`` (final stats, JSON).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from datetime import datetime, timezone
from typing import Any

import scrapy

_NODE = re.compile(r"/graph/(\d+)\.html$")


class GraphSpider(scrapy.Spider):
    name = "graph"

    def __init__(self, start: str = "", limit: str = "20000", stats: str = "", **kwargs: Any):
        super().__init__(**kwargs)
        self.start_url = start
        self.limit = int(limit)
        self.stats_file = stats

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield scrapy.Request(self.start_url)

    def parse(self, response: scrapy.http.Response) -> Any:
        for href in response.css("a::attr(href)").getall():
            node = _NODE.search(href)
            if node is not None and int(node.group(1)) < self.limit:
                yield response.follow(href)

    def closed(self, reason: str) -> None:
        if not self.stats_file:
            return
        raw = self.crawler.stats.get_stats()
        stats = {
            key: value if isinstance(value, (int, float, str)) else str(value)
            for key, value in raw.items()
        }
        # Called before CoreStats sets elapsed_time_seconds: measure it here.
        if isinstance(raw.get("start_time"), datetime):
            elapsed = datetime.now(tz=timezone.utc) - raw["start_time"]
            stats["elapsed_time_seconds"] = elapsed.total_seconds()
        stats["finish_reason"] = reason
        with open(self.stats_file, "w") as out:
            json.dump(stats, out)
